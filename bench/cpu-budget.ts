/**
 * Where the two cores go at c=32, per non-streamed request: the load generator (this process),
 * the mock provider and the bare proxy, then each given build of tollgate with its garbage
 * collection as `--trace-gc` reports it (requests per young collection, full collections, GC
 * milliseconds per request). Builds are run in alternation, `BENCH_ROUNDS` times each.
 *
 *   node --import tsx bench/cpu-budget.ts [BUILD_DIR[,NAME=VALUE…] ...]      (default: this checkout)
 *
 * A BUILD_DIR is a checkout (or any directory) with `dist/cli/main.js`; the settings after it are
 * set in the environment while that target starts (e.g. `.,BENCH_ACCESS_LOG=off`: the same build
 * without its access log, see bench/lib.ts), so one build can be compared with itself. On a machine that runs
 * all of these on two cores, the throughput ratio of a proxy to the bare proxy is bounded by the
 * sum of these CPU figures: see README, Benchmarks (the Redis row).
 *
 * Environment: BENCH_DURATION (s per measured run, default 5), BENCH_ROUNDS (default 2),
 * BENCH_WARMUP (s of load before each target's measured run, in two runs; default 6),
 * BENCH_RATE (requests per second offered to every target in the measured run; default none),
 * BENCH_BODY (`conversation`: a Chat request of BENCH_BODY_KIB KiB of turns, default 192;
 * `agent`: a Messages request with a coding agent's 43 KB of tools and that many KiB of turns;
 * bench/lib.ts largeRequest) instead of the bench's short chat request: what a large body costs.
 *
 * Each round starts every target afresh, in the reverse order every other round, and the end
 * prints each build's median µs per request and median ratio to the bare proxy of its round, with
 * the spread, and how much more than the bare proxy its main thread (the event loop) and its other
 * threads (V8's compiler and collector, libuv's pool, LMDB's) spent per request. At c=32 each
 * proxy runs as fast as the two shared cores let it, and a slower one batches less per event-loop
 * turn, so its CPU per request rises with its slowness; BENCH_RATE (below what every target
 * sustains) compares the work per request at the same pace.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CHAT_PATH, cpuMs, guardChildren, largeRequest, load, machine, PLAIN_BODY, ROOT, median, runMain, startBareProxy, startMock, startTollgate, threadCpuMs, type LoadResult, type Server } from './lib.js';

const duration = Number(process.env.BENCH_DURATION || 5);
const rounds = Number(process.env.BENCH_ROUNDS || 2);
const warmUpSeconds = Number(process.env.BENCH_WARMUP || 6);
/** BENCH_RATE: requests per second offered to every target (default: as fast as c=32 goes). */
const rate = process.env.BENCH_RATE ? Number(process.env.BENCH_RATE) : undefined;
const builds = process.argv.slice(2).length > 0 ? process.argv.slice(2) : [ROOT];
const C = 32;
/** The request every call sends: the bench's short chat request, or a large one (BENCH_BODY). */
const bodyKind = process.env.BENCH_BODY || 'short';
if (bodyKind !== 'short' && bodyKind !== 'conversation' && bodyKind !== 'agent') throw new Error(`BENCH_BODY: unknown body '${bodyKind}' (short, conversation, agent)`);
const { path: PATH, body: BODY } = bodyKind === 'short' ? { path: CHAT_PATH, body: PLAIN_BODY } : largeRequest(bodyKind, Number(process.env.BENCH_BODY_KIB || 192));

/** GC figures from a `--trace-gc` log's lines written during the measured run. */
function gcFigures(lines: string[], requests: number): string {
  const scavenges = lines.filter((l) => l.includes('Scavenge')).length;
  const fulls = lines.filter((l) => l.includes('Mark-Compact')).length;
  let ms = 0;
  for (const l of lines) ms += Number(/MB, ([\d.]+) \/ [\d.]+ ms/.exec(l)?.[1] ?? 0);
  return `${(requests / Math.max(1, scavenges)).toFixed(0)} req/young GC, ${fulls} full GCs, GC ${((ms * 1000) / requests).toFixed(1)} µs/req`;
}

/**
 * BENCH_WARMUP seconds of the measured load, in two runs: the second opens new connections, so
 * the code that closes and replaces them is compiled before the measured run (which opens its
 * own) and not during it, a cost a process pays once. Counted with --trace-opt (tollgate, c=32, a
 * measured run of 5 s): after one 6 s run, 50 TurboFan compilations in the measured run of plain
 * calls (74 of streamed calls, 252 ms of compiling); after two runs of 3 s, 14 (35, 95 ms).
 */
async function warmUp(url: string, key: string | null): Promise<void> {
  await load(url, PATH, key, BODY, C, warmUpSeconds / 2);
  await load(url, PATH, key, BODY, C, warmUpSeconds / 2);
}

/** The run, when every call was answered 2xx: CPU per call is divided by the calls answered. */
function answered(name: string, r: LoadResult): LoadResult {
  if (r.non2xx + r.errors + r.timeouts > 0) throw new Error(`${name}: ${r.non2xx} answers not 2xx, ${r.errors} errors, ${r.timeouts} timeouts`);
  return r;
}

async function stop(server: Server): Promise<void> {
  const exited = new Promise<void>((resolve) => server.proc.once('exit', () => resolve()));
  server.proc.kill('SIGTERM');
  await exited;
}

