/**
 * tollgate benchmark: the mock provider direct, a bare pass-through proxy and tollgate (one
 * process, then --workers 2), each in its own process, measured in alternation and printed as
 * one table with the ratios tollgate / bare. See bench/README.md for how to read it.
 *
 *   npm run bench                 full run (defaults below)
 *   npm run bench -- --quick      smoke run, about 35 s
 *   npm run bench -- --binary     also the single binary (dist/tollgate, `npm run build:binary`),
 *                                 one process, as a fifth target
 *   npm run bench -- --streams    only the streams-at-scale scenario (BENCH_SCENARIOS=streams)
 *   npm run bench -- --plain      only the request scenario (BENCH_SCENARIOS=plain)
 *
 * Then, after the table, tollgate on Redis (bench/redis-row.ts) against the bare proxy, unless
 * BENCH_REDIS=0.
 *
 * Environment: BENCH_DURATION (s per autocannon run), BENCH_ROUNDS, BENCH_CONNECTIONS (comma
 * list), BENCH_STREAM_SAMPLES (streamed requests per target per round), BENCH_WARMUP (s),
 * BENCH_WORKERS (the second tollgate's --workers), BENCH_QUICK=1 (same as --quick),
 * BENCH_BINARY=1 (same as --binary), BENCH_SCENARIOS (plain,streams), BENCH_SCALE_STREAMS,
 * BENCH_SCALE_EVENTS, BENCH_SCALE_GAP_MS, BENCH_SCALE_POOL, BENCH_SCALE_WARMUP (see bench/README.md).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  BURST_BODY, CHAT_PATH, cpuMs, envNumber, guardChildren, load, machine, median, PLAIN_BODY, postJson, procStatus, quantile, ROOT, startBareProxy,
  runMain, runNode, startMock, startTollgate, STREAM_BODY, StreamClient, type LoadResult,
} from './lib.js';
import { redisRow } from './redis-row.js';
import { runScale, scaleBody, scaleSettings, startScaleTarget, warmScale, type ScaleResult, type ScaleTargetId } from './streams.js';

// ── settings ────────────────────────────────────────────────────────────────

const quick = process.argv.includes('--quick') || process.env.BENCH_QUICK === '1';
const BINARY = process.argv.includes('--binary') || process.env.BENCH_BINARY === '1' ? join(ROOT, 'dist', 'tollgate') : null;

const settings = {
  duration: envNumber('BENCH_DURATION', quick ? 1 : 5, 1),
  rounds: Math.floor(envNumber('BENCH_ROUNDS', quick ? 1 : 3, 1)),
  connections: (process.env.BENCH_CONNECTIONS || (quick ? '1,32' : '1,32,256')).split(',').map((c) => {
    const n = Number(c.trim());
    if (!Number.isInteger(n) || n < 1) throw new Error(`BENCH_CONNECTIONS: '${c}' is not a positive integer`);
    return n;
  }),
  streamSamples: Math.floor(envNumber('BENCH_STREAM_SAMPLES', quick ? 200 : 1000, 1)),
  warmup: envNumber('BENCH_WARMUP', quick ? 1 : 3, 0),
  workers: Math.floor(envNumber('BENCH_WORKERS', 2, 2)),
};

const scenarioText = process.argv.includes('--streams') ? 'streams' : process.argv.includes('--plain') ? 'plain' : (process.env.BENCH_SCENARIOS || 'plain,streams');
const scenarios = new Set(scenarioText.split(',').map((x) => x.trim()));
for (const x of scenarios) if (x !== 'plain' && x !== 'streams') throw new Error(`BENCH_SCENARIOS: unknown scenario '${x}' (plain, streams)`);

const scale = scaleSettings(quick);
/** BENCH_SCALE_BASELINE=path/to/dist/cli/main.js: another build of tollgate as a fourth target of the streams scenario. */
const SCALE_BASELINE = process.env.BENCH_SCALE_BASELINE || undefined;
const SCALE_TARGETS: Array<[ScaleTargetId, string]> = [['direct', 'mock direct'], ['bare', 'bare proxy'], ['tollgate', 'tollgate'],
  ...(SCALE_BASELINE ? [['baseline', 'baseline'] as [ScaleTargetId, string]] : [])];

// ── targets ─────────────────────────────────────────────────────────────────

