import { hostname } from 'node:os';
import { credentialValue } from '../config/load.js';
import type { Config } from '../config/types.js';
import type { CreatePlan, SettingsPlan, TopUpPlan } from '../issuer/input.js';
import * as ops from '../issuer/operations.js';
import type { KeyWithAccount, ModelView } from '../issuer/operations.js';
import type { GatewayStore } from '../domain/interfaces.js';
import type { Account, KeyRecord, KeyStatus } from '../domain/types.js';
import { UsageError } from './common.js';
import { formatUsdExact } from '../money.js';

/**
 * What `tollgate keys|models|audit` do, behind one interface: on the store directly (local), or
 * through the admin API (remote, `--admin-url` / TOLLGATE_ADMIN_URL). The commands parse,
 * validate and print the same way in both modes.
 */
export interface IssuerClient {
  createKey(plan: CreatePlan): Promise<ops.NewSecret>;
  listKeys(): Promise<KeyWithAccount[]>;
  showKey(ref: string): Promise<KeyWithAccount>;
  setStatus(ref: string, status: KeyStatus): Promise<KeyWithAccount>;
  topUp(ref: string, plan: TopUpPlan): Promise<KeyWithAccount>;
  extend(ref: string, expiresAt: number | null): Promise<KeyWithAccount>;
  updateSettings(ref: string, plan: SettingsPlan): Promise<KeyWithAccount>;
  rotate(ref: string): Promise<ops.NewSecret & { old: KeyRecord }>;
  listModels(): Promise<ListedModel[]>;
  /** Switches a model (an alias names its entry); resolves to the entry's id. */
  setModel(id: string, enabled: boolean): Promise<string>;
  /** Of these allowlisted models, the ones switched off. */
  disabledModels(models: string[] | null): Promise<string[]>;
  audit(ref?: string): Promise<Record<string, unknown>[]>;
  close(): Promise<void>;
}

/**
 * A catalogue entry as `models list` prints it, locally and through the admin API alike: the
 * variable the server's environment must provide (`credentialEnv`), without the running
 * server's verdict on it (`usable`, which only the admin API's own list gives): run locally, this
 * shell's environment says nothing about the server's.
 */
export type ListedModel = Omit<ModelView, 'usable'>;

function listed({ usable: _, ...model }: ModelView): ListedModel {
  return model;
}

export function localIssuer(store: GatewayStore, config: Config): IssuerClient {
  const actor = ops.localActor();
  return {
    createKey: (plan) => ops.createKey(store, plan, actor),
    listKeys: async () => ops.listKeys(store),
    showKey: async (ref) => ops.showKey(store, ref),
    setStatus: (ref, status) => ops.setStatus(store, ref, status, actor),
    topUp: (ref, plan) => ops.topUp(store, ref, plan, actor),
    extend: (ref, expiresAt) => ops.extend(store, ref, expiresAt, actor),
    updateSettings: (ref, plan) => ops.updateSettings(store, ref, plan, actor),
    rotate: (ref) => ops.rotate(store, ref, actor),
    listModels: async () => (await ops.listModels(store, config, {})).map(listed),
    setModel: (id, enabled) => ops.setModel(store, config, id, enabled, actor),
    disabledModels: async (models) => ops.disabledModels(store, config, models),
    audit: async (ref) => (await store.auditTrail(ref === undefined ? undefined : (await ops.resolveKeyRef(store, ref)).id)).map(ops.auditView),
    close: () => store.close(),
  };
}

/** The admin API's URL, when the command line should go through it; one that is not an http(s) URL is bad usage. */
export function adminUrlFrom(values: Record<string, unknown>): string | undefined {
  const given = values['admin-url'] as string | undefined;
  const url = given ?? (process.env.TOLLGATE_ADMIN_URL || undefined);
  if (url === undefined) return undefined;
  if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) {
    throw new UsageError(`${given === undefined ? 'TOLLGATE_ADMIN_URL' : '--admin-url'} must be the admin listener's http:// or https:// URL (http://127.0.0.1:8081), got '${url}'`);
  }
  return url.replace(/\/+$/, '');
}

/** A key as the admin API shows it (`keyJson`), back into the record and account the printers take. */
function fromJson(j: Record<string, any>): KeyWithAccount {
  const key: KeyRecord = {
    id: j.id, hash: '', prefix: j.prefix, name: j.name, mode: j.mode, models: j.models, rpm: j.rpm, concurrency: j.concurrency,
    expiresAt: j.expiresAt === null ? null : Date.parse(j.expiresAt), status: j.status, createdAt: Date.parse(j.createdAt),
    account: j.account, rotatedFrom: j.rotatedFrom,
  };
  const account: Account = j.mode === 'credit'
    ? { mode: 'credit', balanceNano: j.balanceNanoUsd, budgetTokens: 0, usedTokens: 0, held: j.heldNanoUsd }
    : { mode: 'token', balanceNano: 0, budgetTokens: j.budgetTokens, usedTokens: j.usedTokens, held: j.heldTokens };
  return { key, account };
}

