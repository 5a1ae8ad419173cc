import type { IncomingMessage } from 'node:http';
import type { Config } from '../config/types.js';
import { IssuerError } from '../issuer/errors.js';
import { keyJson } from '../issuer/view.js';
import { createPlan, expiresField, settingsPlan, topUpPlan, wholeField } from '../issuer/input.js';
import * as ops from '../issuer/operations.js';
import type { Actor, KeyWithAccount } from '../issuer/operations.js';
import type { GatewayStore } from '../domain/interfaces.js';
import { DAILY_COLUMNS, dailyRows, dayStart, dayText, MAX_RECORDS, RECORD_COLUMNS, recordRows, toCsv, TOTALS_COLUMNS, totalsPerKey, type DayRange } from './usage.js';
import { OPENAPI } from './openapi.js';

/**
 * The admin API under /admin/v1: every `tollgate keys` and `tollgate models` operation as JSON
 * (the same rules and messages, ../issuer/), usage reading across keys, the audit trail, and
 * its own OpenAPI document. Paths, bodies and answers: README, Admin API, and ./openapi.ts.
 */

export interface AdminContext {
  store: GatewayStore;
  config: Config;
  /** Whose provider credentials decide `usable` in the model list: the serving process's. */
  env: NodeJS.ProcessEnv;
}

export interface Call {
  params: Record<string, string>;
  query: URLSearchParams;
  body(): Promise<Record<string, unknown>>;
  actor: Actor;
}

export type Answer = { status: number; json: unknown } | { status: number; csv: string };

export interface AdminRoute {
  method: 'GET' | 'POST' | 'PATCH';
  /** OpenAPI path template, e.g. /admin/v1/keys/{ref} */
  path: string;
  /** The query parameters it takes (none when absent): any other is refused, 400 `unknown_field`, before it runs. */
  query?: readonly string[];
  handle(ctx: AdminContext, call: Call): Promise<Answer> | Answer;
}

const DAY_MS = 86_400_000;

function only(body: Record<string, unknown>, allowed: readonly string[]): Record<string, unknown> {
  for (const name of Object.keys(body)) {
    if (!allowed.includes(name)) throw new IssuerError('unknown_field', name, (n) => `${n(name)} is not a field of this request (fields: ${allowed.map(n).join(', ') || 'none'})`);
  }
  return body;
}

function keyAnswer(k: KeyWithAccount, status = 200, secret?: string): Answer {
  const json = keyJson(k.key, k.account);
  return { status, json: secret === undefined ? json : { ...json, key: secret } };
}

/** `from` / `to` query parameters: UTC days, inclusive; default the last 30 days. */
function dayRange(query: URLSearchParams, now = Date.now()): DayRange {
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  const parse = (name: string, fallback: number): number => {
    const text = query.get(name);
    if (text === null) return fallback;
    const ms = dayStart(text);
    if (ms === undefined) throw new IssuerError('invalid_field', name, (n) => `${n(name)} must be a UTC day as YYYY-MM-DD, got '${text}'`);
    return ms;
  };
  const toMs = parse('to', today);
  const fromMs = parse('from', toMs - 29 * DAY_MS);
  if (fromMs > toMs) throw new IssuerError('invalid_field', 'from', (n) => `${n('from')} must not be after ${n('to')}`);
  if ((toMs - fromMs) / DAY_MS >= 3660) throw new IssuerError('invalid_field', 'from', (n) => `${n('from')} to ${n('to')} may span at most 3660 days`);
  return { from: dayText(fromMs), to: dayText(toMs), fromMs, toMs };
}

function format(query: URLSearchParams): 'json' | 'csv' {
  const f = query.get('format') ?? 'json';
  if (f !== 'json' && f !== 'csv') throw new IssuerError('invalid_field', 'format', (n) => `${n('format')} must be json or csv`);
  return f;
}

/** Refuses a query parameter the route does not take (a filter or page it would silently ignore). */
export function checkQuery(query: URLSearchParams, route: AdminRoute): void {
  const allowed = route.query ?? [];
  for (const name of query.keys()) {
    if (!allowed.includes(name)) throw new IssuerError('unknown_field', name, (n) => `${n(name)} is not a query parameter here (${allowed.length === 0 ? 'this endpoint takes none' : `parameters: ${allowed.join(', ')}`})`);
  }
}

