/**
 * Streams at the scale of real traffic: many concurrent streams, each event a separate write
 * from the mock, spaced by a few milliseconds (as a provider sends tokens). Used by run.ts (the
 * `streams` scenario) and profile.ts (`--scale`).
 *
 * Each measurement runs on fresh processes (a mock, and the proxy under test), so that the memory
 * an open stream costs shows as growth: a process that already served such a burst keeps its
 * grown heap and would show almost nothing the second time (bench/README.md, memory soak).
 */
import { Pool } from 'undici';
import { CHAT_PATH, cpuMs, envNumber, MODEL, procStatus, startBareProxy, startMock, startTollgate, type Server } from './lib.js';

export interface ScaleSettings {
  /** Streams opened at once. */
  streams: number;
  /** Content deltas per stream (each stream sends events + 4 events: role, finish, usage, [DONE]). */
  events: number;
  /** ms between two events of a stream. */
  gapMs: number;
  /** tollgate's limits.upstreamConnections and the bare proxy's pool size. */
  pool: number;
  /** Streams (20 at a time, short) each fresh target serves before it is measured. */
  warmupStreams: number;
}

/** The streams-at-scale settings from the environment (BENCH_SCALE_*); `quick`: the smoke run's. */
export function scaleSettings(quick: boolean): ScaleSettings {
  const streams = Math.floor(envNumber('BENCH_SCALE_STREAMS', quick ? 200 : 1000, 1));
  return {
    streams,
    events: Math.floor(envNumber('BENCH_SCALE_EVENTS', quick ? 10 : 40, 1)),
    gapMs: envNumber('BENCH_SCALE_GAP_MS', quick ? 20 : 100, 1),
    // Enough connections for every stream by default: the pool limit itself is measured by
    // setting this lower (bench/README.md, provider connections).
    pool: Math.floor(envNumber('BENCH_SCALE_POOL', streams + 64, 1)),
    warmupStreams: scaleWarmupStreams(quick),
  };
}

/**
 * Short streams a fresh target serves before a burst is measured (BENCH_SCALE_WARMUP): enough for
 * the code a request runs once, not per event, to be optimised (see warmScale).
 */
export function scaleWarmupStreams(quick: boolean): number {
  return Math.floor(envNumber('BENCH_SCALE_WARMUP', quick ? 600 : 3000, 0));
}

export function scaleBody(s: Pick<ScaleSettings, 'events' | 'gapMs'>): string {
  return JSON.stringify({
    model: MODEL,
    messages: [{ role: 'user', content: 'Say hi.' }],
    stream: true,
    stream_options: { include_usage: true },
    mock: { chunks: s.events, chunkDelayMs: s.gapMs },
  });
}

export interface ScaleResult {
  ok: number;
  failed: number;
  /** Events the streams carried (content deltas + 4 each). */
  events: number;
  /** Server CPU (user + system) of the serving process over the burst, ms. */
  cpuMs: number;
  /** Most streams open (first byte seen, end not yet) at one memory sample. */
  maxOpen: number;
  /** VmRSS and RssAnon before the burst and their peak while it ran, kB. */
  rssBefore: number;
  rssPeak: number;
  anonBefore: number;
  anonPeak: number;
  /** Per stream: ms from dispatch to the first body byte and to the end. */
  ttfb: number[];
  ttlb: number[];
  wallMs: number;
}

/**
 * Opens `n` streams at once (an undici Pool with `n` connections) and times each; samples the
 * serving process's memory every 25 ms while they run.
 */