export function remoteIssuer(base: string): IssuerClient {
  // Trimmed as the server trims its own (serve.ts): the same variable set from the same file.
  const token = credentialValue(process.env, 'TOLLGATE_ADMIN_TOKEN');
  async function call(method: string, path: string, body?: unknown): Promise<any> {
    let res: Response;
    try {
      res = await fetch(base + path, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          'x-tollgate-cli': hostname(),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (err) {
      throw new Error(`cannot reach the admin API at ${base}: ${(err as Error & { cause?: Error }).cause?.message ?? (err as Error).message}`);
    }
    const text = await res.text();
    let parsed: any;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    // Every path this client asks for exists on an admin listener, which always answers JSON: a
    // server that has no such path, or answers otherwise, is another one (the gateway's public
    // listener, say), and the option naming it is what is wrong.
    if ((res.status === 404 && parsed?.error?.code === 'unknown_endpoint') || (parsed === undefined && res.status < 500)) {
      throw new UsageError(`${base} is not a tollgate admin API (it answered ${method} ${path.split('?')[0]} with ${res.status}${parsed === undefined ? ', not JSON' : ' unknown_endpoint'}): point --admin-url or TOLLGATE_ADMIN_URL at the admin listener (admin.port, 8081 by default)`);
    }
    if (res.ok) return parsed;
    const message = parsed?.error?.message ?? `the admin API answered ${res.status}`;
    if (res.status === 401) throw new Error(`the admin API refused the token (set TOLLGATE_ADMIN_TOKEN): ${message}`);
    // The server's verdict on the request itself (bad value, unknown key): bad usage, as locally.
    if (res.status >= 400 && res.status < 500) throw new UsageError(message);
    throw new Error(message);
  }
  /** A full key stays out of URLs: looked up by its hash first, then named by its id. */
  async function idOf(ref: string): Promise<string> {
    if (!/^gw_live_[0-9a-f]{32}$/.test(ref)) return encodeURIComponent(ref);
    return (await call('POST', '/admin/v1/keys/lookup', { key: ref })).id;
  }
  const keyCall = async (method: string, ref: string, tail: string, body?: unknown): Promise<KeyWithAccount> => fromJson(await call(method, `/admin/v1/keys/${await idOf(ref)}${tail}`, body));
  const withSecret = (j: any): ops.NewSecret => ({ ...fromJson(j), secret: j.key });
  return {
    async createKey(plan) {
      return withSecret(await call('POST', '/admin/v1/keys', {
        mode: plan.mode,
        ...(plan.mode === 'credit' ? { balance: formatUsdExact(plan.amount) } : { budget: plan.amount }),
        models: plan.models, rpm: plan.rpm, concurrency: plan.concurrency, expires: plan.expiresAt === null ? null : new Date(plan.expiresAt).toISOString(), name: plan.name,
      }));
    },
    listKeys: async () => ((await call('GET', '/admin/v1/keys')) as any[]).map(fromJson),
    showKey: (ref) => keyCall('GET', ref, ''),
    setStatus: (ref, status) => keyCall('POST', ref, status === 'suspended' ? '/suspend' : '/resume'),
    topUp: (ref, plan) => keyCall('POST', ref, '/topup', plan.usdNano !== null ? { usd: formatUsdExact(plan.usdNano) } : { tokens: plan.tokens }),
    extend: (ref, expiresAt) => keyCall('POST', ref, '/extend', { expires: expiresAt === null ? 'never' : new Date(expiresAt).toISOString() }),
    updateSettings: (ref, plan) => keyCall('PATCH', ref, '', plan),
    async rotate(ref) {
      const old = await keyCall('GET', ref, '');
      return { ...withSecret(await call('POST', `/admin/v1/keys/${old.key.id}/rotate`)), old: old.key };
    },
    listModels: async () => ((await call('GET', '/admin/v1/models')) as ModelView[]).map(listed),
    async setModel(id, enabled) {
      return ((await call('POST', `/admin/v1/models/${encodeURIComponent(id)}/${enabled ? 'enable' : 'disable'}`)) as ModelView).id;
    },
    async disabledModels(models) {
      if (models === null) return [];
      const list = (await call('GET', '/admin/v1/models')) as ModelView[];
      return models.filter((id) => list.some((m) => m.id === id && !m.enabled));
    },
    audit: async (ref) => call('GET', `/admin/v1/audit${ref === undefined ? '' : `?key=${await idOf(ref)}`}`),
    close: async () => undefined,
  };
}