interface Target {
  id: 'direct' | 'bare' | 'tollgate' | 'workers' | 'binary';
  label: string;
  url: string;
  key: string | null;
  /** Processes whose CPU and memory are this target's (a cluster primary and its workers). */
  pids: number[];
  /** The serving processes among them. */
  servingPids: number[];
  /** round → metric → value */
  rounds: Map<string, number>[];
  ttfb: number[];
  ttlb: number[];
  /** The 20-event stream written as 20 separate writes (BURST_BODY). */
  burstTtfb: number[];
  burstTtlb: number[];
  warnings: string[];
}

function progress(text: string): void {
  process.stderr.write(`${text}\n`);
}

async function main(): Promise<void> {
  progress(`bench: ${machine()}`);
  const plain = scenarios.has('plain') ? await plainScenario() : null;
  const scaled = scenarios.has('streams') ? await scaleScenario() : null;
  report(plain, scaled);
  if (plain?.redis) process.stdout.write(`\n${plain.redis.join('\n')}\n`);
}

interface PlainRun {
  targets: Target[];
  memory: { servingPeak: number; totalPeak: number; anonNow: number }[];
  /** The lines of the Redis row (bench/redis-row.ts), null with BENCH_REDIS=0. */
  redis: string[] | null;
}

async function plainScenario(): Promise<PlainRun> {
  if (BINARY !== null && !existsSync(BINARY)) throw new Error(`${BINARY} is missing: build it with \`npm run build:binary\``);
  const n = BINARY === null ? 4 : 5;
  const perRun = settings.duration + 0.3;
  const expectedSec = n * (settings.warmup + 1) + settings.rounds * (n * settings.connections.length * perRun + settings.streamSamples * n * 0.004) + 30;
  const scaleSec = scenarios.has('streams') ? settings.rounds * SCALE_TARGETS.length * (15 + scale.events * scale.gapMs / 1000 * 2) : 0;
  guardChildren(Math.max(120, (expectedSec + scaleSec) * 3) * 1000);

  if (BINARY !== null) progress(`bench: binary ${(await runNode(['--version'], {}, BINARY)).trim()}`);
  progress(`bench: starting the mock provider, the bare proxy and tollgate${BINARY === null ? '' : ' (and the binary)'} …`);
  const mock = await startMock();
  const bare = await startBareProxy(mock.url);
  const one = await startTollgate('tollgate', mock.url, 1);
  const many = await startTollgate(`tollgate --workers ${settings.workers}`, mock.url, settings.workers);
  const bin = BINARY === null ? null : await startTollgate('tollgate binary', mock.url, 1, { executable: BINARY });

  const target = (id: Target['id'], label: string, url: string, key: string | null, pids: number[], servingPids: number[]): Target =>
    ({ id, label, url, key, pids, servingPids, rounds: [], ttfb: [], ttlb: [], burstTtfb: [], burstTtlb: [], warnings: [] });
  const targets: Target[] = [
    target('direct', 'mock direct', mock.url, null, [mock.pid], [mock.pid]),
    target('bare', 'bare proxy', bare.url, null, [bare.pid], [bare.pid]),
    target('tollgate', 'tollgate', one.url, one.key, [one.pid], [one.pid]),
    target('workers', `tollgate ×${settings.workers}`, many.url, many.key, [many.pid, ...many.workerPids], many.workerPids),
  ];
  if (bin !== null) targets.push(target('binary', 'tollgate binary', bin.url, bin.key, [bin.pid], [bin.pid]));

  for (const t of targets) await check(t);
  progress('bench: every target answers correctly (plain and streamed; tollgate bills the call)');

  if (settings.warmup > 0) {
    for (const t of targets) {
      progress(`bench: warming up ${t.label} (${settings.warmup} s at c=32, 200 streams)`);
      await load(t.url, CHAT_PATH, t.key, PLAIN_BODY, 32, settings.warmup);
      const client = new StreamClient(t.url, t.key);
      for (let i = 0; i < 200; i++) await client.request(CHAT_PATH, STREAM_BODY);
      await client.close();
    }
    await sleep(500);
  }

  for (let r = 0; r < settings.rounds; r++) {
    for (const t of targets) t.rounds.push(new Map());
    for (const c of settings.connections) {
      for (const t of targets) {
        const cpuBefore = t.pids.reduce((s, pid) => s + cpuMs(pid), 0);
        const res = await load(t.url, CHAT_PATH, t.key, PLAIN_BODY, c, settings.duration);
        const cpu = t.pids.reduce((s, pid) => s + cpuMs(pid), 0) - cpuBefore;
        record(t, r, c, res, cpu);
        progress(`round ${r + 1}/${settings.rounds}  c=${String(c).padEnd(3)}  ${t.label.padEnd(14)} ${fmtInt(res.rps).padStart(7)} req/s  p50 ${res.p50.toFixed(3)} ms  p99 ${res.p99.toFixed(3)} ms`);
        await sleep(200);
      }
    }
    // Streams: one request per target in turn (A B C D A B C D …), sequentially; each target
    // gets the stream written at once, then the same stream as 20 separate writes.
    const clients = targets.map((t) => new StreamClient(t.url, t.key));
    for (let i = 0; i < settings.streamSamples; i++) {
      for (let k = 0; k < targets.length; k++) {
        const s = await clients[k]!.request(CHAT_PATH, STREAM_BODY);
        if (s.status !== 200) targets[k]!.warnings.push(`stream answered ${s.status}`);
        targets[k]!.ttfb.push(s.ttfb);
        targets[k]!.ttlb.push(s.ttlb);
        const b = await clients[k]!.request(CHAT_PATH, BURST_BODY);
        if (b.status !== 200) targets[k]!.warnings.push(`burst stream answered ${b.status}`);
        targets[k]!.burstTtfb.push(b.ttfb);
        targets[k]!.burstTtlb.push(b.ttlb);
      }
    }
    await Promise.all(clients.map((c) => c.close()));
    progress(`round ${r + 1}/${settings.rounds}  streams: ${settings.streamSamples} per target`);
  }

  const memory = targets.map((t) => ({
    servingPeak: Math.max(...t.servingPids.map((pid) => procStatus(pid).VmHWM ?? 0)),
    totalPeak: t.pids.reduce((s, pid) => s + (procStatus(pid).VmHWM ?? 0), 0),
    anonNow: Math.max(...t.servingPids.map((pid) => procStatus(pid).RssAnon ?? 0)),
  }));
  for (const [i, s] of [one, many, bin].entries()) {
    const text = s?.log().trim();
    if (text) targets[i + 2]!.warnings.push(`wrote to stderr: ${text.split('\n').slice(0, 3).join(' | ')}`);
  }
  // Tollgate on Redis against the same mock and bare proxy, printed after the table.
  const redis = process.env.BENCH_REDIS !== '0' ? await redisRow(mock.url, bare.url, settings, progress) : null;
  for (const s of [mock, bare, one, many, bin]) {
    if (s === null) continue;
    const exited = new Promise<void>((resolve) => s.proc.once('exit', () => resolve()));
    s.proc.kill('SIGTERM');
    await exited;
  }
  return { targets, memory, redis };
}

