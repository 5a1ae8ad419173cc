/**
 * Shared pieces of the benchmark scripts: child processes that always die with the harness,
 * /proc readers, the load generator (autocannon) and a sequential streaming client.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, watch, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { Client } from 'undici';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** The built CLI the bench runs: this checkout's, or another build's (BENCH_CLI=…/dist/cli/main.js, to compare builds). */
export const CLI = process.env.BENCH_CLI || join(ROOT, 'dist', 'cli', 'main.js');
export const BENCH_DIR = join(ROOT, 'bench');

/** Bench traffic only ever goes to the loopback interface. */
export const HOST = '127.0.0.1';

// ── bodies ─────────────────────────────────────────────────────────────────

export const MODEL = 'gpt-4o-mini';
export const CHAT_PATH = '/v1/chat/completions';
export const MESSAGES_PATH = '/v1/messages';
/** The bench config's Messages model (writeBenchConfig). */
export const MESSAGES_MODEL = 'claude-haiku-4-5';
export const PLAIN_BODY = JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'Say hi.' }] });
export const STREAM_BODY = JSON.stringify({
  model: MODEL,
  messages: [{ role: 'user', content: 'Say hi.' }],
  stream: true,
  stream_options: { include_usage: true },
  mock: { chunks: 20 },
});
/** The same stream with its events 2 ms apart: each event a read of its own, as in the streams-at-scale burst. */
export const READ_PER_EVENT_BODY = JSON.stringify({
  model: MODEL,
  messages: [{ role: 'user', content: 'Say hi.' }],
  stream: true,
  stream_options: { include_usage: true },
  mock: { chunks: 20, chunkDelayMs: 2 },
});
/** The same stream as 20 separate writes back to back (a provider flushing per token, in a burst). */
export const BURST_BODY = JSON.stringify({
  model: MODEL,
  messages: [{ role: 'user', content: 'Say hi.' }],
  stream: true,
  stream_options: { include_usage: true },
  mock: { chunks: 20, separateWrites: true },
});

/** Prose for the large bodies below: ASCII with some multi-byte characters, about 3.3 KiB. */
const PROSE = 'Lorem ipsum dolor sit amet, consectetur adipiscing elit. Sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. \u00e9\u4e2d '.repeat(25);

function turns(kib: number): Array<{ role: string; content: string }> {
  const count = Math.max(1, Math.round((kib * 1024) / Buffer.byteLength(PROSE)));
  return Array.from({ length: count }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: PROSE }));
}

/** 18 function tools with JSON schemas, ≈ 43 KB, as a coding agent offers on every call. */
function agentTools(): unknown[] {
  const description = 'Executes a given command in a persistent shell session with an optional timeout. Before running it, check that the directories it needs exist, quote paths with spaces, and prefer the dedicated tools for reading and editing files. '.repeat(4);
  const properties = Object.fromEntries(Array.from({ length: 8 }, (_, k) => [`param_${k}`, { type: k % 2 ? 'string' : 'number', description: `Parameter ${k} of this tool, which does something useful.` }]));
  return Array.from({ length: 18 }, (_, i) => ({ name: `Tool${i}`, description, input_schema: { type: 'object', properties, required: ['param_0'], additionalProperties: false } }));
}

/**
 * A large request (bench/cpu-budget.ts, BENCH_BODY): `conversation`, a Chat request of about
 * `kib` KiB of turns of prose; `agent`, a Messages request with a coding agent's tools and about
 * `kib` KiB of turns. The path and the body.
 */
export function largeRequest(kind: 'conversation' | 'agent', kib: number): { path: string; body: string } {
  if (kind === 'conversation') return { path: CHAT_PATH, body: JSON.stringify({ model: MODEL, messages: turns(kib) }) };
  return { path: MESSAGES_PATH, body: JSON.stringify({ model: MESSAGES_MODEL, max_tokens: 1024, system: PROSE, tools: agentTools(), messages: turns(kib) }) };
}

// ── child processes ─────────────────────────────────────────────────────────

const children = new Set<ChildProcess>();

/**
 * A tiny separate process that outlives a harness killed with SIGKILL (no exit handler runs
 * then): it is told every child pid and temporary directory on its stdin, and when that pipe
 * closes — the harness ended, however — it stops whatever is left and removes the directories.
 */
