/**
 * Starts what a test needs, the way a user would: the mock provider, a config file, and the
 * real `tollgate serve` process (built CLI) on port 0 with its own data directory. Keys are
 * made with the real `tollgate keys …` commands. Everything is torn down with the test.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startMockProvider, type MockProvider } from '../fixtures/mock-provider.js';
import { startRedis, type RedisServer } from './redis.js';

export const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));

/** Provider secrets the gateway is started with; tests check they (and never a client key) reach the provider. */
export const PROVIDER_ENV = { OPENAI_API_KEY: 'sk-test-openai-secret', ANTHROPIC_API_KEY: 'sk-ant-test-secret' };

/** The catalogue used by tests: prices are exact in nUSD per token (price × 1000). */
export function testModels(): Record<string, unknown> {
  return {
    'gpt-4o-mini': { provider: 'openai', endpoints: ['chat', 'responses'], price: { input: 0.15, output: 0.6, cachedInput: 0.075 }, contextWindow: 128000 },
    'gpt-4o': { provider: 'openai', endpoints: ['chat', 'responses'], price: { input: 2.5, output: 10 } },
    'chat-only': { provider: 'openai', endpoints: ['chat'], price: { input: 1, output: 2 } },
    'switched-off': { provider: 'openai', endpoints: ['chat'], price: { input: 1, output: 2 }, enabled: false },
    'claude-sonnet-4-5': { provider: 'anthropic', endpoints: ['messages'], price: { input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75 } },
    'claude-haiku-4-5': { provider: 'anthropic', endpoints: ['messages'], price: { input: 1, output: 5 } },
  };
}

/** The processes `pid` has started (a cluster primary's workers), from Linux's /proc. */
export function childPids(pid: number): number[] {
  return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
}

export interface CliResult { code: number | null; stdout: string; stderr: string }

/**
 * How `Harness.cli` runs `tollgate keys|models|audit`: on the data directory (local), or
 * through the running server's admin API (`--admin-url`, remote). The CLI tests run in both.
 */
export type CliMode = 'local' | 'remote';
export const CLI_MODES: readonly CliMode[] = ['local', 'remote'];

/** The admin token test servers are started with (when `admin` is on). */
export const ADMIN_TOKEN = 'test-admin-token-0123456789';

/**
 * Which store the gateway runs on. TOLLGATE_TEST_BACKEND=redis runs a test file on Redis (each
 * harness starts its own redis-server), as test/backends-redis.test.ts does for the behaviour
 * files; the default is LMDB.
 */
export type Backend = 'lmdb' | 'redis';
export const TEST_BACKEND: Backend = process.env.TOLLGATE_TEST_BACKEND === 'redis' ? 'redis' : 'lmdb';

export interface Harness {
  /** The store the gateway and the CLI run on. */
  backend: Backend;
  /** The Redis server of a Redis-backed harness (its own, or the one given), else null. */
  redis: RedisServer | null;
  /** http://127.0.0.1:PORT of the gateway */
  base: string;
  mock: MockProvider;
  dataDir: string;
  configFile: string;
  proc: ChildProcess;
  /** Everything the server wrote to stderr so far (its log). */
  serverLog(): string;
  /** Everything the server wrote to stdout so far (its start lines and access log). */
  serverOut(): string;
  /** http://127.0.0.1:PORT of the admin listener (with `admin: true`), else null. */
  admin: string | null;
  /** Runs `tollgate ARGS --config … --data …`. */
  cli(args: string[], env?: NodeJS.ProcessEnv): Promise<CliResult>;
  /** `tollgate keys create … --json`, parsed; fails the caller when the command fails. */
  createKey(args: string[]): Promise<{ id: string; key: string; prefix: string; mode: string }>;
  /** SIGTERM and wait for exit. */
  stop(): Promise<number | null>;
  /**
   * Starts `tollgate serve` again on the same config and data directory (after the previous
   * process has exited, e.g. once killed); `base`, `proc` and `serverLog` follow the new one.
   */
  restart(): Promise<void>;
}

