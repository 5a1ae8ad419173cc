/**
 * Profiles tollgate under load: starts the mock provider and `node --cpu-prof … serve`, drives
 * it with autocannon, stops it with SIGTERM (the profile is written on exit) and prints the
 * analysis of bench/top-functions.ts.
 *
 *   node --import tsx bench/profile.ts [--stream] [--redis] [--scale]
 *
 * `--scale`: the streams-at-scale burst of `npm run bench` instead (bench/streams.ts: 1,000
 * streams at once on a fresh mock and tollgate, 44 events each 100 ms apart; the BENCH_SCALE_*
 * settings of bench/run.ts), after its warm-up; its CPU per event is printed. With `--bare`, the
 * bare proxy is profiled under the same burst instead, to compare area by area.
 *
 * `--redis`: tollgate on a redis-server started here (bench/redis-server.ts); its CPU per call
 * over the measured load is printed beside tollgate's.
 *
 * Environment: BENCH_DURATION (s under load, default 10), BENCH_CONNECTIONS (one number,
 * default 32), BENCH_PROF_DIR (where the .cpuprofile is kept, default /tmp/prof),
 * BENCH_PROF_INTERVAL (sampling interval in µs, default 100), BENCH_TOP (rows, default 25),
 * BENCH_CALLERS (functions whose caller chains to print, default writev,writeLatin1String).
 * Only the samples of the measured load are analysed (not start-up, not warm-up).
 */
import { mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { CHAT_PATH, cpuMs, guardChildren, load, machine, PLAIN_BODY, runMain, startMock, startTollgate, STREAM_BODY } from './lib.js';
import { startRedisForBench } from './redis-server.js';
import { runScale, scaleBody, scaleSettings, startScaleTarget, warmScale } from './streams.js';
import { printReport } from './top-functions.js';

const stream = process.argv.includes('--stream');
const onRedis = process.argv.includes('--redis');
const atScale = process.argv.includes('--scale');
const bare = process.argv.includes('--bare');
const duration = Number(process.env.BENCH_DURATION || 10);
const connections = Number(process.env.BENCH_CONNECTIONS || 32);
const dir = process.env.BENCH_PROF_DIR || '/tmp/prof';
const interval = Number(process.env.BENCH_PROF_INTERVAL || 100);
const top = Number(process.env.BENCH_TOP || 25);
/** Functions whose callers to list (comma list), e.g. BENCH_CALLERS=writev,writeLatin1String */
const callersOf = (process.env.BENCH_CALLERS || 'writev,writeLatin1String').split(',').filter(Boolean);

const profileFlags = ['--cpu-prof', `--cpu-prof-dir=${dir}`, `--cpu-prof-interval=${interval}`];

/** The newest .cpuprofile in `dir` not among `before`, analysed between fromUs and toUs. */
function report(before: Set<string>, fromUs: number, toUs: number): void {
  const fresh = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile') && !before.has(f));
  if (fresh.length === 0) throw new Error(`no new .cpuprofile in ${dir}`);
  const file = join(dir, fresh.sort((a, b) => statSync(join(dir, b)).mtimeMs - statSync(join(dir, a)).mtimeMs)[0]!);
  process.stdout.write(`profile file: ${file}\n${printReport(JSON.parse(readFileSync(file, 'utf8')), top, callersOf, fromUs, toUs)}\n`);
}

/** The streams-at-scale burst, profiled. */
async function scale(before: Set<string>): Promise<void> {
  const settings = scaleSettings(false);
  const target = await startScaleTarget(bare ? 'bare' : 'tollgate', settings.pool, profileFlags);
  process.stderr.write(`profile: warming up, then ${settings.streams} streams at once, ${settings.events + 4} events each ${settings.gapMs} ms apart\n`);
  await warmScale(target.url, target.key, target.pid, settings);
  const fromUs = Number(process.hrtime.bigint() / 1000n);
  const r = await runScale(target.url, target.key, target.pid, scaleBody(settings), settings.streams, settings.events);
  const toUs = Number(process.hrtime.bigint() / 1000n);
  process.stderr.write(`profile: ${r.ok} streams ended whole, ${r.failed} failed; CPU per event (profiler included) ${((r.cpuMs * 1000) / r.events).toFixed(2)} µs\n`);
  await target.stop();
  report(before, fromUs, toUs);
}

async function main(): Promise<void> {
  guardChildren((duration + 120) * 1000);
  mkdirSync(dir, { recursive: true });
  const before = new Set(readdirSync(dir));
  process.stderr.write(`profile: ${machine()}\n`);
  if (atScale) return scale(before);
  const mock = await startMock();
  const redis = onRedis ? await startRedisForBench() : null;
  const tollgate = await startTollgate('tollgate', mock.url, 1, {
    nodeFlags: profileFlags,
    ...(redis ? { env: { TOLLGATE_REDIS_URL: redis.url } } : {}),
  });
  const body = stream ? STREAM_BODY : PLAIN_BODY;
  process.stderr.write(`profile: warming up 2 s, then ${duration} s of ${stream ? 'streamed (20 chunks)' : 'non-streamed'} chat at c=${connections}\n`);
  await load(tollgate.url, CHAT_PATH, tollgate.key, body, connections, 2);
  // Profile timestamps are CLOCK_MONOTONIC µs, like hrtime: only the measured load is analysed.
  const fromUs = Number(process.hrtime.bigint() / 1000n);
  const cpu0 = cpuMs(tollgate.pid);
  const redisCpu0 = redis ? cpuMs(redis.pid) : 0;
  const res = await load(tollgate.url, CHAT_PATH, tollgate.key, body, connections, duration);
  const toUs = Number(process.hrtime.bigint() / 1000n);
  process.stderr.write(`profile: ${Math.round(res.rps)} req/s (slowed by the profiler), p50 ${res.p50.toFixed(3)} ms, ${res.non2xx} non-2xx, ${res.errors} errors\n`);
  const perCall = (ms: number): string => ((ms * 1000) / Math.max(1, res.ok)).toFixed(1);
  process.stderr.write(`profile: CPU per call (profiler included): tollgate ${perCall(cpuMs(tollgate.pid) - cpu0)} µs${redis ? `, redis-server ${perCall(cpuMs(redis.pid) - redisCpu0)} µs` : ''}\n`);
  const exited = new Promise<void>((resolve) => tollgate.proc.once('exit', () => resolve()));
  tollgate.proc.kill('SIGTERM');
  await exited;
  report(before, fromUs, toUs);
}

await runMain('profile', main);