const REAPER = `
const pids = new Set(), dirs = new Set();
let buf = '';
process.stdin.on('data', (d) => {
  buf += d;
  let nl;
  while ((nl = buf.indexOf('\\n')) !== -1) {
    const [kind, value] = [buf.slice(0, 1), buf.slice(2, nl)];
    buf = buf.slice(nl + 1);
    if (kind === 'p') pids.add(Number(value)); else if (kind === 'x') pids.delete(Number(value)); else if (kind === 'd') dirs.add(value);
  }
});
process.stdin.on('close', () => {
  const signal = (sig) => { for (const pid of pids) { try { process.kill(pid, sig); } catch {} } };
  signal('SIGTERM');
  setTimeout(() => {
    signal('SIGKILL');
    for (const dir of dirs) { try { require('node:fs').rmSync(dir, { recursive: true, force: true }); } catch {} }
  }, 3000);
});
`;
let reaper: ChildProcess | undefined;
function tellReaper(line: string): void {
  if (reaper === undefined) {
    reaper = spawn(process.execPath, ['-e', REAPER], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
    reaper.unref();
    (reaper.stdin as unknown as { unref?: () => void }).unref?.();
  }
  reaper.stdin!.write(`${line}\n`);
}
/** Extra pids to kill on the way out (cluster workers, which are our children's children). */
const extraPids = new Set<number>();
const tempDirs = new Set<string>();

export interface Server {
  name: string;
  /** http://127.0.0.1:PORT */
  url: string;
  proc: ChildProcess;
  pid: number;
  /** The file its stdout goes to (see spawnServer). */
  stdoutPath: string;
  /** The last 64 KiB the process wrote to stderr. */
  log(): string;
}

/**
 * Spawns `node ARGS` (or `EXECUTABLE ARGS`) and resolves once its stdout shows `listening on
 * http://…`. The child is registered for `stopAll()` (and a SIGKILL on exit of the harness,
 * whatever the reason).
 *
 * Its stdout (tollgate's access log) goes to a file in a temporary directory, as a log shipper
 * would tail it, not to a pipe: draining a pipe here would put the log's reading on the load
 * generator, which shares the cores with the servers, and charge it to the gateway's throughput.
 */
export function spawnServer(name: string, args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 30_000, executable = process.execPath): Promise<Server> {
  const outPath = join(tempDir('tollgate-bench-out-'), 'stdout.log');
  const outFd = openSync(outPath, 'a');
  const proc = spawn(executable, args, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', outFd, 'pipe'],
  });
  closeSync(outFd);
  children.add(proc);
  tellReaper(`p ${proc.pid}`);
  proc.once('exit', () => {
    children.delete(proc);
    tellReaper(`x ${proc.pid}`);
  });
  let err = '';
  proc.stderr!.on('data', (d: Buffer) => {
    err += d.toString();
    if (err.length > 65536) err = err.slice(-65536);
  });
  return new Promise<Server>((resolve, reject) => {
    // Told by inotify when the file grows (start-up times stay exact, bench/startup.ts), and a
    // slow poll besides, which also enforces the time limit.
    const watcher = watch(outPath, () => check());
    const timer = setTimeout(() => fail(new Error(`${name} did not start within ${timeoutMs} ms`)), timeoutMs);
    const poll = setInterval(() => check(), 100);
    const done = (): void => {
      watcher.close();
      clearTimeout(timer);
      clearInterval(poll);
    };
    const fail = (e: Error): void => {
      done();
      reject(new Error(`${e.message}\n--- ${name} stdout ---\n${readFileSync(outPath, 'utf8').slice(0, 65536)}\n--- ${name} stderr ---\n${err}`));
    };
    proc.once('error', fail);
    proc.once('exit', (code, signal) => fail(new Error(`${name} exited early (code ${code}, signal ${signal})`)));
    let settled = false;
    function check(): void {
      if (settled) return;
      const m = /listening on (http:\/\/\S+)/.exec(readFileSync(outPath, 'utf8'));
      if (m === null) return;
      settled = true;
      done();
      proc.removeAllListeners('exit');
      proc.once('exit', () => children.delete(proc));
      resolve({ name, url: m[1]!, proc, pid: proc.pid!, stdoutPath: outPath, log: () => err });
    }
    check();
  });
}

