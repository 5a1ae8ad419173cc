/**
 * Where a streamed answer's extra CPU goes: tollgate against the bare proxy, varying one thing at
 * a time from a base burst, so that a cost per stream, per second a stream stays open and per
 * event can be told apart:
 *
 *   base      S streams at once, E content events each, G ms apart
 *   events    the same streams, open as long, with twice the events (2E events, G/2 apart)
 *   open      the same streams and events, open twice as long (G × 2 apart)
 *   streams   twice the streams (2S), as the base
 *
 * per event  = (events − base) / (S × E)
 * per second = (open − base) / (S × E × G / 1000)        (a second a stream stays open)
 * per stream = (streams − base) / S − (E + 4) × per event − (E × G / 1000) × per second
 *              (each stream carries E content events and 4 more: role, finish, usage, [DONE])
 *
 * Each burst runs on fresh processes (a mock and the proxy under test, bench/streams.ts) after the
 * streams-at-scale warm-up (BENCH_SCALE_WARMUP short streams, then a group of the burst's shape);
 * the serving process's CPU is read per thread from /proc/PID/task (its main thread, where the
 * requests are served, and the others: V8's GC and compiler threads, libuv's pool, LMDB's writer)
 * before and after. Targets alternate in every round; medians over rounds.
 *
 *   node --import tsx bench/stream-costs.ts
 *
 * Environment: BENCH_ROUNDS (default 5), BENCH_STREAMS (S, default 1,000), BENCH_EVENTS (E,
 * default 20), BENCH_GAP_MS (G, default 50), BENCH_SCALE_WARMUP (short warm-up streams, default
 * 3,000).
 */
import { envNumber, guardChildren, machine, median, runMain, threadCpuMs } from './lib.js';
import { runScale, scaleBody, scaleWarmupStreams, startScaleTarget, warmScale, type ScaleTargetId } from './streams.js';

const ROUNDS = Math.floor(envNumber('BENCH_ROUNDS', 5, 1));
const S = Math.floor(envNumber('BENCH_STREAMS', 1000, 1));
const E = Math.floor(envNumber('BENCH_EVENTS', 20, 1));
const G = envNumber('BENCH_GAP_MS', 50, 1);

interface Burst { name: 'base' | 'events' | 'open' | 'streams'; streams: number; events: number; gapMs: number }
const BURSTS: Burst[] = [
  { name: 'base', streams: S, events: E, gapMs: G },
  { name: 'events', streams: S, events: 2 * E, gapMs: G / 2 },
  { name: 'open', streams: S, events: E, gapMs: 2 * G },
  { name: 'streams', streams: 2 * S, events: E, gapMs: G },
];
const TARGETS: ScaleTargetId[] = ['bare', 'tollgate'];

interface Measured { main: number; others: number; failed: number }

async function burst(target: ScaleTargetId, b: Burst): Promise<Measured> {
  const pool = b.streams + 64;
  const t = await startScaleTarget(target, pool);
  try {
    await warmScale(t.url, t.key, t.pid, { streams: b.streams, events: b.events, gapMs: b.gapMs, warmupStreams: scaleWarmupStreams(false) });
    const before = threadCpuMs(t.pid);
    const r = await runScale(t.url, t.key, t.pid, scaleBody(b), b.streams, b.events);
    // The stream's settlement (tollgate: its record) is committed before its last byte: nothing is left after it.
    const after = threadCpuMs(t.pid);
    return { main: after.main - before.main, others: after.others - before.others, failed: r.failed };
  } finally {
    await t.stop();
  }
}

await runMain('stream-costs', async () => {
  guardChildren(30 * 60_000);
  console.log(`stream-costs: ${machine()}; ${ROUNDS} rounds; base: ${S} streams, ${E} events ${G} ms apart`);
  const results = new Map<string, Measured[]>();
  for (let round = 1; round <= ROUNDS; round++) {
    for (const b of BURSTS) {
      for (const target of round % 2 === 1 ? TARGETS : [...TARGETS].reverse()) {
        const m = await burst(target, b);
        if (m.failed > 0) throw new Error(`${target} ${b.name}: ${m.failed} streams failed`);
        const key = `${target} ${b.name}`;
        results.set(key, [...(results.get(key) ?? []), m]);
        console.log(`round ${round}  ${key.padEnd(18)} main ${m.main.toFixed(0).padStart(5)} ms  other threads ${m.others.toFixed(0).padStart(4)} ms`);
      }
    }
  }
  const med = (target: ScaleTargetId, name: Burst['name'], part: 'main' | 'others' | 'all'): number =>
    median(results.get(`${target} ${name}`)!.map((m) => (part === 'all' ? m.main + m.others : m[part])));
  const openSeconds = (E * G) / 1000;
  console.log('\n| target | thread | per event (µs) | per second open (µs) | per stream (µs) | base burst (ms) |');
  console.log('|---|---|---|---|---|---|');
  const costs = new Map<string, [number, number, number]>();
  for (const target of TARGETS) {
    for (const part of ['main', 'others', 'all'] as const) {
      const base = med(target, 'base', part);
      const perEvent = ((med(target, 'events', part) - base) * 1000) / (S * E);
      const perSecond = ((med(target, 'open', part) - base) * 1000) / (S * openSeconds);
      const perStream = ((med(target, 'streams', part) - base) * 1000) / S - (E + 4) * perEvent - openSeconds * perSecond;
      costs.set(`${target} ${part}`, [perEvent, perSecond, perStream]);
      console.log(`| ${target} | ${part === 'all' ? 'all' : part === 'main' ? 'main' : 'other threads'} | ${perEvent.toFixed(1)} | ${perSecond.toFixed(1)} | ${perStream.toFixed(1)} | ${base.toFixed(0)} |`);
    }
  }
  const [te, ts, tp] = costs.get('tollgate all')!;
  const [be, bs, bp] = costs.get('bare all')!;
  const extraPerStream = (tp - bp) + (E + 4) * (te - be) + openSeconds * (ts - bs);
  // The split above subtracts medians of separate bursts, each read at the counters' 10 ms
  // resolution: its parts can come out negative. The base burst's own difference is the direct figure.
  const direct = ((med('tollgate', 'base', 'all') - med('bare', 'base', 'all')) * 1000) / S;
  console.log(`\ntollgate's extra CPU per streamed answer of the base burst (${E + 4} events, ${openSeconds} s open): ${direct.toFixed(0)} µs measured directly (the base bursts' medians); ${extraPerStream.toFixed(0)} µs as the sum of the split; per event ${(te / be).toFixed(2)}× the bare proxy's`);
  return true;
});
