/** The usage lines of each command, kept apart so `tollgate help` loads no command module. */

export const SERVE_USAGE = `tollgate serve [--config FILE] [--host H] [--port N] [--data DIR] [--redis URL] [--workers N] [--admin-port N] [--mock]
With --mock every provider is served by the built-in mock provider, in process: no provider
account, credential or network needed; every answer carries x-tollgate-mock: 1.`;

export const KEYS_USAGE = `tollgate keys create --mode credit --balance USD  [--models ID,ID…] [--rpm N] [--concurrency N] [--expires ISO-8601] [--name TEXT] [--json]
tollgate keys create --mode token  --budget TOKENS [--models ID,ID…] [--rpm N] [--concurrency N] [--expires ISO-8601] [--name TEXT] [--json]
tollgate keys list   [--json]
tollgate keys show    KEY-REF [--json]
tollgate keys suspend KEY-REF
tollgate keys resume  KEY-REF
tollgate keys topup   KEY-REF (--usd AMOUNT | --tokens N)
tollgate keys extend  KEY-REF --expires ISO-8601|never
tollgate keys set     KEY-REF [--models ID,ID…|--all-models] [--rpm N|--no-rpm] [--concurrency N|--no-concurrency] [--name TEXT] [--json]
tollgate keys rotate  KEY-REF [--json]
KEY-REF is a key's id (key_…), its 12-character prefix (gw_live_ + 4) or the full key.
With --admin-url URL (or TOLLGATE_ADMIN_URL) the command goes through that admin API (token: TOLLGATE_ADMIN_TOKEN).`;

export const MODELS_USAGE = `tollgate models list  [--json]
tollgate models enable  MODEL-ID
tollgate models disable MODEL-ID
With --admin-url URL (or TOLLGATE_ADMIN_URL) the command goes through that admin API (token: TOLLGATE_ADMIN_TOKEN).`;

export const AUDIT_USAGE = `tollgate audit [--key KEY-REF] [--json]
Every issuer change (keys, models), oldest first: when, what, which key, by whom.`;

export const STORE_USAGE = `tollgate store migrate --to redis://[user:password@]host:port[/db] [--force]
Copies keys, accounts, holds, usage records, daily totals, model switches, the audit trail and
the owners of stored responses (expiring after what is left of storage.responseRetentionDays)
from the LMDB store (--data DIR) into Redis, then checks counts and balances. Refuses a target
that holds tollgate data already unless --force (which replaces it). Stop \`serve\` first: a
store still being served is refused.`;

export const DEMO_USAGE = `tollgate demo
Runs the gateway end to end, offline, against the built-in mock provider: two fresh keys in a
temporary data directory, a few real calls and what each cost; then stops and removes it all.`;
