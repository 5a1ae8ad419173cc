import { createPlan, expiresField, settingsPlan, topUpPlan } from '../issuer/input.js';
import type { KeyWithAccount } from '../issuer/operations.js';
import { keyJson } from '../issuer/view.js';
import { formatUsd } from '../money.js';
import type { Account, KeyRecord } from '../domain/types.js';
import { keyState } from '../usage/api.js';
import { configFrom, openStore, parse, printable, table, UsageError, type Options, type Parsed } from './common.js';
import { adminUrlFrom, localIssuer, remoteIssuer, type IssuerClient } from './issuer-client.js';
import { debtOf, debtPaidBy } from '../usage/debt.js';
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
  'admin-url': { type: 'string' },
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
  set: ['models', 'all-models', 'rpm', 'no-rpm', 'concurrency', 'no-concurrency', 'name', 'json'],
  rotate: ['json'],
};
const TAKES_REF = new Set(['show', 'suspend', 'resume', 'topup', 'extend', 'set', 'rotate']);

/** A balance or budget, with any debt said plainly: `-$0.004000 (owes $0.004000)`, `0/10 tokens (4990 over budget)`. */
function money(account: Account | undefined): string {
  if (!account) return '-';
  const debt = debtOf(account);
  if (account.mode === 'credit') {
    return debt === 0 ? `$${formatUsd(account.balanceNano)}` : `-$${formatUsd(debt)} (owes $${formatUsd(debt)})`;
  }
  const left = `${Math.max(0, account.budgetTokens - account.usedTokens)}/${account.budgetTokens} tokens`;
  return debt === 0 ? left : `${left} (${debt} over budget)`;
}

/** How much of a top-up went to the key's debt, when any did. */
function debtNote(after: Account, amount: number): string {
  const paid = debtPaidBy(after, amount);
  if (paid === 0) return '';
  const unit = (n: number): string => (after.mode === 'credit' ? `$${formatUsd(n)}` : `${n} tokens`);
  const still = debtOf(after);
  if (still > 0) return `; all of the top-up went to the key's debt, which is still ${unit(still)}`;
  return paid === amount ? "; all of the top-up paid the key's debt" : `; ${unit(paid)} of the top-up paid the key's debt`;
}

function heldText(account: Account): string {
  return account.mode === 'credit' ? `$${formatUsd(account.held)}` : `${account.held} tokens`;
}

