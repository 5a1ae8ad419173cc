import { hostname } from 'node:os';
import { displayPrefix, generateKey, hashKey, isWellFormedKey } from '../auth/keys.js';
import type { Config } from '../config/types.js';
import { hasCredential } from '../config/load.js';
import { formatUsd, formatUsdExact } from '../money.js';
import type { IssuerStore } from '../domain/interfaces.js';
import { MAX_ACCOUNT_AMOUNT } from '../domain/rules.js';
import type { Account, AuditEntry, KeyRecord, KeyStatus } from '../domain/types.js';
import { IssuerError } from './errors.js';
import type { CreatePlan, SettingsPlan, TopUpPlan } from './input.js';

/**
 * Every issuer change, once, for both front ends: the local command line and the admin API
 * (which the remote command line calls). Each change is written with its audit entry in one
 * transaction (Store.audited).
 */

/** Who makes a change: `cli@HOSTNAME` locally, `admin-api` with the caller's address remotely. */
export interface Actor { actor: string; address: string | null }

export function localActor(): Actor {
  return { actor: `cli@${hostname()}`, address: null };
}

export interface KeyWithAccount { key: KeyRecord; account: Account | undefined }
export interface NewSecret extends KeyWithAccount { secret: string }

/**
 * An audit entry. A USD amount in its detail is given twice, as keys show a balance: in six
 * decimals to read (`usd`, `balanceUsd`) and exactly in nano-dollars (`nanoUsd`, `balanceNanoUsd`).
 */
function entry(actor: Actor, action: string, keyId: string | null, detail: Record<string, unknown>): AuditEntry {
  return { at: Date.now(), action, keyId, actor: actor.actor, address: actor.address, detail };
}

/**
 * A KEY-REF: the key's id, its 12-character display prefix when that names exactly one key,
 * or the full key itself (looked up by its hash, never echoed back).
 */
export async function resolveKeyRef(store: IssuerStore, ref: string): Promise<KeyRecord> {
  if (ref.startsWith('key_')) {
    const key = await store.keyById(ref);
    if (!key) throw new IssuerError('key_not_found', 'ref', () => `no key with id ${ref}`, 404);
    return key;
  }
  if (/^gw_live_[0-9a-f]{4}$/.test(ref)) {
    const matches = (await store.allKeys()).filter((k) => k.prefix === ref);
    if (matches.length === 1) return matches[0]!;
    if (matches.length === 0) throw new IssuerError('key_not_found', 'ref', () => `no key with prefix ${ref}`, 404);
    throw new IssuerError('ambiguous_key_ref', 'ref', () => `prefix ${ref} matches ${matches.length} keys (${matches.map((k) => k.id).join(', ')}); use the id`);
  }
  if (isWellFormedKey(ref)) {
    const key = await store.keyByHash(hashKey(ref));
    if (!key) throw new IssuerError('key_not_found', 'ref', () => `no key matches the full key given (${ref.slice(0, 12)}…)`, 404);
    return key;
  }
  throw new IssuerError('invalid_key_ref', 'ref', () => `KEY-REF must be a key id (key_…), a 12-character prefix (gw_live_xxxx) or a full key, got '${ref.slice(0, 12)}${ref.length > 12 ? '…' : ''}'`);
}

async function withAccount(store: IssuerStore, key: KeyRecord): Promise<KeyWithAccount> {
  return { key, account: await store.account(key.account) };
}

export async function createKey(store: IssuerStore, plan: CreatePlan, actor: Actor): Promise<NewSecret> {
  const secret = generateKey();
  const key = await store.audited(
    (k: KeyRecord) => entry(actor, 'key.create', k.id, { mode: plan.mode, ...(plan.mode === 'credit' ? { balanceUsd: formatUsd(plan.amount), balanceNanoUsd: plan.amount } : { budgetTokens: plan.amount }), models: plan.models, rpm: plan.rpm, concurrency: plan.concurrency, expiresAt: iso(plan.expiresAt), name: plan.name }),
    () => store.createKey({ hash: hashKey(secret), prefix: displayPrefix(secret), name: plan.name, mode: plan.mode, models: plan.models, rpm: plan.rpm, concurrency: plan.concurrency, expiresAt: plan.expiresAt, amount: plan.amount }),
  );
  return { ...(await withAccount(store, key)), secret };
}

export async function listKeys(store: IssuerStore): Promise<KeyWithAccount[]> {
  return Promise.all((await store.allKeys()).map((k) => withAccount(store, k)));
}

export async function showKey(store: IssuerStore, ref: string): Promise<KeyWithAccount> {
  return withAccount(store, await resolveKeyRef(store, ref));
}

export async function setStatus(store: IssuerStore, ref: string, status: KeyStatus, actor: Actor): Promise<KeyWithAccount> {
  const key = await resolveKeyRef(store, ref);
  const next = await store.audited(() => entry(actor, status === 'suspended' ? 'key.suspend' : 'key.resume', key.id, {}), () => store.updateKey(key.id, (k) => ({ ...k, status })));
  return withAccount(store, next ?? key);
}

export async function topUp(store: IssuerStore, ref: string, plan: TopUpPlan, actor: Actor): Promise<KeyWithAccount> {
  const key = await resolveKeyRef(store, ref);
  if (key.mode === 'credit' && plan.usdNano === null) throw new IssuerError('wrong_key_mode', 'tokens', (n) => `${key.id} is a credit key: top it up with ${n('usd')}, not ${n('tokens')}`);
  if (key.mode === 'token' && plan.tokens === null) throw new IssuerError('wrong_key_mode', 'usd', (n) => `${key.id} is a token key: top it up with ${n('tokens')}, not ${n('usd')}`);
  const amount = (plan.usdNano ?? plan.tokens)!;
  const done = await store.audited(() => entry(actor, 'key.topup', key.id, key.mode === 'credit' ? { usd: formatUsd(amount), nanoUsd: amount } : { tokens: amount }), () => store.topUp(key.account, amount));
  if (done !== undefined && !done.added) throw overTheMost(key, amount, done.account);
  return withAccount(store, key);
}

