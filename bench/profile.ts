/**
 * Profiles tollgate under load: starts the mock provider and `node --cpu-prof … serve`, drives
 * it with autocannon, stops it with SIGTERM (the profile is written on exit) and prints the
 * analysis of bench/top-functions.ts.
 *
 *   node --import tsx bench/profile.ts [--stream]
 *   node --import tsx bench/profile.ts --scale   streams at scale (bench/streams.ts): BENCH_SCALE_STREAMS
 *                                                (1000) at once, BENCH_SCALE_EVENTS (40) events
 *                                                BENCH_SCALE_GAP_MS (50) ms apart, each its own write
 *
 * Environment: BENCH_DURATION (s under load, default 10), BENCH_CONNECTIONS (one number,
 * default 32), BENCH_PROF_DIR (where the .cpuprofile is kept, default /tmp/prof),
 * BENCH_PROF_INTERVAL (sampling interval in µs, default 100), BENCH_TOP (rows, default 25),
 * BENCH_CALLERS (functions whose caller chains to print, default writev,writeLatin1String).
 * Only the samples of the measured load are analysed (not start-up, not warm-up).
 */
import { mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { CHAT_PATH, guardChildren, load, machine, PLAIN_BODY, runMain, startMock, startTollgate, STREAM_BODY } from './lib.js';
import { runScale, scaleBody, warmScale } from './streams.js';
import { printReport } from './top-functions.js';

const stream = process.argv.includes('--stream');
const scaled = process.argv.includes('--scale');
const scale = {
  streams: Number(process.env.BENCH_SCALE_STREAMS || 1000),
  events: Number(process.env.BENCH_SCALE_EVENTS || 40),
  gapMs: Number(process.env.BENCH_SCALE_GAP_MS || 50),
  warmupStreams: 200,
};
const duration = Number(process.env.BENCH_DURATION || 10);
const connections = Number(process.env.BENCH_CONNECTIONS || 32);
const dir = process.env.BENCH_PROF_DIR || '/tmp/prof';
const interval = Number(process.env.BENCH_PROF_INTERVAL || 100);
const top = Number(process.env.BENCH_TOP || 25);
/** Functions whose callers to list (comma list), e.g. BENCH_CALLERS=writev,writeLatin1String */
const callersOf = (process.env.BENCH_CALLERS || 'writev,writeLatin1String').split(',').filter(Boolean);

async function main(): Promise<void> {
  guardChildren((duration + 120) * 1000);
  mkdirSync(dir, { recursive: true });
  const before = new Set(readdirSync(dir));
  process.stderr.write(`profile: ${machine()}\n`);
  const mock = await startMock();
  const tollgate = await startTollgate('tollgate', mock.url, 1, {
    nodeFlags: ['--cpu-prof', `--cpu-prof-dir=${dir}`, `--cpu-prof-interval=${interval}`],
    ...(scaled ? { limits: { upstreamConnections: scale.streams + 64 } } : {}),
  });
  let fromUs: number;
  let toUs: number;
  if (scaled) {
    process.stderr.write(`profile: warming up (${scale.warmupStreams} short streams), then ${scale.streams} streams at once, ${scale.events} events ${scale.gapMs} ms apart\n`);
    await warmScale(tollgate.url, tollgate.key, tollgate.pid, { ...scale, pool: scale.streams + 64 });
    fromUs = Number(process.hrtime.bigint() / 1000n);
    const res = await runScale(tollgate.url, tollgate.key, tollgate.pid, scaleBody(scale), scale.streams, scale.events);
    toUs = Number(process.hrtime.bigint() / 1000n);
    process.stderr.write(`profile: ${res.ok} streams ok, ${res.failed} failed, ${((res.cpuMs * 1000) / res.events).toFixed(2)} µs CPU per event (with the profiler)\n`);
  } else {
    const body = stream ? STREAM_BODY : PLAIN_BODY;
    process.stderr.write(`profile: warming up 2 s, then ${duration} s of ${stream ? 'streamed (20 chunks)' : 'non-streamed'} chat at c=${connections}\n`);
    await load(tollgate.url, CHAT_PATH, tollgate.key, body, connections, 2);
    // Profile timestamps are CLOCK_MONOTONIC µs, like hrtime: only the measured load is analysed.
    fromUs = Number(process.hrtime.bigint() / 1000n);
    const res = await load(tollgate.url, CHAT_PATH, tollgate.key, body, connections, duration);
    toUs = Number(process.hrtime.bigint() / 1000n);
    process.stderr.write(`profile: ${Math.round(res.rps)} req/s (slowed by the profiler), p50 ${res.p50.toFixed(3)} ms, ${res.non2xx} non-2xx, ${res.errors} errors\n`);
  }
  const exited = new Promise<void>((resolve) => tollgate.proc.once('exit', () => resolve()));
  tollgate.proc.kill('SIGTERM');
  await exited;
  const fresh = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile') && !before.has(f));
  if (fresh.length === 0) throw new Error(`no new .cpuprofile in ${dir}`);
  const file = join(dir, fresh.sort((a, b) => statSync(join(dir, b)).mtimeMs - statSync(join(dir, a)).mtimeMs)[0]!);
  process.stdout.write(`profile file: ${file}\n${printReport(JSON.parse(readFileSync(file, 'utf8')), top, callersOf, fromUs, toUs)}\n`);
}

await runMain('profile', main);