// ── streams at scale ────────────────────────────────────────────────────────

/** Per target id: one ScaleResult per round. */
type ScaleResults = Map<ScaleTargetId, ScaleResult[]>;

/**
 * Two bursts per fresh target: the first, in which the process grows its memory for the streams
 * (what an open stream costs in memory is read there) and meets the burst's load for the first
 * time; then the same burst again, on the same processes.
 */
interface ScaleRun { first: ScaleResults; again: ScaleResults }

/**
 * The streams-at-scale scenario: per round, each target in turn on fresh processes (a fresh
 * mock, and the fresh proxy in front of it), a warm-up, then `scale.streams` streams at once,
 * each event a separate write `scale.gapMs` apart, twice.
 */
async function scaleScenario(): Promise<ScaleRun> {
  guardChildren(Math.max(120, settings.rounds * SCALE_TARGETS.length * (30 + (scale.events * scale.gapMs) / 250)) * 3000);
  const run: ScaleRun = { first: new Map(SCALE_TARGETS.map(([id]) => [id, []])), again: new Map(SCALE_TARGETS.map(([id]) => [id, []])) };
  const body = scaleBody(scale);
  for (let r = 0; r < settings.rounds; r++) {
    for (const [id, label] of SCALE_TARGETS) {
      const target = await startScaleTarget(id, scale.pool, [], SCALE_BASELINE);
      try {
        await warmScale(target.url, target.key, target.pid, scale);
        for (const burst of ['first', 'again'] as const) {
          await sleep(300);
          const res = await runScale(target.url, target.key, target.pid, body, scale.streams, scale.events);
          run[burst].get(id)!.push(res);
          progress(`round ${r + 1}/${settings.rounds}  streams at scale  ${label.padEnd(12)} ${burst.padEnd(5)} ${res.ok} ok ${res.failed} failed, ${fmt((res.cpuMs * 1000) / res.events, 2)} µs CPU/event, at most ${res.maxOpen} open, ${fmt((res.anonPeak - res.anonBefore) / Math.max(1, res.maxOpen), 1)} kB anon/stream, ${fmt(res.wallMs / 1000, 1)} s`);
        }
      } finally {
        await target.stop();
      }
    }
  }
  return run;
}

