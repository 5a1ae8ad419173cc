/**
 * Memory soak: does tollgate's memory stay flat under a long run, and what does an open stream
 * cost? Two parts, each with its own fresh mock provider and tollgate process:
 *
 *   1. BENCH_SOAK_REQUESTS (default 1,000,000) non-streamed chat calls through one tollgate
 *      process at c = BENCH_SOAK_CONNECTIONS (32), in slices; VmRSS / RssAnon / RssFile sampled
 *      every second. Reported: memory once settled after the warm-up slice, at the end, and the
 *      difference; every answer must be 2xx and the balance must have dropped by exactly
 *      (requests × the per-call cost), the billed count matching.
 *   2. BENCH_SOAK_STREAMS (default 2,000) streamed chat calls opened at once (30 content deltas:
 *      33 events and [DONE], 500 ms apart, so each stays open ≈ 16.5 s). Once every stream has
 *      its first bytes, tollgate's and the mock's memory is compared with before; then all
 *      must complete and be billed, and
 *      memory is read again once tollgate's idle upstream connections have closed. Repeated
 *      BENCH_SOAK_STREAM_ROUNDS times (default 2): what a burst leaves behind must not add up.
 *
 *   node --import tsx bench/soak.ts              full run (≈ 5 min on 2 cores)
 *   node --import tsx bench/soak.ts --quick      100,000 requests (≈ 3 min with the streams)
 *   … --only=requests | --only=streams           one part only
 *
 * Environment: BENCH_SOAK_REQUESTS, BENCH_SOAK_WARMUP (requests in the warm-up slice, default
 * min(100,000, requests / 5); later slices are the same size), BENCH_SOAK_CONNECTIONS,
 * BENCH_SOAK_STREAMS, BENCH_SOAK_STREAM_ROUNDS, BENCH_SOAK_MAX_GROWTH_MB (RssAnon growth allowed
 * after warm-up, default 5), BENCH_SOAK_SAMPLES (a CSV file for part 1's 1 s memory samples).
 * Progress goes to stderr, the table to stdout; the exit code is non-zero when a check failed.
 */
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import { Pool } from 'undici';
import {
  CHAT_PATH, guardChildren, machine, MODEL, PLAIN_BODY, postJson, procStatus,
  runMain, startMock, startTollgate, stopAll, type Server, type Tollgate,
} from './lib.js';

// ── settings ────────────────────────────────────────────────────────────────

const quick = process.argv.includes('--quick') || process.env.BENCH_QUICK === '1';
const onlyArg = process.argv.find((a) => a.startsWith('--only='))?.slice('--only='.length);
if (onlyArg !== undefined && onlyArg !== 'requests' && onlyArg !== 'streams') throw new Error(`--only must be 'requests' or 'streams', got '${onlyArg}'`);

