/**
 * A gateway in front of credential pools, its clock driven by the test: one mock provider per
 * credential (each its own organisation: its own base URL, its own stored responses), the
 * gateway process of test/fixtures/pool-gateway.ts on the test's backend (TOLLGATE_TEST_BACKEND,
 * a redis-server of its own on Redis), keys made in its store. Torn down with the test.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startMockProvider, type MockProvider } from '../fixtures/mock-provider.js';
import { post, TEST_BACKEND, testModels } from './harness.js';
import { parseMetrics, seriesOf } from './prometheus.js';
import { startRedis } from './redis.js';

interface Teardown { teardown(fn: () => unknown): void }

/** One credential of a pool: its name and weight. */
export interface PoolCredential { name: string; weight?: number }

export interface PoolOptions {
  /** The credentials of each provider (a provider left out has one, `default`, on a mock of its own). */
  openai?: PoolCredential[];
  anthropic?: PoolCredential[];
  retry?: { attempts?: number; budgetMs?: number };
  limits?: Record<string, number>;
}

export interface PoolGateway {
  base: string;
  admin: string;
  /** The mock provider behind each credential, by credential name. */
  mocks: Record<string, MockProvider>;
  /** The secret each credential presents, by credential name. */
  secrets: Record<string, string>;
  /** Moves the gateway's clock on; resolves once it has. */
  advance(ms: number): Promise<void>;
  /** Creates keys, each with its own account (credit: $1 unless `amount` nUSD says otherwise). */
  keys(n: number, mode?: 'credit' | 'token', amount?: number): Promise<Array<{ key: string; account: string }>>;
  /** Everything the gateway wrote to stderr so far. */
  serverLog(): string;
  /** Its stderr lines of `event`, parsed. */
  events(event: string): any[];
  /** Its access-log lines so far, parsed. */
  accessLines(): any[];
  metrics(): Promise<Map<string, number>>;
  readyz(): Promise<{ status: number; body: any }>;
  /** The credentials whose mocks got a request since `since` (counts by name). */
  requestsSince(since: Record<string, number>): Record<string, number>;
  /** How many requests each mock got so far, by credential name. */
  counts(): Record<string, number>;
}