export interface HarnessOptions {
  workers?: number;
  config?: (mockUrl: string) => Record<string, unknown>;
  env?: NodeJS.ProcessEnv;
  /** Open the admin listener on a free port, with ADMIN_TOKEN (implied by cliMode 'remote'). */
  admin?: boolean;
  /** How `cli()` runs issuer commands (default local). */
  cliMode?: CliMode;
  /**
   * Run this executable (the single binary) instead of the built CLI, from the gateway's own
   * directory with its defaults (./tollgate.config.json, ./data) and an environment holding only
   * the provider secrets and `env`.
   */
  executable?: string;
  /** The store (default TEST_BACKEND). */
  backend?: Backend;
  /** With backend redis: this server instead of one of the harness's own (several gateways on one Redis). */
  redisServer?: RedisServer;
}

interface Teardown { teardown(fn: () => unknown): void }

/**
 * The single binary as a host runs it: that file alone, from `cwd`, with nothing in its
 * environment but what the test gives it, as `env -i` would. Without one, tollgate runs as the
 * built CLI on this Node.js, with this process's environment.
 */
export interface Binary { executable: string; cwd: string }

function spawnTollgate(args: string[], env: NodeJS.ProcessEnv, binary?: Binary): ChildProcess {
  if (binary) return spawn(binary.executable, args, { cwd: binary.cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  return spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Runs the CLI to its end; one still running after `timeoutMs` is killed (its code is then null). */
export function runCli(args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 60_000, binary?: Binary): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawnTollgate(args, env, binary);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

export function defaultConfig(mockUrl: string): Record<string, unknown> {
  return {
    providers: {
      openai: { baseUrl: `${mockUrl}/v1`, auth: 'bearer', apiKeyEnv: 'OPENAI_API_KEY' },
      anthropic: { baseUrl: `${mockUrl}/v1`, auth: 'x-api-key', apiKeyEnv: 'ANTHROPIC_API_KEY' },
    },
    catalogProvider: { openai: 'openai', anthropic: 'anthropic' },
    // The tests' own catalogue exactly, without the built-in one: each test's expectations
    // (lists, refusals, prices) are written against these entries alone.
    builtInModels: false,
    models: testModels(),
  };
}

export async function startGateway(t: Teardown, options: HarnessOptions = {}): Promise<Harness> {
  const mock = await startMockProvider();
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-test-'));
  // Registered before the gateway starts, so the mock and the directory are cleaned up even
  // when it fails to; the gateway (if it started) is stopped first.
  let stopGateway: () => Promise<unknown> = async () => undefined;
  t.teardown(async () => {
    await stopGateway();
    await mock.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const dataDir = join(dir, 'data');
  const backend = options.backend ?? TEST_BACKEND;
  const redis = backend === 'redis' ? options.redisServer ?? await startRedis(t) : null;
  // Selects the Redis backend for `serve` and every CLI command alike (interface.md, Store backends).
  const storeEnv: NodeJS.ProcessEnv = redis === null ? {} : { TOLLGATE_REDIS_URL: redis.url };
  const configFile = join(dir, 'tollgate.config.json');
  writeFileSync(configFile, JSON.stringify((options.config ?? defaultConfig)(mock.url), null, 2));
  const binary = options.executable === undefined ? undefined : { executable: options.executable, cwd: dir };
  const common = binary ? [] : ['--config', configFile, '--data', dataDir];
  const args = ['serve', ...common, '--host', '127.0.0.1', '--port', '0'];
  if (options.workers) args.push('--workers', String(options.workers));
  const admin = options.admin === true || options.cliMode === 'remote';
  if (admin) args.push('--admin-port', '0');
  let log = '';
  let out = '';
  let adminBase: string | null = null;
  const launch = async (): Promise<{ proc: ChildProcess; base: string; stop: () => Promise<number | null> }> => {
    const proc = spawnTollgate(args, { ...PROVIDER_ENV, ...storeEnv, ...(admin ? { TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN } : {}), ...options.env }, binary);
    // Output of this process only: the listening lines of an earlier one must not be read again.
    let own = '';
    proc.stderr!.on('data', (d) => (log += d));
    proc.stdout!.on('data', (d) => {
      out += d;
      own += d;
    });
    const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
    let stopped: Promise<number | null> | null = null;
    const stop = (): Promise<number | null> => {
      if (!stopped) {
        proc.kill('SIGTERM');
        stopped = exited;
      }
      return stopped;
    };
    stopGateway = stop;
    const [base, adminUrl] = await new Promise<[string, string | null]>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`gateway did not start: ${own} ${log}`)), 20_000);
      const check = (): void => {
        const m = /tollgate listening on (http:\/\/[^\s]+)/.exec(own);
        const a = /admin listening on (http:\/\/[^\s]+)/.exec(own);
        if (m && (!admin || a)) {
          clearTimeout(timer);
          proc.stdout!.off('data', check);
          resolve([m[1]!, a?.[1] ?? null]);
        }
      };
      proc.stdout!.on('data', check);
      proc.on('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`gateway exited with ${code}: ${log}`));
      });
    });
    adminBase = adminUrl;
    return { proc, base, stop };
  };
  const first = await launch();
  const cli = options.cliMode === 'remote'
    ? (cliArgs: string[], env?: NodeJS.ProcessEnv): Promise<CliResult> => runCli([...cliArgs, '--admin-url', adminBase!], { TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN, ...env }, undefined, binary)
    : (cliArgs: string[], env?: NodeJS.ProcessEnv): Promise<CliResult> => runCli([...cliArgs, ...common], { ...storeEnv, ...env }, undefined, binary);
  const harness: Harness = {
    backend,
    redis,
    base: first.base,
    admin: adminBase,
    serverOut: () => out,
    mock,
    dataDir,
    configFile,
    proc: first.proc,
    serverLog: () => log,
    cli,
    async createKey(keyArgs) {
      const r = await cli(['keys', 'create', ...keyArgs, '--json']);
      if (r.code !== 0) throw new Error(`keys create failed (${r.code}): ${r.stderr}`);
      return JSON.parse(r.stdout);
    },
    stop: first.stop,
    async restart() {
      const next = await launch();
      harness.base = next.base;
      harness.admin = adminBase;
      harness.proc = next.proc;
      harness.stop = next.stop;
    },
  };
  return harness;
}

