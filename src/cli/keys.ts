import { displayPrefix, generateKey, hashKey } from '../auth/keys.js';
import type { Config } from '../config/types.js';
import { formatUsd, parseUsd } from '../money.js';
import type { Store } from '../store/lmdb.js';
import type { Account, KeyMode, KeyRecord } from '../store/types.js';
import { keyState } from '../usage/api.js';
import { configFrom, openStore, parse, table, UsageError, wholeNumber, type Options, type Parsed } from './common.js';
import { parseExpiry, warnIfPast } from './expiry.js';
import { KEYS_USAGE } from './usage-text.js';

const KEY_OPTIONS: Options = {
  mode: { type: 'string' },
  balance: { type: 'string' },
  budget: { type: 'string' },
  models: { type: 'string' },
  'all-models': { type: 'boolean' },
  rpm: { type: 'string' },
  'no-rpm': { type: 'boolean' },
  concurrency: { type: 'string' },
  'no-concurrency': { type: 'boolean' },
  expires: { type: 'string' },
  name: { type: 'string' },
  json: { type: 'boolean' },
  usd: { type: 'string' },
  tokens: { type: 'string' },
};

/** Which flags each subcommand accepts; anything else is bad usage. */
const ALLOWED: Record<string, string[]> = {
  create: ['mode', 'balance', 'budget', 'models', 'rpm', 'concurrency', 'expires', 'name', 'json'],
  list: ['json'],
  show: ['json'],
  suspend: [],
  resume: [],
  topup: ['usd', 'tokens'],
  extend: ['expires'],
  set: ['models', 'all-models', 'rpm', 'no-rpm', 'concurrency', 'no-concurrency', 'name'],
  rotate: ['json'],
};
const TAKES_REF = new Set(['show', 'suspend', 'resume', 'topup', 'extend', 'set', 'rotate']);


/** A key's id, or its display prefix when that names exactly one key. */
export function resolveKeyRef(store: Store, ref: string): KeyRecord {
  if (ref.startsWith('key_')) {
    const key = store.keyById(ref);
    if (!key) throw new UsageError(`no key with id ${ref}`);
    return key;
  }
  if (/^gw_live_[0-9a-f]{4}$/.test(ref)) {
    const matches = store.allKeys().filter((k) => k.prefix === ref);
    if (matches.length === 1) return matches[0]!;
    if (matches.length === 0) throw new UsageError(`no key with prefix ${ref}`);
    throw new UsageError(`prefix ${ref} matches ${matches.length} keys (${matches.map((k) => k.id).join(', ')}); use the id`);
  }
  throw new UsageError(`KEY-REF must be a key id (key_…) or a 12-character prefix (gw_live_xxxx), got '${ref.slice(0, 12)}${ref.length > 12 ? '…' : ''}'`);
}

function modelList(text: string | boolean | undefined, config: Config): string[] {
  if (typeof text !== 'string') throw new UsageError('--models needs a comma-separated list of model ids');
  const ids = text.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
  if (ids.length === 0) throw new UsageError('--models needs at least one model id');
  for (const id of ids) if (!config.models.has(id)) throw new UsageError(`unknown model '${id}' (see: tollgate models list)`);
  return [...new Set(ids)];
}

function rpm(text: string | boolean | undefined): number {
  return wholeNumber(text, '--rpm', 1, 1_000_000);
}

function concurrency(text: string | boolean | undefined): number {
  return wholeNumber(text, '--concurrency', 1, 1_000_000);
}

function money(account: Account | undefined): string {
  if (!account) return '-';
  return account.mode === 'credit'
    ? `$${formatUsd(account.balanceNano)}`
    : `${Math.max(0, account.budgetTokens - account.usedTokens)}/${account.budgetTokens} tokens`;
}

function heldText(account: Account): string {
  return account.mode === 'credit' ? `$${formatUsd(account.held)}` : `${account.held} tokens`;
}

/** The JSON shape printed by `--json` (never the secret, except at creation and rotation). */
export function keyJson(key: KeyRecord, account: Account | undefined, now = Date.now()): Record<string, unknown> {
  const out: Record<string, unknown> = {
    id: key.id,
    prefix: key.prefix,
    name: key.name,
    mode: key.mode,
    status: key.status,
    state: keyState(key, account, now),
    models: key.models,
    rpm: key.rpm,
    concurrency: key.concurrency,
    expiresAt: key.expiresAt === null ? null : new Date(key.expiresAt).toISOString(),
    createdAt: new Date(key.createdAt).toISOString(),
    rotatedFrom: key.rotatedFrom,
    account: key.account,
  };
  if (key.mode === 'credit') Object.assign(out, { balanceUsd: formatUsd(account?.balanceNano ?? 0), heldUsd: formatUsd(account?.held ?? 0) });
  else Object.assign(out, { budgetTokens: account?.budgetTokens ?? 0, usedTokens: account?.usedTokens ?? 0, remainingTokens: Math.max(0, (account?.budgetTokens ?? 0) - (account?.usedTokens ?? 0)), heldTokens: account?.held ?? 0 });
  return out;
}