// ── checks ──────────────────────────────────────────────────────────────────

/** Every target must answer the bench requests correctly, or the numbers mean nothing. */
async function check(t: Target): Promise<void> {
  const plain = await postJson(t.url, CHAT_PATH, t.key, PLAIN_BODY);
  const json = plain.status === 200 ? JSON.parse(plain.text) : undefined;
  if (typeof json?.choices?.[0]?.message?.content !== 'string' || json?.usage?.prompt_tokens !== 11) {
    throw new Error(`${t.label}: plain chat answered ${plain.status}: ${plain.text.slice(0, 300)}`);
  }
  const client = new StreamClient(t.url, t.key);
  const s = await client.request(CHAT_PATH, STREAM_BODY, true);
  await client.close();
  const deltas = (s.text.match(/"delta":\{"content":/g) ?? []).length;
  if (s.status !== 200 || deltas !== 20 || !s.text.includes('"usage":{') || !s.text.endsWith('data: [DONE]\n\n')) {
    throw new Error(`${t.label}: streamed chat answered ${s.status} with ${deltas} deltas: ${s.text.slice(0, 300)}`);
  }
  if (t.key !== null) {
    const res = await fetch(`${t.url}/usage/api`, { headers: { authorization: `Bearer ${t.key}` }, signal: AbortSignal.timeout(10_000) });
    const usage = (await res.json()) as { requests?: { status: number; costUsd: string }[] };
    const billed = usage.requests?.filter((q) => q.status === 200 && Number(q.costUsd) > 0).length ?? 0;
    if (billed < 2) throw new Error(`${t.label}: the two check calls are not both billed in /usage/api: ${JSON.stringify(usage).slice(0, 300)}`);
  }
}

function record(t: Target, round: number, c: number, res: LoadResult, cpu: number): void {
  const m = t.rounds[round]!;
  m.set(`rps@${c}`, res.rps);
  m.set(`p50@${c}`, res.p50);
  m.set(`p99@${c}`, res.p99);
  m.set(`cpu@${c}`, res.ok > 0 ? (cpu * 1000) / res.ok : NaN);
  if (res.non2xx || res.errors || res.timeouts) {
    t.warnings.push(`round ${round + 1} c=${c}: ${res.non2xx} non-2xx, ${res.errors} errors, ${res.timeouts} timeouts`);
  }
}

// ── the table ───────────────────────────────────────────────────────────────

function fmtInt(n: number): string {
  return Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '–';
}
function fmt(n: number, digits: number): string {
  return Number.isFinite(n) ? n.toFixed(digits) : '–';
}
function signed(n: number, digits: number): string {
  return Number.isFinite(n) ? (n >= 0 ? '+' : '') + n.toFixed(digits) : '–';
}

/** The median over rounds of one metric. */
function med(t: Target, metric: string): number {
  return median(t.rounds.map((m) => m.get(metric)!).filter((v) => v !== undefined));
}

/** Per-round values of f(a, b), paired by round (the runs of one round are neighbours in time). */
function perRound(a: Target, b: Target, metric: string, f: (x: number, y: number) => number): number[] {
  return a.rounds.map((m, i) => f(m.get(metric)!, b.rounds[i]!.get(metric)!));
}

function spread(values: number[], digits: number, prefix = ''): string {
  const m = median(values);
  if (values.length < 2) return prefix + fmt(m, digits);
  const f = (n: number) => (prefix && n >= 0 ? '+' : '') + fmt(n, digits);
  return `${f(m)} (${f(Math.min(...values))}…${f(Math.max(...values))})`;
}

type Row = string[] | { section: string } | { line: string };

function render(rows: Row[]): string {
  const width: number[] = [];
  for (const row of rows) {
    if (!Array.isArray(row)) continue;
    row.forEach((cell, i) => (width[i] = Math.max(width[i] ?? 0, cell.length)));
  }
  const total = width.reduce((s, w) => s + w + 2, 0);
  return rows.map((row) => {
    if ('line' in row) return row.line;
    if (!Array.isArray(row)) return row.section ? `${'─'.repeat(2)} ${row.section} ${'─'.repeat(Math.max(2, total - row.section.length - 4))}` : '─'.repeat(total);
    return row.map((cell, i) => (i === 0 ? cell.padEnd(width[i]!) : cell.padStart(width[i]!))).join('  ');
  }).join('\n');
}

function report(plain: PlainRun | null, scaled: ScaleRun | null): void {
  const rows: Row[] = [];
  const headline: Row[] = [];
  if (plain !== null) plainRows(plain.targets, plain.memory, rows, headline);
  if (scaled !== null) scaleRows(scaled, rows, headline);
  rows.push({ section: 'headline: tollgate (1 process) against the bare proxy   median (min…max over rounds)' });
  rows.push(...headline);
  rows.push({ section: '' });

  const out: string[] = [];
  out.push(`machine: ${machine()}`);
  out.push(`command: npm run bench${process.argv.slice(2).length ? ' -- ' + process.argv.slice(2).join(' ') : ''} (scenarios ${[...scenarios].join(',')})`);
  if (plain !== null) {
    out.push(`settings: ${settings.rounds} rounds × ${settings.connections.length} concurrencies × ${plain.targets.length} targets, ${settings.duration} s per run, warm-up ${settings.warmup} s, ${settings.streamSamples} streams per target per round${quick ? ' (quick)' : ''}`);
    out.push(`processes: load generator (this process), mock provider, bare proxy, tollgate, tollgate cluster${BINARY ? ', tollgate binary' : ''}: each its own; all share the cores`);
  }
  if (scaled !== null) {
    out.push(`streams at scale: ${scale.streams} streams at once, ${scale.events} deltas + 4 events each, ${scale.gapMs} ms apart, each event its own write; pool ${scale.pool} connections (tollgate limits.upstreamConnections, bare proxy Pool); ${settings.rounds} rounds, fresh processes per run, warmed with ${scale.warmupStreams} short streams, then two bursts`);
  }
  out.push('');
  out.push(render(rows));
  const warnings = plain === null ? [] : plain.targets.flatMap((t) => t.warnings.map((w) => `${t.label}: ${w}`));
  if (scaled !== null) {
    for (const [id, label] of SCALE_TARGETS) {
      for (const burst of ['first', 'again'] as const) {
        for (const [i, res] of scaled[burst].get(id)!.entries()) if (res.failed > 0) warnings.push(`${label}: streams at scale, round ${i + 1}, ${burst} burst: ${res.failed} streams failed`);
      }
    }
  }
  if (warnings.length) out.push('', 'warnings:', ...warnings.slice(0, 20).map((w) => `  ${w}`));
  process.stdout.write(`${out.join('\n')}\n`);
}

const verdict = (ok: boolean, miss: string): string => (ok ? 'met' : `MISSED by ${miss}`);
const line = (name: string, value: string, target: string, v: string): Row => ({ line: `${name.padEnd(38)}${value.padEnd(28)}${target.padEnd(18)}${v}` });

function plainRows(targets: Target[], memory: { servingPeak: number; totalPeak: number; anonNow: number }[], rows: Row[], headline: Row[]): void {
  const [, bare, tg, w2, bin] = targets as [Target, Target, Target, Target, Target | undefined];
  const ratioCol = (metric: string) => fmt(median(perRound(tg, bare, metric, (x, y) => x / y)), 2);
  const workersCol = (metric: string) => fmt(median(perRound(w2, tg, metric, (x, y) => x / y)), 2);
  // With --binary, one more column: the binary against the bare proxy, like tollgate's.
  const binaryCol = (metric: string) => (bin ? [fmt(median(perRound(bin, bare, metric, (x, y) => x / y)), 2)] : []);
  rows.push(['', ...targets.map((t) => t.label), 'tollgate/bare', `×${settings.workers}/×1`, ...(bin ? ['binary/bare'] : [])]);
  rows.push({ section: 'non-streamed chat (POST /v1/chat/completions), autocannon' });
  for (const c of settings.connections) {
    rows.push([`c=${c}   req/s`, ...targets.map((t) => fmtInt(med(t, `rps@${c}`))), ratioCol(`rps@${c}`), workersCol(`rps@${c}`), ...binaryCol(`rps@${c}`)]);
    rows.push([`c=${c}   p50 ms`, ...targets.map((t) => fmt(med(t, `p50@${c}`), 3)), ratioCol(`p50@${c}`), workersCol(`p50@${c}`), ...binaryCol(`p50@${c}`)]);
    rows.push([`c=${c}   p99 ms`, ...targets.map((t) => fmt(med(t, `p99@${c}`), 3)), ratioCol(`p99@${c}`), workersCol(`p99@${c}`), ...binaryCol(`p99@${c}`)]);
    rows.push([`c=${c}   server CPU µs/req`, ...targets.map((t) => fmt(med(t, `cpu@${c}`), 1)), ratioCol(`cpu@${c}`), workersCol(`cpu@${c}`), ...binaryCol(`cpu@${c}`)]);
  }
  const hasC1 = settings.connections.includes(1);
  if (hasC1) {
    const usPer = (t: Target) => median(t.rounds.map((m) => 1e6 / m.get('rps@1')!));
    const delta = (t: Target) => median(perRound(t, bare, 'rps@1', (x, y) => 1e6 / x - 1e6 / y));
    rows.push(['c=1   µs/request (1e6 / req/s)', ...targets.map((t) => fmt(usPer(t), 1)), signed(delta(tg), 1), signed(median(perRound(w2, tg, 'rps@1', (x, y) => 1e6 / x - 1e6 / y)), 1), ...(bin ? [signed(delta(bin), 1)] : [])]);
    rows.push(['c=1   µs/request over bare', ...targets.map((t) => (t === bare ? '0' : signed(delta(t), 1))), '', '']);
  }
  rows.push({ section: `streamed chat, 20 chunks, sequential, ${settings.streamSamples * settings.rounds} per target` });
  const q = (values: number[], p: number) => quantile(Float64Array.from(values).sort(), p) * 1000;
  const streamRow = (name: string, pick: (t: Target) => number[], p: number): string[] => {
    const v = targets.map((t) => q(pick(t), p));
    return [name, ...v.map((x) => fmtInt(x)), signed(v[2]! - v[1]!, 0), signed(v[3]! - v[2]!, 0), ...(bin ? [signed(v[4]! - v[1]!, 0)] : [])];
  };
  rows.push(streamRow('TTFB p50 µs', (t) => t.ttfb, 0.5));
  rows.push(streamRow('TTFB p99 µs', (t) => t.ttfb, 0.99));
  rows.push(streamRow('TTLB p50 µs', (t) => t.ttlb, 0.5));
  rows.push(streamRow('TTLB p99 µs', (t) => t.ttlb, 0.99));
  rows.push({ section: `streamed chat, 20 events as 20 separate writes (a burst), sequential, ${settings.streamSamples * settings.rounds} per target` });
  rows.push(streamRow('TTFB p50 µs', (t) => t.burstTtfb, 0.5));
  rows.push(streamRow('TTFB p99 µs', (t) => t.burstTtfb, 0.99));
  rows.push(streamRow('end of body p50 µs', (t) => t.burstTtlb, 0.5));
  rows.push(streamRow('end of body p99 µs', (t) => t.burstTtlb, 0.99));
  // The body's own time, first byte to end: what the gateway adds while the events pass.
  rows.push(streamRow('first byte → end p50 µs', (t) => t.burstTtlb.map((x, i) => x - t.burstTtfb[i]!), 0.5));
  rows.push({ section: 'memory (/proc/PID/status)' });
  const mb = (kb: number) => fmt(kb / 1024, 1);
  rows.push(['peak RSS MB, per serving process', ...memory.map((m) => mb(m.servingPeak)), fmt(memory[2]!.servingPeak / memory[1]!.servingPeak, 2), '', ...(bin ? [fmt(memory[4]!.servingPeak / memory[1]!.servingPeak, 2)] : [])]);
  rows.push(['peak RSS MB, all its processes', ...memory.map((m) => mb(m.totalPeak)), '', fmt(memory[3]!.totalPeak / memory[2]!.totalPeak, 2)]);
  rows.push(['RSS anon MB at the end', ...memory.map((m) => mb(m.anonNow)), '', '']);

  // Headline: tollgate against the bare proxy, paired by round.
  if (settings.connections.includes(32)) {
    const r = perRound(tg, bare, 'rps@32', (x, y) => x / y);
    headline.push(line('throughput ratio at c=32', spread(r, 3), 'target ≥ 0.90', verdict(median(r) >= 0.9, fmt(0.9 - median(r), 3))));
  }
  if (hasC1) {
    const d = perRound(tg, bare, 'rps@1', (x, y) => 1e6 / x - 1e6 / y);
    headline.push(line('added µs/request at c=1', spread(d, 1, '+'), 'target ≤ 25 µs', verdict(median(d) <= 25, `${fmt(median(d) - 25, 1)} µs`)));
  }
  const ttfbDelta = q(tg.ttfb, 0.5) - q(bare.ttfb, 0.5);
  headline.push(line('streamed TTFB p50 delta', `${signed(ttfbDelta, 0)} µs`, 'target ≤ 100 µs', verdict(ttfbDelta <= 100, `${fmt(ttfbDelta - 100, 0)} µs`)));
  const burstEnd = q(tg.burstTtlb, 0.5) - q(bare.burstTtlb, 0.5);
  headline.push(line('burst (20 writes) end-of-body p50', `${signed(burstEnd, 0)} µs`, 'target < 100 µs', verdict(burstEnd < 100, `${fmt(burstEnd - 100, 0)} µs`)));
  const body = (t: Target): number => q(t.burstTtlb.map((x, i) => x - t.burstTtfb[i]!), 0.5);
  headline.push(line('burst first byte → end p50 delta', `${signed(body(tg) - body(bare), 0)} µs`, '', ''));
  const multi = settings.connections.filter((c) => c > 1);
  if (multi.length) {
    headline.push(line(`workers ${settings.workers} vs 1, throughput`, multi.map((c) => `c=${c}: ${fmt(median(perRound(w2, tg, `rps@${c}`, (x, y) => x / y)), 2)}`).join('  '), '', ''));
  }
  if (bin) {
    rows.push({ section: 'the single binary (1 process, its own Node.js) against the bare proxy   median (min…max over rounds)' });
    if (settings.connections.includes(32)) rows.push(line('throughput ratio at c=32', spread(perRound(bin, bare, 'rps@32', (x, y) => x / y), 3), '', ''));
    if (hasC1) rows.push(line('added µs/request at c=1', spread(perRound(bin, bare, 'rps@1', (x, y) => 1e6 / x - 1e6 / y), 1, '+'), '', ''));
    rows.push(line('streamed TTFB p50 delta', `${signed(q(bin.ttfb, 0.5) - q(bare.ttfb, 0.5), 0)} µs`, '', ''));
    if (settings.connections.includes(32)) rows.push(line('binary / tollgate at c=32', spread(perRound(bin, tg, 'rps@32', (x, y) => x / y), 3), '', ''));
  }
}

/**
 * The streams-at-scale rows: per target, the median over rounds; ratios paired by round. The first
 * burst's in full, then the CPU of the second on the same processes.
 */
function scaleRows(scaled: ScaleRun, rows: Row[], headline: Row[]): void {
  const cpuPerEvent = (r: ScaleResult): number => (r.cpuMs * 1000) / r.events;
  const cpuPerStream = (r: ScaleResult): number => (r.cpuMs * 1000) / Math.max(1, r.ok);
  const rssPerStream = (r: ScaleResult): number => (r.rssPeak - r.rssBefore) / Math.max(1, r.maxOpen);
  const anonPerStream = (r: ScaleResult): number => (r.anonPeak - r.anonBefore) / Math.max(1, r.maxOpen);
  const header = ['', ...SCALE_TARGETS.map(([, label]) => label), 'tollgate/bare', ...(SCALE_BASELINE ? ['baseline/bare'] : [])];
  const rowsOf = (run: ScaleResults) => {
    const per = (id: ScaleTargetId, f: (r: ScaleResult) => number): number[] => run.get(id)!.map(f);
    const pairedWith = (id: ScaleTargetId, f: (r: ScaleResult) => number, op: (x: number, y: number) => number): number[] =>
      run.get(id)!.map((r, i) => op(f(r), f(run.get('bare')!.at(i)!)));
    const row = (name: string, f: (r: ScaleResult) => number, digits: number, ratio = true): string[] => {
      const col = (id: ScaleTargetId): string => (ratio ? fmt(median(pairedWith(id, f, (x, y) => x / y)), 2) : signed(median(pairedWith(id, f, (x, y) => x - y)), digits));
      return [name, ...SCALE_TARGETS.map(([id]) => fmt(median(per(id, f)), digits)), col('tollgate'), ...(SCALE_BASELINE ? [col('baseline')] : [])];
    };
    const pooled = (id: ScaleTargetId, pick: (r: ScaleResult) => number[], p: number): number =>
      quantile(Float64Array.from(run.get(id)!.flatMap(pick)).sort(), p);
    return { row, pooled, paired: (f: (r: ScaleResult) => number, op: (x: number, y: number) => number) => pairedWith('tollgate', f, op) };
  };
  const cpuHeadline = ({ paired }: ReturnType<typeof rowsOf>, which: string): void => {
    const cpu = paired(cpuPerEvent, (x, y) => x / y);
    headline.push(line(`streams${which}: CPU per event ratio`, spread(cpu, 2), 'target ≤ 1.25', verdict(median(cpu) <= 1.25, fmt(median(cpu) - 1.25, 2))));
    const extra = paired(cpuPerStream, (x, y) => x - y);
    headline.push(line(`streams${which}: extra CPU µs/stream`, spread(extra, 0, '+'), 'target ≤ 150', verdict(median(extra) <= 150, fmt(median(extra) - 150, 0))));
  };

  const first = rowsOf(scaled.first);
  rows.push({ section: `streams at scale: ${scale.streams} at once, ${scale.events + 4} events each ${scale.gapMs} ms apart, each its own write; the first burst` });
  rows.push(header);
  rows.push(first.row('server CPU µs/event', cpuPerEvent, 2));
  rows.push(first.row('server CPU µs/stream (difference)', cpuPerStream, 0, false));
  rows.push(first.row('RSS kB per open stream', rssPerStream, 1));
  rows.push(first.row('RSS anon kB per open stream', anonPerStream, 1));
  rows.push(first.row('streams open at once (most)', (r) => r.maxOpen, 0, false));
  for (const [name, pick, p] of [
    ['TTFB p50 ms', (r: ScaleResult) => r.ttfb, 0.5], ['TTFB p99 ms', (r: ScaleResult) => r.ttfb, 0.99],
    ['end of body p50 ms', (r: ScaleResult) => r.ttlb, 0.5], ['end of body p99 ms', (r: ScaleResult) => r.ttlb, 0.99],
  ] as const) {
    const v = SCALE_TARGETS.map(([id]) => first.pooled(id, pick, p));
    rows.push([name, ...v.map((x) => fmt(x, 2)), signed(v[2]! - v[1]!, 2), ...(SCALE_BASELINE ? [signed(v[3]! - v[1]!, 2)] : [])]);
  }
  const again = rowsOf(scaled.again);
  rows.push({ section: 'the same burst again, on the same processes (their memory grown, their code compiled)' });
  rows.push(header);
  rows.push(again.row('server CPU µs/event', cpuPerEvent, 2));
  rows.push(again.row('server CPU µs/stream (difference)', cpuPerStream, 0, false));
  cpuHeadline(first, '');
  const mem = first.paired(rssPerStream, (x, y) => x / y);
  headline.push(line('streams: RSS per open stream ratio', spread(mem, 2), 'target ≤ 1.20', verdict(median(mem) <= 1.2, fmt(median(mem) - 1.2, 2))));
  cpuHeadline(again, ', again');
}

// ── run ─────────────────────────────────────────────────────────────────────

await runMain('bench', main);