export async function startPoolGateway(t: Teardown, options: PoolOptions = {}): Promise<PoolGateway> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-pool-'));
  const mocks: Record<string, MockProvider> = {};
  const secrets: Record<string, string> = {};
  let proc: ChildProcess | null = null;
  t.teardown(async () => {
    if (proc !== null && proc.exitCode === null) {
      const exited = new Promise((r) => proc!.once('exit', r));
      proc.kill('SIGTERM');
      await exited;
    }
    await Promise.all(Object.values(mocks).map((m) => m.close()));
    rmSync(dir, { recursive: true, force: true });
  });
  const env: NodeJS.ProcessEnv = {};
  const providers: Record<string, unknown> = {};
  for (const [provider, auth] of [['openai', 'bearer'], ['anthropic', 'x-api-key']] as const) {
    const credentials = options[provider] ?? [{ name: `${provider}-default` }];
    const list = [];
    for (const c of credentials) {
      const mock = await startMockProvider();
      mocks[c.name] = mock;
      secrets[c.name] = `sk-pool-${c.name}-secret`;
      const variable = `POOL_KEY_${c.name.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
      env[variable] = secrets[c.name];
      list.push({ name: c.name, apiKeyEnv: variable, baseUrl: `${mock.url}/v1`, ...(c.weight === undefined ? {} : { weight: c.weight }) });
    }
    providers[provider] = { baseUrl: `${mocks[credentials[0]!.name]!.url}/v1`, auth, credentials: list, ...(options.retry === undefined ? {} : { retry: options.retry }) };
  }
  const configFile = join(dir, 'tollgate.config.json');
  writeFileSync(configFile, JSON.stringify({ providers, catalogProvider: { openai: 'openai', anthropic: 'anthropic' }, models: testModels(), ...(options.limits === undefined ? {} : { limits: options.limits }) }, null, 2));
  if (TEST_BACKEND === 'redis') env.TOLLGATE_REDIS_URL = (await startRedis(t)).url;

  const fixture = fileURLToPath(new URL('../fixtures/pool-gateway.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', fixture, configFile, join(dir, 'data')], {
    env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  proc = child;
  let out = '';
  let log = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (log += d));
  const [base, admin] = await new Promise<[string, string]>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the pool gateway did not start: ${out} ${log}`)), 60_000);
    const check = (): void => {
      const m = /tollgate listening on (\S+)\nadmin listening on (\S+)/.exec(out);
      if (m === null) return;
      clearTimeout(timer);
      child.stdout!.off('data', check);
      resolve([m[1]!, m[2]!]);
    };
    child.stdout!.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the pool gateway exited with ${code}: ${log}`));
    });
  });

  let nextId = 0;
  const ask = <T>(message: Record<string, unknown>): Promise<T> => new Promise((resolve) => {
    const id = ++nextId;
    const onReply = (reply: { id: number } & T): void => {
      if (reply.id !== id) return;
      child.off('message', onReply);
      resolve(reply);
    };
    child.on('message', onReply);
    child.send({ id, ...message });
  });
  const counts = (): Record<string, number> => Object.fromEntries(Object.entries(mocks).map(([name, m]) => [name, m.requests.length]));
  return {
    base,
    admin,
    mocks,
    secrets,
    async advance(ms) {
      await ask({ advance: ms });
    },
    async keys(n, mode = 'credit', amount = 1e9) {
      return (await ask<{ keys: Array<{ key: string; account: string }> }>({ keys: n, mode, amount })).keys;
    },
    serverLog: () => log,
    events: (event) => log.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).filter((l) => l.event === event),
    accessLines: () => out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)),
    metrics: async () => parseMetrics(await (await fetch(`${admin}/metrics`)).text()),
    async readyz() {
      const res = await fetch(`${base}/readyz`);
      return { status: res.status, body: await res.json() };
    },
    counts,
    requestsSince(since) {
      const now = counts();
      return Object.fromEntries(Object.entries(now).map(([name, n]) => [name, n - (since[name] ?? 0)]));
    },
  };
}

/** A chat call's body (model gpt-4o-mini unless given). */
export function chatBody(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }], ...extra };
}

/** Waits (bounded) until `check` holds; for what a process tells another asynchronously. */
export async function eventually(check: () => boolean | Promise<boolean>, tries = 250): Promise<boolean> {
  for (let i = 0; i < tries; i++) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return false;
}

/** The credentials whose provider got the call marked `marker` (its `mock.requestId`), by name. */
export function receivers(gw: PoolGateway, marker: string): string[] {
  return Object.entries(gw.mocks).filter(([, mock]) => mock.requests.some((r) => r.body.includes(`"${marker}"`))).map(([name]) => name);
}

/**
 * Where each account's calls of `model` go while every credential is in rotation: one call each
 * (chat, or Messages for a Claude model; sequential), read from the provider that got it. Keys are made until every credential
 * named in `want` has at least two accounts, so a test always has some on each side.
 */
export async function affinity(gw: PoolGateway, want: readonly string[], model = 'gpt-4o-mini'): Promise<Map<string, Array<{ key: string; account: string }>>> {
  const by = new Map<string, Array<{ key: string; account: string }>>(want.map((name) => [name, []]));
  for (let round = 0; round < 8 && [...by.values()].some((list) => list.length < 2); round++) {
    for (const account of await gw.keys(8)) {
      const marker = `affinity-${account.account}-${model}`;
      const r = model.startsWith('claude')
        ? await post(`${gw.base}/v1/messages`, account.key, { model, max_tokens: 16, messages: [{ role: 'user', content: 'hello' }], mock: { requestId: marker } })
        : await post(`${gw.base}/v1/chat/completions`, account.key, chatBody({ model, mock: { requestId: marker } }));
      if (r.status !== 200) throw new Error(`affinity call: ${r.status} ${r.text}`);
      const [name] = receivers(gw, marker);
      by.get(name!)?.push(account);
    }
  }
  return by;
}

/** The value of metric `name`'s series with these labels (undefined: no such series). */
export async function metricOf(gw: PoolGateway, name: string, labels: Record<string, string>): Promise<number | undefined> {
  const all = seriesOf(await gw.metrics(), name);
  return all.find((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
}

/** A credit call's record as /usage/api shows it, by the request id the mock answered with. */
export async function recordOf(gw: PoolGateway, key: string, requestId: string): Promise<any> {
  const res = await fetch(`${gw.base}/usage/api?limit=100`, { headers: { authorization: `Bearer ${key}` } });
  const usage = (await res.json()) as { requests: any[] };
  return usage.requests.find((r) => r.requestId === requestId);
}

/** The access-log line of `requestId`, once the gateway has written it (it is written as the response closes). */
export async function accessLineOf(gw: PoolGateway, requestId: string): Promise<any> {
  const find = (): any => gw.accessLines().find((l) => l.requestId === requestId);
  await eventually(() => find() !== undefined);
  return find();
}