/** An action that takes no body: an empty body or `{}`; any field is refused, 400 `unknown_field`. */
async function noBody(call: Call): Promise<void> {
  only(await call.body(), []);
}

export const ADMIN_ROUTES: readonly AdminRoute[] = [
  { method: 'GET', path: '/admin/v1/openapi.json', handle: () => ({ status: 200, json: OPENAPI }) },
  { method: 'GET', path: '/admin/v1/keys', handle: async ({ store }) => ({ status: 200, json: (await ops.listKeys(store)).map((k) => keyJson(k.key, k.account)) }) },
  {
    method: 'POST', path: '/admin/v1/keys',
    async handle({ store, config }, call) {
      const body = only(await call.body(), ['mode', 'balance', 'budget', 'models', 'rpm', 'concurrency', 'expires', 'name']);
      const created = await ops.createKey(store, createPlan(body, config), call.actor);
      return keyAnswer(created, 201, created.secret);
    },
  },
  {
    method: 'POST', path: '/admin/v1/keys/lookup',
    async handle({ store }, call) {
      const body = only(await call.body(), ['key']);
      if (typeof body.key !== 'string') throw new IssuerError('missing_field', 'key', (n) => `${n('key')} is needed: the full key to look up`);
      if (!/^gw_live_[0-9a-f]{32}$/.test(body.key)) throw new IssuerError('invalid_field', 'key', (n) => `${n('key')} must be a full key (gw_live_ + 32 hex)`);
      return keyAnswer(await ops.showKey(store, body.key));
    },
  },
  { method: 'GET', path: '/admin/v1/keys/{ref}', handle: async ({ store }, call) => keyAnswer(await ops.showKey(store, call.params.ref!)) },
  {
    method: 'PATCH', path: '/admin/v1/keys/{ref}',
    async handle({ store, config }, call) {
      const body = only(await call.body(), ['models', 'rpm', 'concurrency', 'name']);
      if (Object.keys(body).length === 0) throw new IssuerError('missing_field', null, (n) => `a change needs at least one of ${n('models')}, ${n('rpm')}, ${n('concurrency')}, ${n('name')}`);
      return keyAnswer(await ops.updateSettings(store, call.params.ref!, settingsPlan(body, config), call.actor));
    },
  },
  {
    method: 'POST', path: '/admin/v1/keys/{ref}/suspend',
    async handle({ store }, call) {
      await noBody(call);
      return keyAnswer(await ops.setStatus(store, call.params.ref!, 'suspended', call.actor));
    },
  },
  {
    method: 'POST', path: '/admin/v1/keys/{ref}/resume',
    async handle({ store }, call) {
      await noBody(call);
      return keyAnswer(await ops.setStatus(store, call.params.ref!, 'active', call.actor));
    },
  },
  {
    method: 'POST', path: '/admin/v1/keys/{ref}/topup',
    async handle({ store }, call) {
      const body = only(await call.body(), ['usd', 'tokens']);
      return keyAnswer(await ops.topUp(store, call.params.ref!, topUpPlan(body), call.actor));
    },
  },
  {
    method: 'POST', path: '/admin/v1/keys/{ref}/extend',
    async handle({ store }, call) {
      const body = only(await call.body(), ['expires']);
      if (body.expires === undefined) throw new IssuerError('missing_field', 'expires', (n) => `${n('expires')} is needed: an ISO-8601 date or date-time, or never`);
      return keyAnswer(await ops.extend(store, call.params.ref!, expiresField(body.expires, true), call.actor));
    },
  },
  {
    method: 'POST', path: '/admin/v1/keys/{ref}/rotate',
    async handle({ store }, call) {
      await noBody(call);
      const rotated = await ops.rotate(store, call.params.ref!, call.actor);
      return keyAnswer(rotated, 201, rotated.secret);
    },
  },
  {
    method: 'GET', path: '/admin/v1/keys/{ref}/usage', query: ['from', 'to', 'format', 'limit'],
    async handle({ store }, call) {
      const { key, account } = await ops.showKey(store, call.params.ref!);
      const range = dayRange(call.query);
      const fmt = format(call.query);
      const limit = call.query.has('limit') ? wholeField(call.query.get('limit'), 'limit', 1, MAX_RECORDS) : 1000;
      const { rows, truncated } = await recordRows(store, key, range, limit);
      if (fmt === 'csv') return { status: 200, csv: toCsv(RECORD_COLUMNS, rows) };
      return { status: 200, json: { key: keyJson(key, account), from: range.from, to: range.to, requests: rows, truncated, daily: await dailyRows(store, key, range) } };
    },
  },
  {
    method: 'GET', path: '/admin/v1/keys/{ref}/daily', query: ['from', 'to', 'format'],
    async handle({ store }, call) {
      const { key } = await ops.showKey(store, call.params.ref!);
      const range = dayRange(call.query);
      const rows = await dailyRows(store, key, range);
      if (format(call.query) === 'csv') return { status: 200, csv: toCsv(DAILY_COLUMNS, rows) };
      return { status: 200, json: { id: key.id, prefix: key.prefix, from: range.from, to: range.to, daily: rows } };
    },
  },
  {
    method: 'GET', path: '/admin/v1/usage', query: ['from', 'to', 'format'],
    async handle({ store }, call) {
      const range = dayRange(call.query);
      const rows = await totalsPerKey(store, range);
      if (format(call.query) === 'csv') return { status: 200, csv: toCsv(TOTALS_COLUMNS, rows) };
      return { status: 200, json: { from: range.from, to: range.to, keys: rows } };
    },
  },
  { method: 'GET', path: '/admin/v1/models', handle: async ({ store, config, env }) => ({ status: 200, json: await ops.listModels(store, config, env) }) },
  {
    method: 'POST', path: '/admin/v1/models/{id}/enable',
    async handle({ store, config, env }, call) {
      await noBody(call);
      const id = await ops.setModel(store, config, call.params.id!, true, call.actor);
      return { status: 200, json: (await ops.listModels(store, config, env)).find((m) => m.id === id) };
    },
  },
  {
    method: 'POST', path: '/admin/v1/models/{id}/disable',
    async handle({ store, config, env }, call) {
      await noBody(call);
      const id = await ops.setModel(store, config, call.params.id!, false, call.actor);
      return { status: 200, json: (await ops.listModels(store, config, env)).find((m) => m.id === id) };
    },
  },
  {
    method: 'GET', path: '/admin/v1/audit', query: ['key'],
    async handle({ store }, call) {
      const ref = call.query.get('key');
      const keyId = ref === null ? undefined : (await ops.resolveKeyRef(store, ref)).id;
      return { status: 200, json: (await store.auditTrail(keyId)).map(ops.auditView) };
    },
  },
];