function envInt(name: string, fallback: number, min: number): number {
  const text = process.env[name];
  if (text === undefined || text === '') return fallback;
  const n = Number(text.replaceAll('_', ''));
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer ≥ ${min} (got '${text}')`);
  return n;
}

const requests = envInt('BENCH_SOAK_REQUESTS', quick ? 100_000 : 1_000_000, 1_000);
const settings = {
  requests,
  warmup: Math.min(requests, envInt('BENCH_SOAK_WARMUP', Math.min(100_000, Math.round(requests / 5)), 100)),
  connections: envInt('BENCH_SOAK_CONNECTIONS', 32, 1),
  streams: envInt('BENCH_SOAK_STREAMS', 2_000, 1),
  streamRounds: envInt('BENCH_SOAK_STREAM_ROUNDS', 2, 1),
  maxGrowthMb: envInt('BENCH_SOAK_MAX_GROWTH_MB', 5, 0),
  runRequests: onlyArg !== 'streams',
  runStreams: onlyArg !== 'requests',
};

const STREAM_CHUNKS = 30;
const STREAM_DELAY_MS = 500;
const SOAK_STREAM_BODY = JSON.stringify({
  model: MODEL,
  messages: [{ role: 'user', content: 'Say hi.' }],
  stream: true,
  stream_options: { include_usage: true },
  mock: { chunks: STREAM_CHUNKS, chunkDelayMs: STREAM_DELAY_MS },
});
const WARM_STREAM_BODY = JSON.stringify({
  model: MODEL,
  messages: [{ role: 'user', content: 'Say hi.' }],
  stream: true,
  stream_options: { include_usage: true },
  mock: { chunks: STREAM_CHUNKS },
});

/** MODEL's prices in the harness's config (bench/lib.ts), in USD per million tokens, and the same per token in nano-USD. */
const PRICE = { input: 0.15, output: 0.6 };
const PRICE_NANO = { input: 150, output: 600 };

function progress(text: string): void {
  process.stderr.write(`${text}\n`);
}

const failures: string[] = [];
function check(ok: boolean, what: string): boolean {
  if (!ok) failures.push(what);
  return ok;
}

// ── processes ───────────────────────────────────────────────────────────────

type Gate = Tollgate;

/**
 * `tollgate serve` as the main harness starts it (bench/lib.ts), with the upstream pool raised
 * from its default of 256 connections per provider so that every one of the concurrent streams
 * of part 2 gets its own upstream connection instead of queueing for a free one.
 */
function startGate(name: string, mockUrl: string): Promise<Gate> {
  return startTollgate(name, mockUrl, 1, { limits: { upstreamConnections: Math.max(256, settings.streams + 64) } });
}

interface Mem {
  rss: number;
  anon: number;
  file: number;
  hwm: number;
}

/** Memory of a process in MB (from kB in /proc/PID/status). */
function mem(pid: number): Mem {
  const s = procStatus(pid);
  return { rss: (s.VmRSS ?? NaN) / 1024, anon: (s.RssAnon ?? NaN) / 1024, file: (s.RssFile ?? NaN) / 1024, hwm: (s.VmHWM ?? NaN) / 1024 };
}

function openFds(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return NaN;
  }
}

/** The soft limit on open files of a process (Node raises its own soft limit to the hard one at start). */
function fdLimit(pid: number | 'self'): number {
  try {
    const m = /^Max open files\s+(\S+)/m.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'));
    return m?.[1] === 'unlimited' ? Infinity : Number(m?.[1]);
  } catch {
    return NaN;
  }
}

function dirBytes(dir: string): number {
  let total = 0;
  for (const name of readdirSync(dir)) {
    const st = statSync(join(dir, name));
    total += st.isDirectory() ? dirBytes(join(dir, name)) : st.size;
  }
  return total;
}

// ── usage API ───────────────────────────────────────────────────────────────

interface Billing {
  balanceNano: number;
  /** Requests counted in the daily totals (today and yesterday: a run may cross midnight UTC). */
  count: number;
  costNano: number;
  newest: { status: number; costNanoUsd: number | null; inputTokens: number; outputTokens: number; stream: boolean } | undefined;
}

async function billing(gate: Gate): Promise<Billing> {
  const res = await fetch(`${gate.url}/usage/api?limit=1&days=2`, { headers: { authorization: `Bearer ${gate.key}` }, signal: AbortSignal.timeout(30_000) });
  if (res.status !== 200) throw new Error(`GET /usage/api answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
  const body = (await res.json()) as {
    key: { balanceNanoUsd: number };
    requests: Billing['newest'][];
    daily: { requests: number; costNanoUsd: number }[];
  };
  return {
    balanceNano: body.key.balanceNanoUsd,
    count: body.daily.reduce((n, d) => n + d.requests, 0),
    costNano: body.daily.reduce((n, d) => n + d.costNanoUsd, 0),
    newest: body.requests[0],
  };
}

/** Polls the usage API until `count` requests are billed (records may land just after the answer). */
async function billingAtLeast(gate: Gate, count: number, timeoutMs = 30_000): Promise<Billing> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const b = await billing(gate);
    if (b.count >= count || Date.now() > deadline) return b;
    await sleep(250);
  }
}

/** One plain chat call, checked, to learn the per-call cost from the answer's usage. */
async function perCallCost(gate: Gate): Promise<number> {
  const res = await postJson(gate.url, CHAT_PATH, gate.key, PLAIN_BODY);
  const json = res.status === 200 ? JSON.parse(res.text) as { usage?: { prompt_tokens?: number; completion_tokens?: number } } : undefined;
  const input = json?.usage?.prompt_tokens;
  const output = json?.usage?.completion_tokens;
  if (typeof input !== 'number' || typeof output !== 'number') throw new Error(`check call answered ${res.status}: ${res.text.slice(0, 300)}`);
  const cost = input * PRICE_NANO.input + output * PRICE_NANO.output;
  const b = await billingAtLeast(gate, 1);
  if (b.newest?.costNanoUsd !== cost) throw new Error(`check call billed ${b.newest?.costNanoUsd} nUSD, expected ${input}×${PRICE_NANO.input} + ${output}×${PRICE_NANO.output} = ${cost}`);
  return cost;
}