export async function runScale(url: string, key: string | null, servingPid: number, body: string, n: number, events: number): Promise<ScaleResult> {
  const pool = new Pool(url, { connections: n, pipelining: 1, headersTimeout: 120_000, bodyTimeout: 120_000, keepAliveTimeout: 60_000 });
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'text/event-stream' };
  if (key !== null) headers.authorization = `Bearer ${key}`;
  const before = procStatus(servingPid);
  const cpuBefore = cpuMs(servingPid);
  let open = 0;
  let maxOpen = 0;
  let rssPeak = before.VmRSS ?? 0;
  let anonPeak = before.RssAnon ?? 0;
  const sample = (): void => {
    const now = procStatus(servingPid);
    rssPeak = Math.max(rssPeak, now.VmRSS ?? 0);
    anonPeak = Math.max(anonPeak, now.RssAnon ?? 0);
    maxOpen = Math.max(maxOpen, open);
  };
  const sampler = setInterval(sample, 25);
  const ttfb: number[] = [];
  const ttlb: number[] = [];
  let ok = 0;
  let failed = 0;
  const t0 = process.hrtime.bigint();
  await Promise.all(Array.from({ length: n }, () => new Promise<void>((resolve) => {
    const start = process.hrtime.bigint();
    let first = 0n;
    let status = 0;
    let tail = '';
    pool.dispatch({ path: CHAT_PATH, method: 'POST', headers, body }, {
      onConnect() {},
      onHeaders(statusCode: number) {
        status = statusCode;
        return true;
      },
      onData(chunk: Buffer) {
        if (first === 0n) {
          first = process.hrtime.bigint();
          open++;
        }
        tail = (tail + chunk.toString('latin1')).slice(-32);
        return true;
      },
      onComplete() {
        const end = process.hrtime.bigint();
        if (first !== 0n) open--;
        if (status === 200 && tail.endsWith('data: [DONE]\n\n')) {
          ok++;
          ttfb.push(Number(first - start) / 1e6);
          ttlb.push(Number(end - start) / 1e6);
        } else failed++;
        resolve();
      },
      onError() {
        if (first !== 0n) open--;
        failed++;
        resolve();
      },
    });
  })));
  const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
  clearInterval(sampler);
  sample();
  const cpu = cpuMs(servingPid) - cpuBefore;
  await pool.close();
  return {
    ok, failed, events: ok * (events + 4), cpuMs: cpu, maxOpen,
    rssBefore: before.VmRSS ?? 0, rssPeak, anonBefore: before.RssAnon ?? 0, anonPeak, ttfb, ttlb, wallMs,
  };
}

export type ScaleTargetId = 'direct' | 'bare' | 'tollgate' | 'baseline';

/** Starts a fresh mock and, for a proxy, a fresh proxy in front of it; `stop` ends both. */
export async function startScaleTarget(id: ScaleTargetId, pool: number, nodeFlags: string[] = [], baselineCli?: string): Promise<{ url: string; key: string | null; pid: number; stop: () => Promise<void> }> {
  const mock = await startMock();
  const servers: Server[] = [mock];
  let url = mock.url;
  let key: string | null = null;
  let pid = mock.pid;
  if (id === 'bare') {
    const bare = await startBareProxy(mock.url, pool, nodeFlags);
    servers.push(bare);
    ({ url, pid } = bare);
  } else if (id === 'tollgate' || id === 'baseline') {
    // 'baseline': another build's CLI (BENCH_SCALE_BASELINE), to compare before and after a change.
    const cli = id === 'baseline' ? baselineCli : undefined;
    const tg = await startTollgate(id, mock.url, 1, { limits: { upstreamConnections: pool }, nodeFlags, ...(cli ? { cli } : {}) });
    servers.push(tg);
    ({ url, pid, key } = tg);
  }
  const stop = async (): Promise<void> => {
    await Promise.all(servers.reverse().map((s) => new Promise<void>((resolve) => {
      if (s.proc.exitCode !== null || s.proc.signalCode !== null) return resolve();
      s.proc.once('exit', () => resolve());
      s.proc.kill('SIGTERM');
    })));
  };
  return { url, key, pid, stop };
}

/**
 * A warm-up on a fresh target, so that the burst measures what a stream costs a process that has
 * served streams before, not the compiler's first look at the code (a one-time cost, which a
 * burst would otherwise charge to its streams): `warmupStreams` short streams in groups of 20,
 * for the paths every stream takes once; then one group of the burst's own shape (its events,
 * its gap: the timers and the writes apart), at most 200 streams, so the memory of a whole burst
 * is not grown yet.
 *
 * The short streams are many because V8 optimises a function once it has run often enough, and
 * the code a request runs once (its head, admission, the commits, the settlement) runs once per
 * stream, not per event. With 200 (the default until 2026-11-28) the 1,000-stream burst was where
 * much of that code was optimised (`--trace-opt`: `handle`, `onRequest`, `admitHolding`,
 * `placeHolds`, `applyRecords`): tollgate made 182–186 optimised compilations in that burst
 * (608–911 ms of compiling), the bare proxy, which has far less such code, 134–137 (453–458 ms).
 * After 3,000: 102 (257 ms) and 82 (222 ms). A process that has served a whole burst compiles
 * little more, which run.ts' second burst shows (bench/README.md, History, 2026-11-28).
 */
export async function warmScale(url: string, key: string | null, pid: number, s: Pick<ScaleSettings, 'streams' | 'events' | 'gapMs' | 'warmupStreams'>): Promise<void> {
  const body = scaleBody({ events: 4, gapMs: 0 });
  for (let done = 0; done < s.warmupStreams; done += 20) await runScale(url, key, pid, body, 20, 4);
  await runScale(url, key, pid, scaleBody(s), Math.min(s.streams, 200), s.events);
}
