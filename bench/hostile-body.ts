/**
 * Hostile request bodies and the event loop: while ten large or deeply nested bodies arrive in
 * parallel, how long is the gateway's event loop held up (perf_hooks.monitorEventLoopDelay in
 * the server process, loaded with bench/loop-delay-preload.mjs), and how long does a small call
 * from another client take meanwhile?
 *
 *   npx tsc -p tsconfig.json && node --import tsx bench/hostile-body.ts [--baseline DIR]
 *
 * `--baseline DIR` runs the same scenarios against another checkout's build (DIR/dist), for a
 * before/after comparison in the same run; targets alternate scenario by scenario.
 */
import { join } from 'node:path';
import { BENCH_DIR, CHAT_PATH, guardChildren, machine, median, MODEL, PLAIN_BODY, quantile, runMain, startMock, startTollgate, type Tollgate } from './lib.js';

const PRELOAD = join(BENCH_DIR, 'loop-delay-preload.mjs');
const PARALLEL = 10;
const MB30 = 30_000_000;

interface Scenario {
  name: string;
  /** The body each of the ten clients sends; undefined for the idle baseline. */
  body?: () => Buffer;
  /** Too costly for the baseline build (a single one holds its event loop for seconds). */
  heavyForBaseline?: boolean;
  idleMs?: number;
}

const prompt = (bytes: number, tail = ''): Buffer => {
  const head = `{"model":"${MODEL}","messages":[{"role":"user","content":"`;
  const end = `"}],"max_tokens":16}${tail}`;
  const unit = 'All work and no play makes a long prompt. ';
  return Buffer.from(head + unit.repeat(Math.ceil((bytes - head.length - end.length) / unit.length)) + end);
};
const manyMessages = (bytes: number): Buffer => {
  const one = '{"role":"user","content":"a short turn of the conversation"},';
  const count = Math.floor(bytes / one.length);
  return Buffer.from(`{"model":"${MODEL}","messages":[${one.repeat(count).slice(0, -1)}],"max_tokens":16}`);
};
const nested = (bytes: number): Buffer => {
  const depth = Math.floor((bytes - 40) / 2);
  return Buffer.from(`{"model":"${MODEL}","messages":${'['.repeat(depth)}${']'.repeat(depth)}}`);
};

const SCENARIOS: Scenario[] = [
  { name: 'idle: the small calls alone', idleMs: 3000 },
  { name: '10 × 30 MB prompt (forwarded)', body: () => prompt(MB30) },
  { name: '10 × 30 MB of 530,000 messages (forwarded)', body: () => manyMessages(MB30) },
  { name: '10 × 30 MB prompt, broken at the last byte (400)', body: () => prompt(MB30, 'x') },
  { name: '10 × 1 MB nested 500,000 deep (400)', body: () => nested(1_000_000) },
  { name: '10 × 30 MB nested 15,000,000 deep (400)', body: () => nested(MB30), heavyForBaseline: true },
];

interface Row { scenario: string; target: string; statuses: string; maxMs: number; p99Ms: number; gcMaxMs: number; gcTotalMs: number; calls: number; callP50: number; callMax: number; seconds: number }

/** Sends SIGUSR2 and returns the loop-delay report the preload writes in answer. */
async function loopDelay(server: Tollgate): Promise<{ max: number; p99: number; gcMax: number; gcTotal: number }> {
  const before = server.log().split('loop-delay ').length;
  server.proc.kill('SIGUSR2');
  for (let i = 0; i < 500; i++) {
    const parts = server.log().split('loop-delay ');
    if (parts.length > before) return JSON.parse(parts.at(-1)!.split('\n')[0]!) as { max: number; p99: number; gcMax: number; gcTotal: number };
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`${server.name}: no loop-delay report`);
}

async function run(server: Tollgate, scenario: Scenario): Promise<Row> {
  const url = server.url + CHAT_PATH;
  const headers = { authorization: `Bearer ${server.key}`, 'content-type': 'application/json' };
  await loopDelay(server); // start the window afresh
  const started = performance.now();
  let running = true;
  const latencies: number[] = [];
  // Another client's small calls, one after the other, for as long as the big bodies take.
  const canary = (async () => {
    while (running) {
      const t0 = performance.now();
      const res = await fetch(url, { method: 'POST', headers, body: PLAIN_BODY });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`small call answered ${res.status}`);
      latencies.push(performance.now() - t0);
    }
  })();
  let statuses: number[] = [];
  if (scenario.body === undefined) {
    await new Promise((r) => setTimeout(r, scenario.idleMs));
  } else {
    const body = scenario.body();
    statuses = await Promise.all(Array.from({ length: PARALLEL }, async () => {
      const res = await fetch(url, { method: 'POST', headers, body });
      await res.arrayBuffer();
      return res.status;
    }));
  }
  running = false;
  await canary;
  const seconds = (performance.now() - started) / 1000;
  const delay = await loopDelay(server);
  latencies.sort((a, b) => a - b);
  const counts = new Map<number, number>();
  for (const s of statuses) counts.set(s, (counts.get(s) ?? 0) + 1);
  return {
    scenario: scenario.name,
    target: server.name,
    statuses: [...counts].map(([s, n]) => `${n}×${s}`).join(' ') || '–',
    maxMs: delay.max,
    p99Ms: delay.p99,
    gcMaxMs: delay.gcMax,
    gcTotalMs: delay.gcTotal,
    calls: latencies.length,
    callP50: median(latencies),
    callMax: quantile(latencies, 1),
    seconds,
  };
}

await runMain('hostile-body', async () => {
  guardChildren(20 * 60_000);
  const baselineDir = process.argv.includes('--baseline') ? process.argv[process.argv.indexOf('--baseline') + 1] : undefined;
  process.stderr.write(`${machine()}\n`);
  const mock = await startMock();
  const targets = [await startTollgate('tollgate', mock.url, 1, { nodeFlags: ['--import', PRELOAD] })];
  if (baselineDir !== undefined) {
    targets.push(await startTollgate('baseline', mock.url, 1, { nodeFlags: ['--import', PRELOAD], cli: join(baselineDir, 'dist', 'cli', 'main.js') }));
  }
  const rows: Row[] = [];
  for (const scenario of SCENARIOS) {
    for (const target of targets) {
      if (target.name === 'baseline' && scenario.heavyForBaseline) continue;
      process.stderr.write(`${target.name}: ${scenario.name}\n`);
      rows.push(await run(target, scenario));
    }
  }
  const f = (n: number, d = 1): string => (Number.isFinite(n) ? n.toFixed(d) : '–');
  process.stdout.write('\n| scenario | build | answers | event-loop delay max / p99 (ms) | GC pause max / total (ms) | small calls meanwhile: count, p50 / max (ms) | wall (s) |\n|---|---|---|---|---|---|---|\n');
  for (const r of rows) {
    process.stdout.write(`| ${r.scenario} | ${r.target} | ${r.statuses} | ${f(r.maxMs)} / ${f(r.p99Ms)} | ${f(r.gcMaxMs)} / ${f(r.gcTotalMs, 0)} | ${r.calls}, ${f(r.callP50)} / ${f(r.callMax)} | ${f(r.seconds, 2)} |\n`);
  }
  return true;
});