// ── part 1: a million requests ──────────────────────────────────────────────

interface SliceResult {
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  /** From the slice's start to its last 2xx answer (autocannon reports the end on its 1 s tick). */
  sec: number;
}

function slice(url: string, key: string, amount: number, onOk: () => void): Promise<SliceResult> {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    let last = started;
    let ok = 0;
    // `amount`: autocannon spreads exactly this many requests over the connections, then stops.
    const options = {
      url: url + CHAT_PATH,
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: PLAIN_BODY,
      connections: Math.min(settings.connections, amount),
      pipelining: 1,
      timeout: 10,
      amount,
    };
    const instance = autocannon(options, (err, result) => {
      if (err) return reject(err);
      resolve({ ok, non2xx: result.non2xx, errors: result.errors, timeouts: result.timeouts, sec: Number(last - started) / 1e9 });
    });
    instance.on('response', (_client: unknown, statusCode: number) => {
      if (statusCode >= 200 && statusCode <= 299) {
        ok++;
        last = process.hrtime.bigint();
        onOk();
      }
    });
  });
}

interface Sample extends Mem {
  sec: number;
  done: number;
  slice: number;
}

interface SliceReport {
  /** 2xx answers so far, at the end of the slice. */
  done: number;
  rps: number;
  /** Memory right after the slice's last answer. */
  end: Mem;
  /** Over the 1 s samples taken while the slice ran. */
  anonMin: number;
  anonMedian: number;
  anonMax: number;
  rssMedian: number;
  samples: number;
}

interface RequestsReport {
  total: number;
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  sec: number;
  slices: SliceReport[];
  perCall: number;
  balanceDrop: number;
  billedCount: number;
  billedCost: number;
  dataMb: number;
}