function describe(key: KeyRecord, account: Account | undefined): string {
  const rows: [string, string][] = [
    ['id', key.id],
    ['prefix', key.prefix],
    ['name', key.name ?? '-'],
    ['mode', key.mode],
    ['status', `${key.status} (${keyState(key, account, Date.now())})`],
    [key.mode === 'credit' ? 'balance' : 'budget', money(account)],
    ...(account !== undefined && account.held !== 0 ? [['held', `${heldText(account)} by calls in progress`] as [string, string]] : []),
    ['models', key.models === null ? 'all enabled models' : key.models.join(', ')],
    ['rpm', key.rpm === null ? 'no limit' : String(key.rpm)],
    ['concurrency', key.concurrency === null ? 'no limit' : `${key.concurrency} calls at once`],
    ['expires', key.expiresAt === null ? 'never' : new Date(key.expiresAt).toISOString()],
    ['created', new Date(key.createdAt).toISOString()],
  ];
  if (key.rotatedFrom) rows.push(['rotated from', key.rotatedFrom]);
  return rows.map(([k, v]) => `  ${k.padEnd(13)}${v}`).join('\n');
}

function printSecret(key: KeyRecord, secret: string, account: Account | undefined, json: boolean, verb: string): void {
  if (json) {
    process.stdout.write(`${JSON.stringify({ ...keyJson(key, account), key: secret })}\n`);
    return;
  }
  process.stdout.write(`${verb} ${key.mode} key ${key.id} (${key.prefix})\n\n  ${secret}\n\nThis is the only time the full key is shown; it is stored only as a hash.\n${describe(key, account)}\n`);
}