/** POST a JSON body with a bearer key; returns status, headers and text. */
export async function post(url: string, key: string | null, body: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key === null ? {} : { authorization: `Bearer ${key}` }), ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return readReply(res);
}

export interface Reply { status: number; headers: Headers; text: string; json: any }

/** A response's status, headers, text, and the text parsed as JSON (undefined when it is not JSON). */
export async function readReply(res: Response): Promise<Reply> {
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/** The UTC day of `ms` as `YYYY-MM-DD`, as the usage and admin APIs name days. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** GET /usage/api for a key. */
export async function usageOf(base: string, key: string, query = ''): Promise<any> {
  const res = await fetch(`${base}/usage/api${query}`, { headers: { authorization: `Bearer ${key}` } });
  if (res.status !== 200) throw new Error(`usage api answered ${res.status}: ${await res.text()}`);
  return res.json();
}

/** Every record of a key, newest first, paged with `limit` and the `nextBefore` cursor. */
export async function allRecords(base: string, key: string, limit: number): Promise<{ records: any[]; pages: number }> {
  const records: any[] = [];
  let pages = 0;
  let cursor: string | null = null;
  for (;;) {
    const page: any = await usageOf(base, key, `?limit=${limit}${cursor === null ? '' : `&before=${encodeURIComponent(cursor)}`}`);
    pages++;
    records.push(...page.requests);
    if (page.requests.length > limit) throw new Error('page larger than limit');
    cursor = page.nextBefore;
    if (cursor === null) break;
    if (pages > 50) throw new Error('paging does not end');
  }
  return { records, pages };
}

/** The rejection of `p`; fails the test when `p` resolves (an SDK call expected to be refused). */
export async function rejectionOf(t: { fail(message: string): unknown }, p: Promise<unknown>): Promise<any> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  t.fail('the call was expected to fail');
  return undefined;
}