function median(values: number[]): number {
  const s = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

async function partRequests(): Promise<RequestsReport> {
  const mock = await startMock();
  const gate = await startGate('tollgate', mock.url);
  progress(`part 1: tollgate pid ${gate.pid} at ${gate.url}, mock pid ${mock.pid}`);
  const perCall = await perCallCost(gate);
  const before = await billing(gate);

  let done = 0;
  let sliceNo = 0;
  const samples: Sample[] = [];
  const t0 = process.hrtime.bigint();
  const sampler = setInterval(() => {
    samples.push({ sec: Number(process.hrtime.bigint() - t0) / 1e9, done, slice: sliceNo, ...mem(gate.pid) });
  }, 1000);

  const total = { ok: 0, non2xx: 0, errors: 0, timeouts: 0 };
  const slices: SliceReport[] = [];
  try {
    for (let sent = 0, amount = 0; sent < settings.requests; sent += amount, sliceNo++) {
      amount = Math.min(settings.warmup, settings.requests - sent);
      const r = await slice(gate.url, gate.key, amount, () => done++);
      const m = mem(gate.pid);
      total.ok += r.ok;
      total.non2xx += r.non2xx;
      total.errors += r.errors;
      total.timeouts += r.timeouts;
      const during = samples.filter((x) => x.slice === sliceNo);
      const anons = [...during.map((x) => x.anon), m.anon];
      const sr: SliceReport = {
        done,
        rps: r.ok / r.sec,
        end: m,
        anonMin: Math.min(...anons),
        anonMedian: median(anons),
        anonMax: Math.max(...anons),
        rssMedian: median([...during.map((x) => x.rss), m.rss]),
        samples: anons.length,
      };
      slices.push(sr);
      progress(`  ${done.toLocaleString('en-US').padStart(9)} done  ${(r.ok / r.sec).toFixed(0).padStart(6)} req/s  RSS ${m.rss.toFixed(1)} MB  anon ${m.anon.toFixed(1)} MB ` +
        `(slice ${sr.anonMin.toFixed(1)}…${sr.anonMax.toFixed(1)}, median ${sr.anonMedian.toFixed(1)})  file ${m.file.toFixed(1)} MB` +
        (r.non2xx || r.errors || r.timeouts ? `  (${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts)` : ''));
      if (r.ok < amount && r.non2xx + r.errors + r.timeouts === 0) throw new Error(`a slice of ${amount} answered only ${r.ok}`);
      if (total.non2xx + total.errors + total.timeouts > 1000) throw new Error('more than 1,000 failed requests; stopping');
    }
  } finally {
    clearInterval(sampler);
    const file = process.env.BENCH_SOAK_SAMPLES;
    if (file) writeFileSync(file, `sec,done,vmrss_mb,rssanon_mb,rssfile_mb,vmhwm_mb\n${samples.map((x) => `${x.sec.toFixed(1)},${x.done},${x.rss},${x.anon},${x.file},${x.hwm}`).join('\n')}\n`);
  }
  const sec = Number(process.hrtime.bigint() - t0) / 1e9;
  const after = await billingAtLeast(gate, before.count + total.ok);
  const report: RequestsReport = {
    total: settings.requests,
    ...total,
    sec,
    slices,
    perCall,
    balanceDrop: before.balanceNano - after.balanceNano,
    billedCount: after.count - before.count,
    billedCost: after.costNano - before.costNano,
    dataMb: dirBytes(gate.dataDir) / 1024 / 1024,
  };
  check(report.ok === settings.requests, `part 1: ${report.ok} of ${settings.requests} requests answered 2xx`);
  check(report.non2xx + report.errors + report.timeouts === 0, `part 1: ${report.non2xx} non-2xx, ${report.errors} errors, ${report.timeouts} timeouts`);
  check(report.billedCount === settings.requests, `part 1: ${report.billedCount} requests billed, expected ${settings.requests}`);
  check(report.balanceDrop === settings.requests * perCall, `part 1: balance dropped by ${report.balanceDrop} nUSD, expected ${settings.requests} × ${perCall} = ${settings.requests * perCall}`);
  check(report.billedCost === settings.requests * perCall, `part 1: daily totals show ${report.billedCost} nUSD, expected ${settings.requests * perCall}`);
  const growth = anonGrowth(report);
  check(!(growth > settings.maxGrowthMb), `part 1: RssAnon (slice median) grew by ${growth.toFixed(1)} MB after warm-up (allowed ${settings.maxGrowthMb} MB)`);
  await stopAll();
  return report;
}

/**
 * Growth of private memory after warm-up: the median of the 1 s RssAnon samples over the last
 * slice minus that over the slice right after the warm-up one. A median over a slice is not
 * at the mercy of where V8's collection cycle happens to be at one instant (a single reading
 * moves by ±10 MB between a young-generation fill and a mark-compact); a leak raises it.
 */
function anonGrowth(r: RequestsReport): number {
  if (r.slices.length < 3) return NaN;
  return r.slices[r.slices.length - 1]!.anonMedian - r.slices[1]!.anonMedian;
}

// ── part 2: concurrent open streams ─────────────────────────────────────────

interface StreamState {
  status: number;
  first: number;
  done: boolean;
  error: string;
  text: string;
}

/** Dispatches one streamed call on `pool`; `onFirst` runs at its first body bytes. */
function stream(pool: Pool, key: string, body: string, onFirst: () => void, keepText: boolean): { state: StreamState; finished: Promise<void> } {
  const state: StreamState = { status: 0, first: 0, done: false, error: '', text: '' };
  const finished = new Promise<void>((resolve) => {
    pool.dispatch({
      path: CHAT_PATH,
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${key}` },
      body,
    }, {
      onConnect() {},
      onHeaders(statusCode: number) {
        state.status = statusCode;
        return true;
      },
      onData(chunk: Buffer) {
        if (state.first === 0) {
          state.first = performance.now();
          onFirst();
        }
        if (keepText) state.text += chunk.toString('utf8');
        return true;
      },
      onComplete() {
        state.done = true;
        resolve();
      },
      onError(err: Error) {
        state.error = err.message;
        resolve();
      },
    });
  });
  return { state, finished };
}

function streamIsWhole(s: StreamState): boolean {
  const deltas = (s.text.match(/"delta":\{"content":/g) ?? []).length;
  return s.status === 200 && s.done && deltas === STREAM_CHUNKS && s.text.includes('"usage":{') && s.text.endsWith('data: [DONE]\n\n');
}

interface StreamRound {
  gateBefore: Mem;
  gateOpen: Mem;
  gatePeak: Mem;
  gateAfter: Mem;
  mockBefore: Mem;
  mockOpen: Mem;
  fdsBefore: number;
  fdsOpen: number;
  fdsAfter: number;
  /** From dispatch until every stream had its first bytes. */
  openSec: number;
  /** From dispatch until every stream ended. */
  streamSec: number;
  /** From the end of the streams to the `gateAfter` reading. */
  afterSec: number;
  whole: number;
  errors: string[];
}

interface StreamsReport {
  n: number;
  limits: { 'this process': number; tollgate: number; mock: number };
  rounds: StreamRound[];
  billedCount: number;
  balanceDrop: number;
  perCall: number;
}

/**
 * One burst: `n` streams dispatched at once, memory read once every stream has its first
 * bytes, then (after they all ended) once tollgate's idle upstream connections have closed.
 */
async function streamRound(gate: Gate, mock: Server, n: number, round: number): Promise<StreamRound> {
  const gateBefore = mem(gate.pid);
  const mockBefore = mem(mock.pid);
  const fdsBefore = openFds(gate.pid);
  progress(`  round ${round}: before: tollgate RSS ${gateBefore.rss.toFixed(1)} MB, anon ${gateBefore.anon.toFixed(1)} MB, ${fdsBefore} fds; mock RSS ${mockBefore.rss.toFixed(1)} MB`);
  progress(`  round ${round}: opening ${n} streams (${STREAM_CHUNKS} events, ${STREAM_DELAY_MS} ms apart)`);
  const pool = new Pool(gate.url, { connections: n, pipelining: 1, headersTimeout: 60_000, bodyTimeout: 60_000, connect: { timeout: 30_000 } });
  let firstBytes = 0;
  let allFirst: () => void = () => {};
  const allOpen = new Promise<void>((resolve) => (allFirst = resolve));
  const t0 = performance.now();
  const streams = Array.from({ length: n }, () => stream(pool, gate.key, SOAK_STREAM_BODY, () => {
    if (++firstBytes === n) allFirst();
  }, true));
  const everyoneDone = Promise.all(streams.map((s) => s.finished));
  let gatePeak = mem(gate.pid);
  const peakSampler = setInterval(() => {
    const m = mem(gate.pid);
    if (m.anon > gatePeak.anon) gatePeak = m;
  }, 250);
  try {
    const timedOut = await Promise.race([allOpen.then(() => false), everyoneDone.then(() => firstBytes < n), sleep(60_000).then(() => true)]);
    const openSec = (performance.now() - t0) / 1000;
    if (timedOut) throw new Error(`only ${firstBytes} of ${n} streams received their first bytes within ${openSec.toFixed(1)} s; errors: ${[...new Set(streams.map((s) => s.state.error).filter(Boolean))].slice(0, 5).join('; ')}`);
    // A moment past the first event, so that every stream holds its steady-state buffers.
    await sleep(1_000);
    const gateOpen = mem(gate.pid);
    const mockOpen = mem(mock.pid);
    const fdsOpen = openFds(gate.pid);
    progress(`  round ${round}: all ${n} open after ${openSec.toFixed(1)} s: tollgate RSS ${gateOpen.rss.toFixed(1)} MB, anon ${gateOpen.anon.toFixed(1)} MB, ${fdsOpen} fds; mock RSS ${mockOpen.rss.toFixed(1)} MB`);
    const bound = STREAM_CHUNKS * STREAM_DELAY_MS + 60_000;
    const finishedInTime = await Promise.race([everyoneDone.then(() => true), sleep(bound).then(() => false)]);
    const streamSec = (performance.now() - t0) / 1000;
    clearInterval(peakSampler);
    if (!finishedInTime) progress(`  round ${round}: not all streams finished within ${(bound / 1000).toFixed(0)} s`);
    await pool.close().catch(() => pool.destroy());
    const whole = streams.filter((s) => streamIsWhole(s.state)).length;
    const errors = [...new Set(streams.map((s) => s.state.error || (streamIsWhole(s.state) ? '' : `status ${s.state.status}, done ${s.state.done}`)).filter(Boolean))];
    progress(`  round ${round}: all ended after ${streamSec.toFixed(1)} s, ${whole} whole; waiting for the idle upstream connections to close`);
    // The upstream pool keeps idle connections for its 30 s keep-alive: wait until tollgate's
    // sockets are back to where they were, so what remains is memory not given back.
    const closedBy = performance.now() + 45_000;
    while (openFds(gate.pid) > fdsBefore + 8 && performance.now() < closedBy) await sleep(500);
    await sleep(1_000);
    const gateAfter = mem(gate.pid);
    const fdsAfter = openFds(gate.pid);
    const afterSec = (performance.now() - t0) / 1000 - streamSec;
    progress(`  round ${round}: ${afterSec.toFixed(0)} s after the last stream ended: tollgate RSS ${gateAfter.rss.toFixed(1)} MB, anon ${gateAfter.anon.toFixed(1)} MB, ${fdsAfter} fds`);
    return { gateBefore, gateOpen, gatePeak, gateAfter, mockBefore, mockOpen, fdsBefore, fdsOpen, fdsAfter, openSec, streamSec, afterSec, whole, errors };
  } finally {
    clearInterval(peakSampler);
    await pool.destroy().catch(() => {});
  }
}

async function partStreams(): Promise<StreamsReport> {
  const n = settings.streams;
  const mock = await startMock();
  const gate = await startGate('tollgate', mock.url);
  progress(`part 2: tollgate pid ${gate.pid} at ${gate.url}, mock pid ${mock.pid}`);
  const limits = { 'this process': fdLimit('self'), tollgate: fdLimit(gate.pid), mock: fdLimit(mock.pid) };
  // Open files: tollgate holds a client socket and an upstream socket per stream, the mock and
  // this process one each, plus what they hold anyway.
  const need = { 'this process': n + 256, tollgate: 2 * n + 256, mock: n + 256 };
  progress(`  open-file limits (soft): this process ${limits['this process']}, tollgate ${limits.tollgate}, mock ${limits.mock}; needed ≈ ${need['this process']} / ${need.tollgate} / ${need.mock}`);
  for (const [who, have] of Object.entries(limits) as [keyof typeof need, number][]) {
    if (!(have >= need[who])) {
      throw new Error(`the open-file limit of ${who} (${have}) is below the ≈ ${need[who]} needed: run \`ulimit -n ${Math.max(65_536, 2 * need.tollgate)}\` in the shell first ` +
        '(children inherit it; Node raises its soft limit to the hard one by itself, and raising the hard limit, `ulimit -Hn`, needs root)');
    }
  }
  const perCall = await perCallCost(gate);

  // Warm-up: the streamed path compiled, at concurrency 4 (so at most 4 idle upstream
  // connections remain in the pool and are reused by the measured streams).
  progress('  warm-up: 600 streams at c=4, no delay');
  {
    const warm = new Pool(gate.url, { connections: 4, pipelining: 1, headersTimeout: 30_000, bodyTimeout: 30_000 });
    let next = 0;
    let bad = 0;
    const worker = async (): Promise<void> => {
      while (next < 600) {
        next++;
        const s = stream(warm, gate.key, WARM_STREAM_BODY, () => {}, true);
        await s.finished;
        if (!streamIsWhole(s.state)) bad++;
      }
    };
    await Promise.all([worker(), worker(), worker(), worker()]);
    await warm.close();
    if (bad) throw new Error(`warm-up: ${bad} of 600 streams were not whole`);
  }
  await sleep(2_000);
  const before = await billing(gate);
  const rounds: StreamRound[] = [];
  for (let i = 1; i <= settings.streamRounds; i++) {
    const r = await streamRound(gate, mock, n, i);
    rounds.push(r);
    check(r.whole === n, `part 2, round ${i}: ${r.whole} of ${n} streams complete and whole (${r.errors.slice(0, 3).join('; ')})`);
  }
  const expected = n * rounds.length;
  const after = await billingAtLeast(gate, before.count + expected);
  const report: StreamsReport = {
    n, limits, rounds,
    billedCount: after.count - before.count,
    balanceDrop: before.balanceNano - after.balanceNano,
    perCall,
  };
  check(report.billedCount === expected, `part 2: ${report.billedCount} streams billed, expected ${expected}`);
  check(report.balanceDrop === expected * perCall, `part 2: balance dropped by ${report.balanceDrop} nUSD, expected ${expected} × ${perCall} = ${expected * perCall}`);
  await stopAll();
  return report;
}

// ── the table ───────────────────────────────────────────────────────────────

const int = (n: number): string => Math.round(n).toLocaleString('en-US');
const mb = (n: number): string => (Number.isFinite(n) ? n.toFixed(1) : '–');
const signed = (n: number, digits = 1): string => `${n >= 0 ? '+' : ''}${n.toFixed(digits)}`;

function table(rows: (string | [string, ...string[]])[], widths: number[]): string {
  return rows.map((r) => (typeof r === 'string' ? r : r.map((cell, i) => (i === 0 ? cell.padEnd(widths[0]!) : cell.padStart(widths[i]!))).join(''))).join('\n');
}

function renderRequests(r: RequestsReport): string {
  const line = '─'.repeat(96);
  const warm = r.slices[0]!;
  const settled = r.slices[Math.min(1, r.slices.length - 1)]!;
  const last = r.slices[r.slices.length - 1]!;
  const growth = anonGrowth(r);
  const rows: (string | [string, ...string[]])[] = [
    `── ${int(r.total)} non-streamed chat requests through one tollgate process, c=${settings.connections} `.padEnd(96, '─'),
    ['at the end of a slice (one reading)', `after ${abbrev(warm.done)}`, `end, ${abbrev(last.done)}`, 'difference'],
    ['  VmRSS MB', mb(warm.end.rss), mb(last.end.rss), signed(last.end.rss - warm.end.rss)],
    ['  RssAnon MB (heap and other private memory)', mb(warm.end.anon), mb(last.end.anon), signed(last.end.anon - warm.end.anon)],
    ['  RssFile MB (LMDB map pages, code)', mb(warm.end.file), mb(last.end.file), signed(last.end.file - warm.end.file)],
    ['  VmHWM MB (peak RSS so far)', mb(warm.end.hwm), mb(last.end.hwm), signed(last.end.hwm - warm.end.hwm)],
    ['median of the 1 s samples over a slice', `${abbrev(warm.done)}–${abbrev(settled.done)}`, `${abbrev(r.slices[r.slices.length - 2]?.done ?? 0)}–${abbrev(last.done)}`, ''],
    ['  VmRSS MB', mb(settled.rssMedian), mb(last.rssMedian), signed(last.rssMedian - settled.rssMedian)],
    ['  RssAnon MB', mb(settled.anonMedian), mb(last.anonMedian), signed(growth)],
    ['  RssAnon min…max MB', `${mb(settled.anonMin)}…${mb(settled.anonMax)}`, `${mb(last.anonMin)}…${mb(last.anonMax)}`, ''],
    kv('LMDB data on disk', `${mb(r.dataMb)} MB`),
    line,
    kv('answers 2xx / non-2xx / errors / timeouts', `${int(r.ok)} / ${r.non2xx} / ${r.errors} / ${r.timeouts}`),
    kv('time, mean req/s', `${r.sec.toFixed(0)} s, ${int(r.ok / r.sec)} req/s`),
    kv('requests billed (usage API daily totals)', `${int(r.billedCount)} (expected ${int(r.total)})`),
    kv('balance drop nUSD (usage API)', `${int(r.balanceDrop)} (expected ${int(r.total)} × ${int(r.perCall)} = ${int(r.total * r.perCall)})`),
    line,
    'per slice, up to N answers: RssAnon median (min…max) MB, VmRSS MB at its end, req/s',
    ...r.slices.map((x) => `  ${abbrev(x.done).padStart(6)}  ${mb(x.anonMedian).padStart(6)} (${mb(x.anonMin)}…${mb(x.anonMax)})  ${mb(x.end.rss).padStart(6)}  ${int(x.rps).padStart(6)}`),
  ];
  return table(rows, [46, 18, 18, 14]);
}

function renderStreams(r: StreamsReport): string {
  const line = '─'.repeat(109);
  const d = (a: number, b: number): string => signed(b - a);
  const perK = (a: number, b: number): string => ((b - a) / r.n * 1000).toFixed(1);
  const perOne = (a: number, b: number): string => ((b - a) / r.n * 1024).toFixed(1);
  const rows: (string | [string, ...string[]])[] = [
    `── ${int(r.n)} concurrent open streams (${STREAM_CHUNKS} events ${STREAM_DELAY_MS} ms apart), one tollgate process `.padEnd(109, '─'),
  ];
  r.rounds.forEach((x, i) => {
    const tag = r.rounds.length > 1 ? `round ${i + 1}: ` : '';
    rows.push(
      [`${tag}all open (1 s after the last first byte)`, 'before', 'all open', 'delta', 'MB/1000', 'KB/stream'],
      ['  tollgate VmRSS MB', mb(x.gateBefore.rss), mb(x.gateOpen.rss), d(x.gateBefore.rss, x.gateOpen.rss), perK(x.gateBefore.rss, x.gateOpen.rss), perOne(x.gateBefore.rss, x.gateOpen.rss)],
      ['  tollgate RssAnon MB', mb(x.gateBefore.anon), mb(x.gateOpen.anon), d(x.gateBefore.anon, x.gateOpen.anon), perK(x.gateBefore.anon, x.gateOpen.anon), perOne(x.gateBefore.anon, x.gateOpen.anon)],
      ['  tollgate RssAnon MB, peak while open', mb(x.gateBefore.anon), mb(x.gatePeak.anon), d(x.gateBefore.anon, x.gatePeak.anon), perK(x.gateBefore.anon, x.gatePeak.anon), perOne(x.gateBefore.anon, x.gatePeak.anon)],
      ['  mock VmRSS MB', mb(x.mockBefore.rss), mb(x.mockOpen.rss), d(x.mockBefore.rss, x.mockOpen.rss), perK(x.mockBefore.rss, x.mockOpen.rss), perOne(x.mockBefore.rss, x.mockOpen.rss)],
      ['  mock RssAnon MB', mb(x.mockBefore.anon), mb(x.mockOpen.anon), d(x.mockBefore.anon, x.mockOpen.anon), perK(x.mockBefore.anon, x.mockOpen.anon), perOne(x.mockBefore.anon, x.mockOpen.anon)],
      ['  tollgate open fds', String(x.fdsBefore), String(x.fdsOpen), signed(x.fdsOpen - x.fdsBefore, 0), '', ''],
      [`${tag}${x.afterSec.toFixed(0)} s after the end, sockets closed`, 'before', 'after', 'retained', '', ''],
      ['  tollgate VmRSS MB', mb(x.gateBefore.rss), mb(x.gateAfter.rss), d(x.gateBefore.rss, x.gateAfter.rss), '', ''],
      ['  tollgate RssAnon MB', mb(x.gateBefore.anon), mb(x.gateAfter.anon), d(x.gateBefore.anon, x.gateAfter.anon), '', ''],
      ['  tollgate open fds', String(x.fdsBefore), String(x.fdsAfter), signed(x.fdsAfter - x.fdsBefore, 0), '', ''],
      kv(`${tag}first bytes of all / end of all after`, `${x.openSec.toFixed(1)} s / ${x.streamSec.toFixed(1)} s`),
      kv(`${tag}streams whole (${STREAM_CHUNKS} deltas, usage, [DONE])`, `${int(x.whole)} / ${int(r.n)}`),
    );
  });
  const expected = r.n * r.rounds.length;
  rows.push(
    line,
    kv('streams billed (usage API daily totals)', `${int(r.billedCount)} (expected ${int(expected)})`),
    kv('balance drop nUSD (usage API)', `${int(r.balanceDrop)} (expected ${int(expected)} × ${int(r.perCall)} = ${int(expected * r.perCall)})`),
    kv('open-file limits: this process / tollgate / mock', `${r.limits['this process']} / ${r.limits.tollgate} / ${r.limits.mock}`),
  );
  return table(rows, [50, 10, 12, 16, 10, 11]);
}

function kv(label: string, value: string): string {
  return `${label.padEnd(50)}${value}`;
}

function abbrev(n: number): string {
  if (n >= 1_000_000 && n % 100_000 === 0) return `${n / 1_000_000}M`;
  return n >= 1000 && n % 1000 === 0 ? `${n / 1000}k` : String(n);
}

// ── run ─────────────────────────────────────────────────────────────────────

async function main(): Promise<boolean> {
  // Generous bound: 1,500 req/s would be a very slow box; the streams part takes ≈ 1 min.
  guardChildren(Math.max(600, (settings.runRequests ? settings.requests / 1_500 : 0) + (settings.runStreams ? 60 + 240 * settings.streamRounds : 0)) * 1000);
  const header = [
    `machine: ${machine()}`,
    `command: node --import tsx bench/soak.ts ${process.argv.slice(2).join(' ')}`.trimEnd(),
    `settings: ${int(settings.requests)} requests (warm-up and slices of ${int(settings.warmup)}), c=${settings.connections}; ${int(settings.streams)} streams × ${settings.streamRounds} rounds; model ${MODEL} at ${PRICE.input}/${PRICE.output} USD per M tokens`,
  ];
  progress(header.join('\n'));
  const parts: string[] = [];
  if (settings.runRequests) parts.push(renderRequests(await partRequests()));
  if (settings.runStreams) parts.push(renderStreams(await partStreams()));
  const verdict = failures.length === 0 ? 'all checks passed' : `FAILED:\n${failures.map((f) => `  ${f}`).join('\n')}`;
  process.stdout.write(`${[...header, '', ...parts.flatMap((p) => [p, '']), verdict].join('\n')}\n`);
  return failures.length === 0;
}

await runMain('soak', main);