export async function keysCommand(sub: string | undefined, args: string[]): Promise<void> {
  if (sub === undefined || !(sub in ALLOWED)) throw new UsageError(sub === undefined ? 'keys needs a subcommand (create, list, show, suspend, resume, topup, extend, set, rotate)' : `unknown keys subcommand '${sub}'`);
  const parsed: Parsed = parse(args, KEY_OPTIONS, TAKES_REF.has(sub) ? 1 : 0);
  const v = parsed.values;
  if (v.help) {
    process.stdout.write(`${KEYS_USAGE}\n`);
    return;
  }
  for (const flag of Object.keys(v)) {
    if (flag in KEY_OPTIONS && !ALLOWED[sub]!.includes(flag)) throw new UsageError(`keys ${sub} does not take --${flag}`);
  }
  const ref = parsed.positionals[0];
  if (TAKES_REF.has(sub) && ref === undefined) throw new UsageError(`keys ${sub} needs a KEY-REF (key id or 12-character prefix)`);

  const config = configFrom(v);
  // Validate everything before touching the store.
  let plan: (store: Store) => Promise<void>;
  switch (sub) {
    case 'create': {
      const mode = v.mode;
      if (mode !== 'credit' && mode !== 'token') throw new UsageError('keys create needs --mode credit or --mode token');
      let amount: number;
      if (mode === 'credit') {
        if (v.budget !== undefined) throw new UsageError('--budget is for token keys; credit keys take --balance USD');
        if (typeof v.balance !== 'string') throw new UsageError('a credit key needs --balance USD');
        const nano = parseUsd(v.balance);
        if (nano === undefined) throw new UsageError(`--balance must be an amount in USD like 5 or 12.50, got '${v.balance}'`);
        amount = nano;
      } else {
        if (v.balance !== undefined) throw new UsageError('--balance is for credit keys; token keys take --budget TOKENS');
        amount = wholeNumber(v.budget, '--budget', 0);
      }
      const models = v.models === undefined ? null : modelList(v.models, config);
      const limit = v.rpm === undefined ? null : rpm(v.rpm);
      const inFlight = v.concurrency === undefined ? null : concurrency(v.concurrency);
      const expiresAt = v.expires === undefined ? null : parseExpiry(v.expires as string);
      const name = typeof v.name === 'string' ? v.name : null;
      plan = async (store) => {
        const secret = generateKey();
        const key = await store.createKey({ hash: hashKey(secret), prefix: displayPrefix(secret), name, mode: mode as KeyMode, models, rpm: limit, concurrency: inFlight, expiresAt, amount });
        warnIfPast(expiresAt);
        printSecret(key, secret, store.account(key.account), v.json === true, 'Created');
      };
      break;
    }
    case 'list':
      plan = async (store) => {
        const keys = store.allKeys();
        if (v.json) {
          process.stdout.write(`${JSON.stringify(keys.map((k) => keyJson(k, store.account(k.account))))}\n`);
          return;
        }
        if (keys.length === 0) {
          process.stdout.write('No keys yet. Create one with: tollgate keys create --mode credit --balance 5\n');
          return;
        }
        const now = Date.now();
        process.stdout.write(`${table(
          ['ID', 'PREFIX', 'MODE', 'STATE', 'BALANCE/BUDGET', 'RPM', 'EXPIRES', 'MODELS', 'NAME'],
          keys.map((k) => {
            const a = store.account(k.account);
            return [k.id, k.prefix, k.mode, keyState(k, a, now), money(a), k.rpm === null ? '-' : String(k.rpm),
              k.expiresAt === null ? 'never' : new Date(k.expiresAt).toISOString(), k.models === null ? 'all' : k.models.join(','), k.name ?? ''];
          }),
        )}\n`);
      };
      break;
    case 'show':
      plan = async (store) => {
        const key = resolveKeyRef(store, ref!);
        const account = store.account(key.account);
        process.stdout.write(v.json ? `${JSON.stringify(keyJson(key, account))}\n` : `${describe(key, account)}\n`);
      };
      break;
    case 'suspend':
    case 'resume': {
      const status = sub === 'suspend' ? 'suspended' : 'active';
      plan = async (store) => {
        const key = resolveKeyRef(store, ref!);
        await store.updateKey(key.id, (k) => ({ ...k, status }));
        process.stdout.write(`${key.id} (${key.prefix}) is now ${status}\n`);
      };
      break;
    }
    case 'topup': {
      if ((v.usd === undefined) === (v.tokens === undefined)) throw new UsageError('keys topup needs exactly one of --usd AMOUNT or --tokens N');
      const usd = v.usd === undefined ? undefined : parseUsd(v.usd as string);
      if (v.usd !== undefined && (usd === undefined || usd === 0)) throw new UsageError(`--usd must be a positive amount in USD like 5 or 12.50, got '${v.usd}'`);
      const tokens = v.tokens === undefined ? undefined : wholeNumber(v.tokens, '--tokens', 1);
      plan = async (store) => {
        const key = resolveKeyRef(store, ref!);
        if (key.mode === 'credit' && usd === undefined) throw new UsageError(`${key.id} is a credit key: top it up with --usd`);
        if (key.mode === 'token' && tokens === undefined) throw new UsageError(`${key.id} is a token key: top it up with --tokens`);
        const account = await store.topUp(key.account, (usd ?? tokens)!);
        process.stdout.write(`${key.id} (${key.prefix}) now has ${money(account)}\n`);
      };
      break;
    }
    case 'extend': {
      if (typeof v.expires !== 'string') throw new UsageError('keys extend needs --expires ISO-8601 or --expires never');
      const expiresAt = v.expires === 'never' ? null : parseExpiry(v.expires);
      plan = async (store) => {
        const key = resolveKeyRef(store, ref!);
        await store.updateKey(key.id, (k) => ({ ...k, expiresAt }));
        warnIfPast(expiresAt);
        process.stdout.write(`${key.id} (${key.prefix}) expires ${expiresAt === null ? 'never' : new Date(expiresAt).toISOString()}\n`);
      };
      break;
    }
    case 'set': {
      if (v.models !== undefined && v['all-models']) throw new UsageError('use either --models or --all-models, not both');
      if (v.rpm !== undefined && v['no-rpm']) throw new UsageError('use either --rpm or --no-rpm, not both');
      if (v.concurrency !== undefined && v['no-concurrency']) throw new UsageError('use either --concurrency or --no-concurrency, not both');
      if (v.models === undefined && !v['all-models'] && v.rpm === undefined && !v['no-rpm'] && v.concurrency === undefined && !v['no-concurrency'] && v.name === undefined) {
        throw new UsageError('keys set needs at least one of --models, --all-models, --rpm, --no-rpm, --concurrency, --no-concurrency, --name');
      }
      const models = v.models !== undefined ? modelList(v.models, config) : undefined;
      const limit = v.rpm !== undefined ? rpm(v.rpm) : undefined;
      const inFlight = v.concurrency !== undefined ? concurrency(v.concurrency) : undefined;
      plan = async (store) => {
        const key = resolveKeyRef(store, ref!);
        const next = await store.updateKey(key.id, (k) => ({
          ...k,
          models: v['all-models'] ? null : models ?? k.models,
          rpm: v['no-rpm'] ? null : limit ?? k.rpm,
          concurrency: v['no-concurrency'] ? null : inFlight ?? k.concurrency,
          name: typeof v.name === 'string' ? v.name : k.name,
        }));
        process.stdout.write(`${describe(next!, store.account(key.account))}\n`);
      };
      break;
    }
    case 'rotate':
      plan = async (store) => {
        const key = resolveKeyRef(store, ref!);
        const secret = generateKey();
        const next = await store.rotateKey(key.id, hashKey(secret), displayPrefix(secret));
        printSecret(next!, secret, store.account(next!.account), v.json === true, 'Rotated: new');
        if (!v.json) process.stdout.write(`\nThe old key ${key.id} (${key.prefix}) stays active until you suspend it: tollgate keys suspend ${key.id}\n`);
      };
      break;
    default:
      throw new UsageError(`unknown keys subcommand '${sub}'`);
  }
  const store = openStore(v, config);
  try {
    await plan(store);
  } finally {
    await store.close();
  }
}