/** The route and its path parameters for a method and path under /admin/v1, or undefined. */
export function findAdminRoute(method: string, path: string): { route: AdminRoute; params: Record<string, string> } | undefined {
  const segments = path.split('/');
  for (const route of ADMIN_ROUTES) {
    if (route.method !== method) continue;
    const pattern = route.path.split('/');
    if (pattern.length !== segments.length) continue;
    const params: Record<string, string> = {};
    let ok = true;
    for (let i = 0; i < pattern.length && ok; i++) {
      const p = pattern[i]!;
      if (p.startsWith('{')) {
        const value = decodeURIComponent(segments[i]!);
        if (value.length === 0) ok = false;
        else params[p.slice(1, -1)] = value;
      } else ok = p === segments[i];
    }
    // A literal route (keys/lookup) wins over a parameter (keys/{ref}): literals come first in the table.
    if (ok) return { route, params };
  }
  return undefined;
}

/** The JSON object body of an admin request (empty body: `{}`). */
export function readJsonBody(req: IncomingMessage, max = 65_536): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= max) chunks.push(c);
    });
    req.on('error', reject);
    req.on('end', () => {
      if (size > max) return reject(new IssuerError('invalid_json', null, () => `the request body is larger than ${max} bytes`));
      const text = Buffer.concat(chunks).toString('utf8');
      if (text.trim().length === 0) return resolve({});
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        return reject(new IssuerError('invalid_json', null, () => 'the request body must be a JSON object'));
      }
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return reject(new IssuerError('invalid_json', null, () => 'the request body must be a JSON object'));
      resolve(parsed as Record<string, unknown>);
    });
  });
}