/**
 * A top-up the store refused because the sum would pass MAX_ACCOUNT_AMOUNT: the most a key can
 * hold, and how much can still be added to this one.
 */
function overTheMost(key: KeyRecord, amount: number, account: Account): IssuerError {
  const credit = key.mode === 'credit';
  const room = Math.max(0, MAX_ACCOUNT_AMOUNT - (credit ? account.balanceNano : account.budgetTokens));
  const field = credit ? 'usd' : 'tokens';
  const text = (n: number): string => (credit ? `${formatUsdExact(n)} USD` : `${n} tokens`);
  return new IssuerError('invalid_field', field, (n) => `${n(field)}: adding ${text(amount)} would take the ${credit ? 'balance' : 'budget'} of ${key.id} past ${text(MAX_ACCOUNT_AMOUNT)}, the most a key can hold; ${room === 0 ? 'nothing more can be added' : `at most ${text(room)} can be added`}`);
}

export async function extend(store: IssuerStore, ref: string, expiresAt: number | null, actor: Actor): Promise<KeyWithAccount> {
  const key = await resolveKeyRef(store, ref);
  const next = await store.audited(() => entry(actor, 'key.extend', key.id, { expiresAt: iso(expiresAt) }), () => store.updateKey(key.id, (k) => ({ ...k, expiresAt })));
  return withAccount(store, next ?? key);
}

export async function updateSettings(store: IssuerStore, ref: string, plan: SettingsPlan, actor: Actor): Promise<KeyWithAccount> {
  const key = await resolveKeyRef(store, ref);
  const next = await store.audited(() => entry(actor, 'key.set', key.id, { ...plan }), () => store.updateKey(key.id, (k) => ({
    ...k,
    models: plan.models !== undefined ? plan.models : k.models,
    rpm: plan.rpm !== undefined ? plan.rpm : k.rpm,
    concurrency: plan.concurrency !== undefined ? plan.concurrency : k.concurrency,
    name: plan.name !== undefined ? plan.name : k.name,
  })));
  return withAccount(store, next ?? key);
}

export async function rotate(store: IssuerStore, ref: string, actor: Actor): Promise<NewSecret & { old: KeyRecord }> {
  const old = await resolveKeyRef(store, ref);
  // A secret whose key can draw on the old key's account (on Redis: one Cluster slot for both).
  let secret = generateKey();
  while (!store.fitsAccount(old.account, hashKey(secret))) secret = generateKey();
  const key = await store.audited(
    (k: KeyRecord | undefined) => entry(actor, 'key.rotate', k?.id ?? old.id, { rotatedFrom: old.id }),
    () => store.rotateKey(old.id, hashKey(secret), displayPrefix(secret)),
  );
  return { ...(await withAccount(store, key!)), secret, old };
}

/** The catalogue as `models list` shows it; `usable` is false when the provider's credential variable is unset. */
export interface ModelView {
  id: string;
  aliases: readonly string[];
  provider: string;
  endpoints: string[];
  enabled: boolean;
  usable: boolean;
  price: Config['models'] extends ReadonlyMap<string, infer M> ? M extends { rawPrice: infer P } ? P : never : never;
  contextWindow: number | null;
  capabilities: string[];
  /** The variables its provider's credentials are read from when the server starts, comma-separated (names, never values). */
  credentialEnv: string;
}

export async function listModels(store: IssuerStore, config: Config, env: NodeJS.ProcessEnv): Promise<ModelView[]> {
  return Promise.all([...config.models.values()].map(async (m) => ({
    id: m.id,
    aliases: m.aliases,
    provider: m.provider.name,
    endpoints: [...m.endpoints],
    enabled: (await store.modelSwitch(m.id)) ?? m.enabledByDefault,
    usable: hasCredential(m.provider, env),
    price: m.rawPrice,
    contextWindow: m.contextWindow,
    capabilities: m.capabilities,
    credentialEnv: m.provider.credentials.map((c) => c.apiKeyEnv).join(', '),
  })));
}

/**
 * Switches a catalogue entry on or off; an alias names its entry (the switch covers the entry and
 * every alias of it). Returns the entry's id.
 */
export async function setModel(store: IssuerStore, config: Config, id: string, enabled: boolean, actor: Actor): Promise<string> {
  const model = config.modelsByName.get(id);
  if (model === undefined) throw new IssuerError('unknown_model', 'id', () => `unknown model '${id}' (see: tollgate models list)`, 404);
  await store.audited(() => entry(actor, enabled ? 'model.enable' : 'model.disable', null, { model: model.id }), () => store.setModelSwitch(model.id, enabled));
  return model.id;
}

/** Model ids in an allowlist that are switched off (a key allowed only those can call nothing). */
export async function disabledModels(store: IssuerStore, config: Config, models: string[] | null): Promise<string[]> {
  if (models === null) return [];
  const off: string[] = [];
  for (const id of models) {
    const m = config.models.get(id);
    if (m !== undefined && !((await store.modelSwitch(id)) ?? m.enabledByDefault)) off.push(id);
  }
  return off;
}

/** An audit entry as the admin API and `tollgate audit --json` show it. */
export function auditView(e: AuditEntry): Record<string, unknown> {
  return { at: new Date(e.at).toISOString(), action: e.action, keyId: e.keyId, actor: e.actor, address: e.address, detail: e.detail };
}

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}
