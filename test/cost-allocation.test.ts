/**
 * Cost budget: bytes the gateway allocates on its JS heap per call, plain and streamed, with every
 * check, the hold, metering, the usage record, metrics and the access log on (the gateway wired
 * as `tollgate serve` wires it, on LMDB: test/fixtures/cost-gateway.ts). A count, not a time.
 *
 * How it is counted. Node.js has no cumulative allocation counter, so the gateway runs alone in a
 * child process whose young generation is large and fixed (256 MB semi-spaces: a window of
 * calls fits in it on Node 20 and 24), and a window of WINDOW sequential calls allocates with no
 * collection running (v8.GCProfiler confirms it). Bytes per call = the growth of the sum of every
 * heap space's used size over the window / WINDOW. The client and the mock provider run in this
 * process: their allocations are not counted.
 *
 * Runs agree within a few tens of bytes per call (0.04 %) on one machine, on Node 20 and on
 * Node 24, however loaded (the figures: bench/README.md, Cost budgets enforced by npm test). Each of these was
 * found as noise and removed:
 * - `--max-opt=0`, the interpreter only: optimised code allocates less than the code asks for, by
 *   an amount that changes as functions tier up and deoptimise (kilobytes per call from one
 *   window to the next). So the figure is what the code asks for, an upper bound of what the
 *   optimising compilers leave of it.
 * - `--predictable --no-allocation-site-pretenuring`: no GC or compiler work on other threads,
 *   and no allocation moved to the old generation by a decision some collection took.
 * - WARM_UP calls of each kind first (lazy compilation, first-use caches), and REWARM more after
 *   the full collection that empties the young generation before each window (that collection
 *   empties caches the calls refill). The smaller of WINDOWS windows is the figure.
 * - The client pauses PAUSE_MS after each answer, so every call finds the gateway idle, its
 *   access-log write done.
 * - In the gateway's process (the fixture says how): the store's intervals wait during a window,
 *   `performance.now` advances a fixed step per reading (durations take the same characters),
 *   lmdb-js's read-snapshot timer runs at the end of its turn rather than 1 ms later, and so
 *   does the access log's batch timer (each call's line a write of its own, however fast the
 *   machine runs the next call), the
 *   gateway's own young collection and the sweeping of the full collection are done before the
 *   window; the access log goes to a file, which nothing has to keep up with.
 * - glibc's malloc, told its mmap threshold and one arena (MALLOC): lmdb-js keeps native
 *   addresses in JS numbers, small integers or 16-byte heap numbers depending on where malloc
 *   put the memory, which its dynamic threshold and per-thread arenas decided differently from
 *   one run to the next (modes ≈ 250 bytes per call apart).
 * What is left: Node.js's own once-a-second work (the Date header's cache, the request-timeout
 * check), and on Node 20 an old space whose used size moves by whole allocation buffers.
 *
 * Budgets: per Node.js major (V8 versions allocate differently), MARGIN_BYTES above the figure
 * measured when seeded: room for a different machine (host name, paths) and the noise left, not
 * for one more object per call of any size. Re-seeding: the test prints the line of ALLOCATED
 * holding this run's figures (`# allocated: 20: { plain: …, stream: … },`); copy it over the
 * line of that major below.
 */
import t from 'tap';
import { chatCall, openClients, startCostGateway } from './helpers/cost-gateway.js';

// Thousands of sequential calls: on two busy cores (CI runs two files at once) this passes tap's 120 s.
t.setTimeout(10 * 60_000);

/** Bytes allocated per call, by Node.js major, when last seeded (the line this test prints). */
const ALLOCATED: Record<number, { plain: number; stream: number }> = {
  20: { plain: 58200, stream: 73813 },
  24: { plain: 57508, stream: 73150 },
};
/** How far above its seeded figure a call may allocate: a quarter KB, ≈ 0.3 % of a call. */
const MARGIN_BYTES = 256;

const FLAGS = ['--predictable', '--expose-gc', '--min-semi-space-size=256', '--max-semi-space-size=256', '--max-opt=0', '--no-allocation-site-pretenuring'];
/** glibc's malloc with a fixed mmap threshold (its default) and one arena: see above. */
const MALLOC = { MALLOC_MMAP_THRESHOLD_: '131072', MALLOC_ARENA_MAX: '1' };
/** Calls of each kind before its windows (the plain ones warm most of what a stream runs too). */
const WARM_UP = { plain: 1500, stream: 500 };
const REWARM = 100;
const WINDOW = 500;
const WINDOWS = 2;
const PAUSE_MS = 1;

t.test('bytes allocated per call stay within budget', async (t) => {
  const gw = await startCostGateway(t, { flags: FLAGS, env: MALLOC });
  const clients = await openClients(t, gw.url, 1);
  const measured: Record<'plain' | 'stream', number> = { plain: 0, stream: 0 };
  for (const kind of ['plain', 'stream'] as const) {
    const request = chatCall(gw.key, kind === 'stream');
    await clients.run(request, WARM_UP[kind]);
    const perCall: number[] = [];
    for (let w = 1; w <= WINDOWS; w++) {
      await gw.collect();
      await clients.run(request, REWARM, PAUSE_MS);
      await gw.begin();
      const started = performance.now();
      await clients.run(request, WINDOW, PAUSE_MS);
      const ms = performance.now() - started;
      const report = await gw.end();
      t.same(report.gcs.types, {}, `${kind}, window ${w}: no collection ran`);
      t.ok(report.counts.readSnapshotResets > 0, `${kind}, window ${w}: lmdb-js's read-snapshot timer was found and run at the end of its turn`);
      t.ok(report.counts.accessLogTimers > 0, `${kind}, window ${w}: the access log's batch timer was found and run at the end of its turn`);
      perCall.push(report.heapBytes / WINDOW);
      t.comment(`${kind}, window ${w}: ${(report.heapBytes / WINDOW).toFixed(1)} bytes per call (${WINDOW} calls in ${ms.toFixed(0)} ms; by space: ${JSON.stringify(report.spaces)})`);
    }
    measured[kind] = Math.round(Math.min(...perCall));
  }
  const major = Number(process.versions.node.split('.')[0]);
  t.comment(`allocated: ${major}: { plain: ${measured.plain}, stream: ${measured.stream} },`);
  t.equal(await gw.accessLines(clients.answered), clients.answered, 'the access log was on: a line for every call');
  const budget = ALLOCATED[major];
  if (budget === undefined) return void t.fail(`no budgets for Node.js ${major}: seed them from the allocated: line above`);
  for (const kind of ['plain', 'stream'] as const) {
    t.ok(measured[kind] <= budget[kind] + MARGIN_BYTES, `${kind} call: ${measured[kind]} bytes allocated, budget ${budget[kind]} + ${MARGIN_BYTES}`);
    if (measured[kind] < budget[kind] - MARGIN_BYTES) t.comment(`${kind}: ${budget[kind] - measured[kind]} bytes below its budget: re-seed it (the allocated: line above)`);
  }
});