const BARE = 'bare proxy';
let mock: Server;

/** A target's CPU per request: all its threads, and its main thread (the event loop) alone. */
interface PerRequest { all: number; main: number }

/** µs per request of a process's threads between two readings (threadCpuMs). */
function perRequest(before: { main: number; others: number }, after: { main: number; others: number }, requests: number): PerRequest {
  const main = ((after.main - before.main) * 1000) / requests;
  return { all: main + ((after.others - before.others) * 1000) / requests, main };
}

/** One target's measured run: µs of its CPU per request (and, for the bare proxy, the others'). */
async function measure(round: number, target: string): Promise<PerRequest> {
  if (target === BARE) {
    const bare = await startBareProxy(mock.url);
    await warmUp(bare.url, null);
    const self0 = process.cpuUsage();
    const mock0 = cpuMs(mock.pid);
    const bare0 = threadCpuMs(bare.pid);
    const r = answered('bare proxy', await load(bare.url, PATH, null, BODY, C, duration, rate));
    const self = process.cpuUsage(self0);
    const cost = perRequest(bare0, threadCpuMs(bare.pid), r.ok);
    const per = (ms: number): string => ((ms * 1000) / r.ok).toFixed(1);
    process.stdout.write(`round ${round}  bare proxy  ${Math.round(r.rps)} req/s   µs/req: load generator ${per((self.user + self.system) / 1000)}, mock ${per(cpuMs(mock.pid) - mock0)}, bare proxy ${cost.all.toFixed(1)} (main thread ${cost.main.toFixed(1)})\n`);
    await stop(bare);
    return cost;
  }
  const [dir, ...settings] = target.split(',');
  const saved = settings.map((setting) => {
    // Split at the first '=': a value may hold one (NODE_OPTIONS=--max-semi-space-size=32).
    const at = setting.indexOf('=');
    const name = setting.slice(0, at);
    const value = setting.slice(at + 1);
    const before = process.env[name];
    process.env[name] = value;
    return (): void => void (before === undefined ? delete process.env[name] : (process.env[name] = before));
  });
  const tg = await startTollgate('tollgate', mock.url, 1, { cli: join(dir!, 'dist', 'cli', 'main.js'), nodeFlags: ['--trace-gc'] }).finally(() => saved.forEach((restore) => restore()));
  // --trace-gc writes to stdout, which the harness sends to a file: read it from there.
  const out = tg.stdoutPath;
  await warmUp(tg.url, tg.key);
  const before = readFileSync(out, 'utf8').length;
  const tg0 = threadCpuMs(tg.pid);
  const t = answered(`tollgate ${target}`, await load(tg.url, PATH, tg.key, BODY, C, duration, rate));
  const cost = perRequest(tg0, threadCpuMs(tg.pid), t.ok);
  const lines = readFileSync(out, 'utf8').slice(before).split('\n');
  process.stdout.write(`round ${round}  tollgate ${target}  ${Math.round(t.rps)} req/s   ${cost.all.toFixed(1)} µs/req (main thread ${cost.main.toFixed(1)}); ${gcFigures(lines, t.ok)}\n`);
  await stop(tg);
  return cost;
}

async function main(): Promise<void> {
  const targets = [BARE, ...builds];
  guardChildren((rounds * targets.length * (duration + warmUpSeconds + 20) + 120) * 1000);
  process.stderr.write(`cpu-budget: ${machine()}, c=${C}${rate !== undefined ? `, ${rate} req/s offered` : ''}, ${Buffer.byteLength(BODY)}-byte requests to ${PATH}, ${rounds} × ${duration} s per target\n`);
  mock = await startMock();
  const measured = new Map<string, PerRequest[]>(targets.map((t) => [t, []]));
  for (let round = 1; round <= rounds; round++) {
    // Every target fresh each round (the bare proxy too: it used to be started once and kept warm
    // across rounds while each tollgate started cold), in the reverse order every other round.
    for (const target of round % 2 === 1 ? targets : [...targets].reverse()) measured.get(target)!.push(await measure(round, target));
  }
  const bare = measured.get(BARE)!;
  const bareAll = bare.map((c) => c.all);
  const bareMain = bare.map((c) => c.main);
  process.stdout.write(`\nmedian over ${rounds} rounds (min…max): bare proxy ${median(bareAll).toFixed(1)} µs/req (${Math.min(...bareAll).toFixed(1)}…${Math.max(...bareAll).toFixed(1)}), main thread ${median(bareMain).toFixed(1)}\n`);
  for (const build of builds) {
    const costs = measured.get(build)!;
    const ratios = costs.map((c, i) => c.all / bare[i]!.all);
    const extraMain = costs.map((c, i) => c.main - bare[i]!.main);
    const extraOthers = costs.map((c, i) => c.all - c.main - (bare[i]!.all - bare[i]!.main));
    process.stdout.write(`${build}: ${median(costs.map((c) => c.all)).toFixed(1)} µs/req; ÷ the bare proxy of its round ${median(ratios).toFixed(2)} (${Math.min(...ratios).toFixed(2)}…${Math.max(...ratios).toFixed(2)}); more than the bare proxy: main thread ${median(extraMain).toFixed(1)} µs/req, other threads ${median(extraOthers).toFixed(1)}\n`);
  }
}

await runMain('cpu-budget', main);