function describe(key: KeyRecord, account: Account | undefined): string {
  const rows: [string, string][] = [
    ['id', key.id],
    ['prefix', key.prefix],
    ['name', key.name === null ? '-' : printable(key.name)],
    ['mode', key.mode],
    ['status', statusText(key, account)],
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

/** "suspended", "active", or "active (expired)": the state only when it says more than the status. */
function statusText(key: KeyRecord, account: Account | undefined): string {
  const state = keyState(key, account, Date.now());
  return state === key.status || (state === 'ok' && key.status === 'active') ? key.status : `${key.status} (${state})`;
}

/**
 * The balance column of `keys list`: keys made by rotation draw on one account, so its balance
 * is shown once, on the oldest of them, and the others point at it.
 */
function balanceCells(keys: KeyWithAccount[]): string[] {
  const byAccount = new Map<string, KeyRecord[]>();
  for (const { key } of keys) byAccount.set(key.account, [...(byAccount.get(key.account) ?? []), key]);
  return keys.map(({ key, account }) => {
    const sharing = byAccount.get(key.account)!;
    if (sharing.length === 1) return money(account);
    return sharing[0] === key ? `${money(account)} (shared by ${sharing.length} keys)` : `shared with ${sharing[0]!.id}`;
  });
}

function printSecret(key: KeyRecord, secret: string, account: Account | undefined, json: boolean, verb: string): void {
  if (json) {
    process.stdout.write(`${JSON.stringify({ ...keyJson(key, account), key: secret })}\n`);
    return;
  }
  process.stdout.write(`${verb} ${key.mode} key ${key.id} (${key.prefix})\n\n  ${secret}\n\nThis is the only time the full key is shown; it is stored only as a hash.\n${describe(key, account)}\n`);
}

export async function keysCommand(sub: string | undefined, args: string[]): Promise<void> {
  if (sub === 'help') {
    process.stdout.write(`${KEYS_USAGE}\n`);
    return;
  }
  if (sub === undefined || !(sub in ALLOWED)) throw new UsageError(sub === undefined ? 'keys needs a subcommand (create, list, show, suspend, resume, topup, extend, set, rotate; try: tollgate keys help)' : `unknown keys subcommand '${sub}' (try: tollgate keys help)`);
  const parsed: Parsed = parse(args, KEY_OPTIONS, TAKES_REF.has(sub) ? 1 : 0);
  const v = parsed.values;
  for (const flag of Object.keys(v)) {
    if (flag in KEY_OPTIONS && flag !== 'admin-url' && !ALLOWED[sub]!.includes(flag)) throw new UsageError(`keys ${sub} does not take --${flag}`);
  }
  const ref = parsed.positionals[0];
  if (TAKES_REF.has(sub) && ref === undefined) throw new UsageError(`keys ${sub} needs a KEY-REF (key id, 12-character prefix or the full key)`);

  const adminUrl = adminUrlFrom(v);
  // Remotely the server checks model ids against its own catalogue.
  const config = adminUrl === undefined ? configFrom(v) : null;
  const json = v.json === true;
  // Validate everything before touching the store (or the admin API).
  let plan: (issuer: IssuerClient) => Promise<void>;
  switch (sub) {
    case 'create': {
      const create = createPlan({ mode: v.mode, balance: v.balance, budget: v.budget, models: v.models, rpm: v.rpm, concurrency: v.concurrency, expires: v.expires, name: v.name }, config);
      plan = async (issuer) => {
        const made = await issuer.createKey(create);
        warnIfPast(create.expiresAt);
        await warnDisabled(issuer, create.models);
        printSecret(made.key, made.secret, made.account, json, 'Created');
      };
      break;
    }
    case 'list':
      plan = async (issuer) => {
        const keys = await issuer.listKeys();
        if (json) {
          process.stdout.write(`${JSON.stringify(keys.map((k) => keyJson(k.key, k.account)))}\n`);
          return;
        }
        if (keys.length === 0) {
          process.stdout.write('No keys yet. Create one with: tollgate keys create --mode credit --balance 5\n');
          return;
        }
        const now = Date.now();
        const balances = balanceCells(keys);
        process.stdout.write(`${table(
          ['ID', 'PREFIX', 'MODE', 'STATE', 'BALANCE/BUDGET', 'RPM', 'EXPIRES', 'MODELS', 'NAME'],
          keys.map(({ key: k, account: a }, i) => [k.id, k.prefix, k.mode, keyState(k, a, now), balances[i]!, k.rpm === null ? '-' : String(k.rpm),
            k.expiresAt === null ? 'never' : new Date(k.expiresAt).toISOString(), k.models === null ? 'all' : k.models.join(','), k.name ?? '']),
        )}\n`);
      };
      break;
    case 'show':
      plan = async (issuer) => {
        const { key, account } = await issuer.showKey(ref!);
        process.stdout.write(json ? `${JSON.stringify(keyJson(key, account))}\n` : `${describe(key, account)}\n`);
      };
      break;
    case 'suspend':
    case 'resume': {
      const status = sub === 'suspend' ? 'suspended' : 'active';
      plan = async (issuer) => {
        const { key } = await issuer.setStatus(ref!, status);
        process.stdout.write(`${key.id} (${key.prefix}) is now ${status}\n`);
      };
      break;
    }
    case 'topup': {
      const topUp = topUpPlan({ usd: v.usd, tokens: v.tokens });
      plan = async (issuer) => {
        const { key, account } = await issuer.topUp(ref!, topUp);
        process.stdout.write(`${key.id} (${key.prefix}) now has ${money(account)}${account === undefined ? '' : debtNote(account, (topUp.usdNano ?? topUp.tokens)!)}\n`);
      };
      break;
    }
    case 'extend': {
      if (typeof v.expires !== 'string') throw new UsageError('keys extend needs --expires ISO-8601 or --expires never');
      const expiresAt = expiresField(v.expires, true);
      plan = async (issuer) => {
        const { key } = await issuer.extend(ref!, expiresAt);
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
      const settings = settingsPlan({
        models: v['all-models'] ? null : v.models,
        rpm: v['no-rpm'] ? null : v.rpm,
        concurrency: v['no-concurrency'] ? null : v.concurrency,
        name: v.name,
      }, config);
      plan = async (issuer) => {
        const { key, account } = await issuer.updateSettings(ref!, settings);
        await warnDisabled(issuer, settings.models ?? null);
        process.stdout.write(json ? `${JSON.stringify(keyJson(key, account))}\n` : `${describe(key, account)}\n`);
      };
      break;
    }
    case 'rotate':
      plan = async (issuer) => {
        const { key, account, secret, old } = await issuer.rotate(ref!);
        printSecret(key, secret, account, json, 'Rotated: new');
        if (!json) process.stdout.write(`\nThe old key ${old.id} (${old.prefix}) stays active until you suspend it: tollgate keys suspend ${old.id}\n`);
      };
      break;
    default:
      throw new UsageError(`unknown keys subcommand '${sub}'`);
  }
  const issuer = adminUrl !== undefined ? remoteIssuer(adminUrl) : localIssuer(await openStore(v, config!, sub === 'create'), config!);
  try {
    await plan(issuer);
  } finally {
    await issuer.close();
  }
}

/** An allowlist naming a switched-off model: the key cannot call it until it is switched on. */
async function warnDisabled(issuer: IssuerClient, models: string[] | null): Promise<void> {
  for (const id of await issuer.disabledModels(models)) {
    process.stderr.write(`warning: model ${id} is switched off; this key cannot call it until: tollgate models enable ${id}\n`);
  }
}

/** Said on the command line only: the admin API takes a past expiry as it comes. */
function warnIfPast(expiresAt: number | null): void {
  if (expiresAt !== null && expiresAt < Date.now()) {
    process.stderr.write(`warning: the expiry ${new Date(expiresAt).toISOString()} is in the past; the key is expired\n`);
  }
}