/** A number from the environment, at least `min`; `fallback` when unset or empty. */
export function envNumber(name: string, fallback: number, min: number): number {
  const text = process.env[name];
  if (text === undefined || text === '') return fallback;
  const n = Number(text);
  if (!Number.isFinite(n) || n < min) throw new Error(`${name} must be a number ≥ ${min} (got '${text}')`);
  return n;
}

/**
 * The name environment variable `name` gives (`fallback` when unset or empty) and its entry in
 * `table`; a name the table lacks is an error that lists the ones it has.
 */
export function envChoice<T>(name: string, fallback: string, table: Record<string, T>): [string, T] {
  const chosen = process.env[name] || fallback;
  if (!Object.hasOwn(table, chosen)) throw new Error(`${name}: unknown '${chosen}' (${Object.keys(table).join(', ')})`);
  return [chosen, table[chosen]!];
}

/** Runs `node ARGS` (or `EXECUTABLE ARGS`) to completion; resolves to its stdout, rejects on a non-zero exit. */
export function runNode(args: string[], env: NodeJS.ProcessEnv = {}, executable = process.execPath): Promise<string> {
  return new Promise((resolve, reject) => {
    const proc = spawn(executable, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(proc);
    let out = '';
    let err = '';
    proc.stdout.on('data', (d: Buffer) => (out += d));
    proc.stderr.on('data', (d: Buffer) => (err += d));
    proc.once('error', reject);
    proc.once('exit', (code) => {
      children.delete(proc);
      if (code === 0) resolve(out);
      else reject(new Error(`${executable} ${args.join(' ')} exited ${code}: ${err}`));
    });
  });
}

export function trackPid(pid: number): void {
  extraPids.add(pid);
  tellReaper(`p ${pid}`);
}

export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.add(dir);
  tellReaper(`d ${dir}`);
  return dir;
}

/** SIGTERM to every child (they drain and exit), SIGKILL to whatever is left after `graceMs`. */
export async function stopAll(graceMs = 5_000): Promise<void> {
  const waiting = [...children].map((proc) => new Promise<void>((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
    proc.once('exit', () => resolve());
    proc.kill('SIGTERM');
  }));
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([Promise.all(waiting), new Promise<void>((r) => (timer = setTimeout(r, graceMs)))]);
  clearTimeout(timer);
  killRemaining();
  for (const pid of extraPids) tellReaper(`x ${pid}`);
  extraPids.clear();
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  tempDirs.clear();
}

/**
 * Runs a bench script's main to the end: every child stopped however it ends, the error (if
 * any) on stderr, and exit code 1 when main threw or returned false.
 */
export async function runMain(name: string, main: () => Promise<boolean | void>): Promise<never> {
  let ok = false;
  try {
    ok = (await main()) !== false;
  } catch (err) {
    process.stderr.write(`${name} failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  } finally {
    await stopAll();
  }
  process.exit(ok ? 0 : 1);
}

function killRemaining(): void {
  for (const proc of children) {
    try {
      proc.kill('SIGKILL');
    } catch { /* already gone */ }
  }
  for (const pid of extraPids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch { /* already gone */ }
  }
}

let guarded = false;
/**
 * Makes sure no child outlives the harness: on normal exit, on an uncaught error, on Ctrl-C,
 * and when the whole run takes longer than `watchdogMs`.
 */
export function guardChildren(watchdogMs: number): void {
  if (guarded) return;
  guarded = true;
  process.once('exit', () => {
    killRemaining();
    for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  });
  const bail = (code: number) => (): void => {
    void stopAll(2_000).finally(() => process.exit(code));
  };
  process.once('SIGINT', bail(130));
  process.once('SIGTERM', bail(143));
  const watchdog = setTimeout(() => {
    process.stderr.write(`bench: watchdog fired after ${Math.round(watchdogMs / 1000)} s; stopping\n`);
    bail(1)();
  }, watchdogMs);
  watchdog.unref();
}

// ── /proc ───────────────────────────────────────────────────────────────────

/** Fields of /proc/PID/status in kB (VmHWM, VmRSS, RssAnon, RssFile …); empty if the process is gone. */
export function procStatus(pid: number): Record<string, number> {
  const out: Record<string, number> = {};
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return out;
  }
  for (const line of text.split('\n')) {
    const m = /^(\w+):\s+(\d+) kB$/.exec(line);
    if (m) out[m[1]!] = Number(m[2]);
  }
  return out;
}

const CLK_TCK = 100; // getconf CLK_TCK on Linux (USER_HZ), fixed at 100 on every mainstream kernel

/** CPU ms (user + system) in a /proc `stat` file (a process's, or one thread's under task/); 0 when it is gone. */
function statCpuMs(path: string): number {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return 0;
  }
  // Fields after the parenthesised command name: state(3) ppid(4) … utime(14) stime(15).
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return ((Number(rest[11]) + Number(rest[12])) * 1000) / CLK_TCK;
}

/** CPU time (user + system, all threads) a process has used so far, in ms. */
export function cpuMs(pid: number): number {
  return statCpuMs(`/proc/${pid}/stat`);
}

/**
 * CPU ms (user + system) of a process's main thread, and the sum of its other threads (V8's
 * compiler and collector threads, libuv's pool, LMDB's): where a proxy's CPU goes besides its
 * event loop. Zero for a process that is gone; a thread that ended between two readings takes its
 * time with it (cpuMs, from the process's own line, keeps it), so compare readings of processes
 * whose threads live as long as they do (Node's and LMDB's do).
 */
export function threadCpuMs(pid: number): { main: number; others: number } {
  let main = 0;
  let others = 0;
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return { main, others };
  }
  for (const tid of tids) {
    const ms = statCpuMs(`/proc/${pid}/task/${tid}/stat`); // 0 for a thread that ended meanwhile
    if (Number(tid) === pid) main += ms;
    else others += ms;
  }
  return { main, others };
}

/** Pids whose parent is `pid` (cluster workers of a primary). */
export function childPids(pid: number): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const text = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(text.slice(text.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) found.push(Number(entry));
    } catch { /* gone meanwhile */ }
  }
  return found;
}

export function machine(): string {
  let model = cpus()[0]?.model ?? 'unknown CPU';
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    if (m) model = m[1]!.trim();
  } catch { /* not Linux */ }
  let mem = '';
  try {
    const m = /^MemTotal:\s+(\d+) kB/m.exec(readFileSync('/proc/meminfo', 'utf8'));
    if (m) mem = `, ${(Number(m[1]) / 1024 / 1024).toFixed(1)} GiB RAM`;
  } catch { /* not Linux */ }
  let load = '';
  try {
    load = `, load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`;
  } catch { /* not Linux */ }
  return `${model}, ${cpus().length} cores${mem}, Node ${process.version}, ${process.platform} ${process.arch}${load}`;
}

// ── the servers under test ───────────────────────────────────────────────────

/**
 * The mock provider as its own process: the built module's direct execution, which runs
 * `startMockProvider({ port, host, record: false })` (src/mock/provider.ts). Plain compiled
 * JavaScript, like tollgate: under tsx a process carries ≈ 32 MB more RSS (tsx's loader
 * thread), which would skew the memory rows.
 */
export function startMock(): Promise<Server> {
  return spawnServer('mock provider', [join(ROOT, 'dist', 'mock', 'provider.js'), '--host', HOST, '--port', '0']);
}

/** bench/bare-proxy.ts compiled to plain JavaScript (bench/.build/) for the same reason: the script's path. */
export async function bareProxyScript(): Promise<string> {
  const { build } = await import('esbuild');
  const outfile = join(BENCH_DIR, '.build', 'bare-proxy.mjs');
  await build({ entryPoints: [join(BENCH_DIR, 'bare-proxy.ts')], outfile, platform: 'node', format: 'esm', target: 'node20', logLevel: 'error' });
  return outfile;
}

/** The bare proxy (bench/bare-proxy.ts) in front of `upstream`. */
export async function startBareProxy(upstream: string, connections = 1024, nodeFlags: string[] = []): Promise<Server> {
  return spawnServer('bare proxy', [...nodeFlags, await bareProxyScript(), upstream, String(connections)]);
}

export interface Tollgate extends Server {
  /** A credit key with a large balance and no rpm limit. */
  key: string;
  /** Serving processes: the process itself, or the cluster workers. */
  workerPids: number[];
  /** The LMDB environment's directory. */
  dataDir: string;
}

export interface TollgateOptions {
  /** Node flags placed before the CLI, such as --cpu-prof. */
  nodeFlags?: string[];
  /** Another build's `dist/cli/main.js` (to compare with an earlier commit); default this checkout's. */
  cli?: string;
  /** The config's `limits` section (for example a larger `upstreamConnections`). */
  limits?: Record<string, number>;
  /** Run this executable (the single binary, dist/tollgate) instead of `node dist/cli/main.js`. */
  executable?: string;
  /** More environment for the key's creation and the server (TOLLGATE_REDIS_URL: the Redis backend). */
  env?: NodeJS.ProcessEnv;
}

/**
 * Writes the bench's config to `file`: both providers on the mock, the bench's two models at
 * their prices, and `extra` sections (limits, log, storage) over them.
 */
export function writeBenchConfig(file: string, mockUrl: string, extra: Record<string, unknown> = {}): void {
  writeFileSync(file, JSON.stringify({
    server: { host: HOST, port: 0 },
    providers: {
      openai: { baseUrl: `${mockUrl}/v1`, auth: 'bearer', apiKeyEnv: 'OPENAI_API_KEY' },
      anthropic: { baseUrl: `${mockUrl}/v1`, auth: 'x-api-key', apiKeyEnv: 'ANTHROPIC_API_KEY' },
    },
    catalogProvider: { openai: 'openai', anthropic: 'anthropic' },
    models: {
      [MODEL]: { provider: 'openai', endpoints: ['chat', 'responses'], price: { input: 0.15, output: 0.6, cachedInput: 0.075 } },
      [MESSAGES_MODEL]: { provider: 'anthropic', endpoints: ['messages'], price: { input: 1, output: 5 } },
    },
    ...extra,
  }, null, 2));
}

/**
 * A temporary config pointing both providers at the mock, a data directory, a credit key made
 * with the real CLI ($1,000,000 balance, no rpm limit), and `tollgate serve` on port 0.
 */
export async function startTollgate(name: string, mockUrl: string, workers: number, options: TollgateOptions = {}): Promise<Tollgate> {
  const { nodeFlags = [], limits, executable } = options;
  // The binary is its own Node.js: no node flags, no script.
  const cli = executable ? [] : [options.cli ?? CLI];
  const dir = tempDir('tollgate-bench-');
  const configFile = join(dir, 'tollgate.config.json');
  const dataDir = join(dir, 'data');
  writeBenchConfig(configFile, mockUrl, {
    ...(limits ? { limits } : {}),
    // BENCH_ACCESS_LOG=off: the access log's cost, measured by running with and without it.
    ...(process.env.BENCH_ACCESS_LOG === 'off' ? { log: { access: false } } : {}),
    // BENCH_FSYNC=commit: every group commit flushed to disk before its answers (storage.fsync).
    ...(process.env.BENCH_FSYNC ? { storage: { fsync: process.env.BENCH_FSYNC } } : {}),
  });
  const common = ['--config', configFile, '--data', dataDir];
  const created = JSON.parse(await runNode([...cli, 'keys', 'create', '--mode', 'credit', '--balance', '1000000', '--json', ...common], options.env ?? {}, executable)) as { key: string };
  const args = [...(executable ? [] : nodeFlags), ...cli, 'serve', ...common, '--host', HOST, '--port', '0'];
  if (workers > 1) args.push('--workers', String(workers));
  const env = { OPENAI_API_KEY: 'sk-bench-openai', ANTHROPIC_API_KEY: 'sk-bench-anthropic', TOLLGATE_QUIET: '1', ...options.env };
  const server = await spawnServer(name, args, env, undefined, executable);
  let workerPids = [server.pid];
  if (workers > 1) {
    workerPids = childPids(server.pid);
    for (const pid of workerPids) trackPid(pid);
    if (workerPids.length !== workers) throw new Error(`${name}: expected ${workers} worker processes, found ${workerPids.length}`);
  }
  return { ...server, key: created.key, workerPids, dataDir };
}

// ── load generation ──────────────────────────────────────────────────────────

export interface LoadResult {
  /** 2xx responses per second over the run. */
  rps: number;
  /** Latency percentiles of 2xx responses, in ms (µs precision, from autocannon's per-response timing). */
  p50: number;
  p99: number;
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  elapsedSec: number;
}

/**
 * One autocannon run. Its own histogram keeps whole milliseconds, useless at concurrency 1, so
 * latencies are taken from the per-response event (fractional ms from process.hrtime).
 */
/** `rate`: requests per second offered in all (autocannon's overallRate); default as fast as the connections go. */
export function load(url: string, path: string, key: string | null, body: string, connections: number, durationSec: number, rate?: number): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    let latencies = new Float64Array(65536);
    let n = 0;
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (key !== null) headers.authorization = `Bearer ${key}`;
    const started = process.hrtime.bigint();
    const instance = autocannon({
      url: url + path,
      method: 'POST',
      headers,
      body,
      connections,
      duration: durationSec,
      pipelining: 1,
      timeout: 10,
      ...(rate !== undefined ? { overallRate: rate } : {}),
    }, (err, result) => {
      if (err) return reject(err);
      const elapsedSec = Number(process.hrtime.bigint() - started) / 1e9;
      const sorted = latencies.subarray(0, n).sort();
      resolve({
        rps: n / elapsedSec,
        p50: quantile(sorted, 0.5),
        p99: quantile(sorted, 0.99),
        ok: n,
        non2xx: result.non2xx,
        errors: result.errors,
        timeouts: result.timeouts,
        elapsedSec,
      });
    });
    instance.on('response', (_client: unknown, statusCode: number, _bytes: number, ms: number) => {
      if (statusCode < 200 || statusCode > 299) return;
      if (n === latencies.length) {
        const bigger = new Float64Array(latencies.length * 2);
        bigger.set(latencies);
        latencies = bigger;
      }
      latencies[n++] = ms;
    });
  });
}

// ── streaming client ─────────────────────────────────────────────────────────

export interface StreamTiming {
  /** ms from sending the request to the first body byte (the first SSE event). */
  ttfb: number;
  /** ms from sending the request to the end of the response. */
  ttlb: number;
  bytes: number;
}

/**
 * A keep-alive client for sequential streamed requests, timing each with process.hrtime from
 * dispatch to the first body byte and to completion (undici's raw handler, no stream objects).
 */
export class StreamClient {
  private readonly client: Client;
  private readonly headers: Record<string, string>;

  constructor(readonly url: string, key: string | null) {
    this.client = new Client(url, { pipelining: 1, headersTimeout: 10_000, bodyTimeout: 10_000, keepAliveTimeout: 60_000 });
    this.headers = { 'content-type': 'application/json', accept: 'text/event-stream' };
    if (key !== null) this.headers.authorization = `Bearer ${key}`;
  }

  /** One streamed request; with `keep`, the body text is returned too (for checks). */
  request(path: string, body: string, keep = false): Promise<StreamTiming & { status: number; text: string }> {
    return new Promise((resolve, reject) => {
      const t0 = process.hrtime.bigint();
      let first = 0n;
      let bytes = 0;
      let status = 0;
      const parts: Buffer[] = [];
      this.client.dispatch({ path, method: 'POST', headers: this.headers, body }, {
        onConnect() {},
        onHeaders(statusCode: number) {
          status = statusCode;
          return true;
        },
        onData(chunk: Buffer) {
          if (first === 0n) first = process.hrtime.bigint();
          bytes += chunk.length;
          if (keep) parts.push(chunk);
          return true;
        },
        onComplete() {
          const end = process.hrtime.bigint();
          if (first === 0n) first = end;
          resolve({
            ttfb: Number(first - t0) / 1e6,
            ttlb: Number(end - t0) / 1e6,
            bytes,
            status,
            text: keep ? Buffer.concat(parts).toString('utf8') : '',
          });
        },
        onError(err: Error) {
          reject(err);
        },
      });
    });
  }

  close(): Promise<void> {
    return this.client.close();
  }
}

/** A plain (non-streamed) request for checks. */
export async function postJson(url: string, path: string, key: string | null, body: string): Promise<{ status: number; text: string; headers: Headers }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (key !== null) headers.authorization = `Bearer ${key}`;
  const res = await fetch(url + path, { method: 'POST', headers, body, signal: AbortSignal.timeout(10_000) });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

// ── numbers ─────────────────────────────────────────────────────────────────

/** Nearest-rank quantile of an ascending array (NaN when empty). */
export function quantile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i]!;
}

export function median(values: number[]): number {
  if (values.length === 0) return NaN;
  const s = Float64Array.from(values).sort();
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

export function cores(): number {
  return cpus().length;
}
