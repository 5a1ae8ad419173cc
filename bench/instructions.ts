/**
 * CPU instructions per call, counted by valgrind's callgrind: repeatable for the same build
 * whatever else the machine is doing, where CPU time on a shared two-core machine moves by ±30 %
 * from one round to the next (bench/cpu-budget.ts). Each target runs under callgrind (`node
 * --single-threaded`: no compiler or GC threads), takes WARM_UP sequential calls uninstrumented,
 * then CALLS instrumented (`callgrind_control -i on`, then `-d` dumps them); the window's
 * instructions divided by CALLS are what one call costs it, every thread of the process counted.
 * The client and the mock provider run outside valgrind.
 *
 *   node --import tsx bench/instructions.ts [TARGET ...]      (default: this checkout)
 *
 * A TARGET is a checkout with `dist/cli/main.js` (`tollgate serve` on a data directory of its
 * own), or `bare`: the bare proxy of bench/bare-proxy.ts, for the ratio of a build's count to
 * its. Name targets more than once to alternate them. Needs valgrind (Debian's package). About a
 * minute and a half per target for plain calls.
 *
 * BENCH_CALL=stream counts a streamed call instead: the mock's 20 deltas and 4 more events, each
 * its own write 2 ms apart, so each is a read of its own, as in the streams-at-scale scenario
 * (with BENCH_CALLS=500, about seven minutes per target). Keep the warm-up at 6,000: after 1,500
 * streams the window still held compilations and a full collection (the bare proxy read 1.60
 * million instructions per stream, against 1.01 million after 6,000). BENCH_CALL=messages: the
 * same stream in Anthropic's Messages format (`/v1/messages`, the coding agents' format), whose
 * events the gateway searches with other markers than a Chat stream's.
 *
 * Repeatable to ±0.3 % for most runs of a build; some runs read 5–15 % higher, when a compilation
 * or a full collection fell inside the window (with 1,500 calls of warm-up, most did: figures
 * twice as high and ±4 %). The warm-up is long for that reason; take each target's minimum over
 * a few alternated runs.
 *
 * BENCH_TOP=N also prints, for each run, where its instructions went: by library (tollgate's own
 * JS, each package's JS, Node's JS, LMDB's C, V8's builtins and C++, libc), then the N functions
 * with the most instructions of their own. JS functions are named from the map that
 * `--perf-basic-prof` writes (callgrind itself sees only addresses in V8's code space; where V8
 * reused the space of freed code, the entry written last), marked with the tier their code ran in
 * (`*` TurboFan, `+` Maglev, `^` baseline, `~` interpreted), and placed
 * as bench/top-functions.ts places a CPU profile's (tollgate's through its source maps). Compare
 * functions rather than totals between builds: a compilation that falls in one run's window moves
 * its total by more than most changes. One more thing callgrind counts differently from the CPU:
 * `rep stosb` counts one instruction per byte, so libc's `memset` (LMDB zeroing each page it
 * allocates in a commit: eleven of ≈ 4 KB per plain call) reads ≈ 45,000 instructions per call,
 * where the CPU spends a few hundred cycles per page.
 *
 * Environment: BENCH_WARM_UP (calls before the window, default 6000), BENCH_CALLS (default 2000),
 * BENCH_CALL (plain, stream or messages, default plain), BENCH_TOP (functions listed, default none).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { locate } from './top-functions.js';
import { bareProxyScript, CHAT_PATH, envChoice, guardChildren, HOST, machine, MESSAGES_MODEL, MESSAGES_PATH, PLAIN_BODY, READ_PER_EVENT_BODY, ROOT, runMain, runNode, spawnServer, startMock, tempDir, writeBenchConfig } from './lib.js';

const targets = process.argv.slice(2).length > 0 ? process.argv.slice(2) : [ROOT];
const WARM_UP = Number(process.env.BENCH_WARM_UP || 6000);
const CALLS = Number(process.env.BENCH_CALLS || 2000);
const TOP = Number(process.env.BENCH_TOP || 0);
/** Each call's path and body: a plain chat call, or a streamed one whose events are each a read of their own (see the header). */
const [CALL, { path: PATH, body: BODY }] = envChoice('BENCH_CALL', 'plain', {
  plain: { path: CHAT_PATH, body: PLAIN_BODY },
  stream: { path: CHAT_PATH, body: READ_PER_EVENT_BODY },
  messages: { path: MESSAGES_PATH, body: JSON.stringify({ model: MESSAGES_MODEL, max_tokens: 1024, messages: [{ role: 'user', content: 'Say hi.' }], stream: true, mock: { chunks: 20, chunkDelayMs: 2 } }) },
});

/** The largest callgrind dump in `dir` (the counted window's) and its instructions (Ir). */
function windowDump(dir: string): { file: string; instructions: number } {
  let most = { file: '', instructions: 0 };
  for (const file of readdirSync(dir)) {
    if (!file.startsWith('callgrind.out')) continue;
    const totals = /^(?:summary|totals): (\d+)/m.exec(readFileSync(join(dir, file), 'utf8'));
    if (totals !== null && Number(totals[1]) > most.instructions) most = { file: join(dir, file), instructions: Number(totals[1]) };
  }
  if (most.instructions === 0) throw new Error(`no callgrind dump with instructions in ${dir}`);
  return most;
}

/**
 * The code ranges of the `--perf-basic-prof` map process `pid` wrote (start, size, name), in the
 * order written; the map is removed. V8 reuses the space of code it has freed, so a later entry
 * can cover an earlier one's addresses (ten of those a streamed call's window counted: bench/
 * README.md, History, "2026-11-29, third").
 */
function readPerfMap(pid: number): Array<[number, number, string]> {
  const file = `/tmp/perf-${pid}.map`;
  if (!existsSync(file)) return [];
  const ranges: Array<[number, number, string]> = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^([0-9a-f]+) ([0-9a-f]+) (.*)$/.exec(line);
    if (m !== null) ranges.push([parseInt(m[1]!, 16), parseInt(m[2]!, 16), m[3]!]);
  }
  rmSync(file, { force: true });
  return ranges;
}

/**
 * The code at `address` as the window ran it: of the entries that cover it, the one written last
 * (the code that took the space over; the window is the run's end). A search by start address
 * would name either, whichever it met first.
 */
function nameAt(ranges: Array<[number, number, string]>, address: number): string | undefined {
  for (let i = ranges.length - 1; i >= 0; i--) {
    const [start, size, name] = ranges[i]!;
    if (address >= start && address < start + size) return name;
  }
  return undefined;
}

/** Which part of the process native code belongs to (the first match). */
const NATIVE: Array<[string, RegExp]> = [
  ['lmdb (C)', /lmdb\.node\]$/],
  ['libc', /libc\.so/],
  ['V8 builtins', /Builtins_/],
  ['Node and V8 (C++)', /\/node\]$/],
];

/**
 * A JS function of the perf map ("JS:*write file:///…/dist/formats/top-level-scanner.js:276:10")
 * named and placed as the CPU profile's report does (top-functions.ts: tollgate's code through its
 * source maps, a package by its name); RegExp code, wasm and stubs are "other code". The name
 * keeps V8's tier mark (the header lists them; an optimised tier's may carry a `'`), so one
 * function can have a row per tier.
 */
function jsFunction(mapName: string): { name: string; library: string } {
  const m = /^JS:((?:[*+~^]'?)?)(.*?) ?(\S+):(\d+):(\d+)$/.exec(mapName);
  if (m === null) return { name: mapName, library: 'other code (RegExp, wasm, stubs)' };
  const { where, area, ours } = locate({ functionName: m[2]!, url: m[3]!, lineNumber: Number(m[4]) - 1, columnNumber: Number(m[5]) - 1 });
  return { name: `${m[1]}${m[2] || '(anonymous)'} ${where}`, library: ours ? 'tollgate (JS)' : `${area} (JS)` };
}

/** Prints where a run's window went: by library, then the TOP functions by their own instructions. */
function printBreakdown(target: string, dump: string, pid: number): void {
  const ranges = readPerfMap(pid);
  const annotated = execFileSync('callgrind_annotate', ['--inclusive=no', '--threshold=100', dump], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  const byFunction = new Map<string, number>();
  const byLibrary = new Map<string, number>();
  for (const line of annotated.split('\n')) {
    const m = /^\s*([\d,]+) \([^)]*\)\s+(.*)$/.exec(line);
    if (m === null || line.includes('PROGRAM TOTALS')) continue;
    const address = /^\?\?\?:0x([0-9a-f]+)/.exec(m[2]!);
    const { name, library } = address !== null
      ? jsFunction(nameAt(ranges, parseInt(address[1]!, 16)) ?? 'unnamed code')
      : { name: m[2]!.replace(/'\d+/, ''), library: NATIVE.find(([, pattern]) => pattern.test(m[2]!))?.[0] ?? 'other' };
    const n = Number(m[1]!.replace(/,/g, '')) / CALLS;
    byFunction.set(name, (byFunction.get(name) ?? 0) + n);
    byLibrary.set(library, (byLibrary.get(library) ?? 0) + n);
  }
  const row = (n: number, what: string): string => `| ${Math.round(n).toLocaleString('en-US')} | ${what.replace(/\|/g, '\\|').slice(0, 140)} |`;
  console.log(`\n${target}, instructions per call by library:\n\n| instructions | library |\n|---|---|`);
  for (const [library, n] of [...byLibrary].sort((a, b) => b[1] - a[1])) if (n >= 0.5) console.log(row(n, library));
  console.log(`\n${target}, the ${TOP} functions with the most instructions of their own, per call:\n\n| instructions | function |\n|---|---|`);
  for (const [name, n] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(row(n, name));
  console.log('');
}

/** The target under callgrind: a build's `tollgate serve` with a key of its own, or the bare proxy (no key). */
async function startTarget(target: string, mockUrl: string, dir: string, out: string): Promise<{ server: Awaited<ReturnType<typeof spawnServer>>; key: string }> {
  // With BENCH_TOP, names for JIT code (/tmp/perf-PID.map); the V8 log that the flag also starts goes into the run's directory.
  const perfMapFlags = TOP > 0 ? ['--perf-basic-prof', `--logfile=${join(dir, 'v8.log')}`, '--no-logfile-per-isolate'] : [];
  const valgrind = ['--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${out}`, process.execPath, '--single-threaded', '--hash-seed=1', '--random-seed=1', ...perfMapFlags];
  if (target === 'bare') {
    const server = await spawnServer('bare proxy', [...valgrind, await bareProxyScript(), mockUrl, '1024'], {}, 180_000, 'valgrind');
    return { server, key: 'gw_live_unused' };
  }
  const cli = join(target, 'dist', 'cli', 'main.js');
  const config = join(dir, 'tollgate.config.json');
  writeBenchConfig(config, mockUrl);
  const common = ['--config', config, '--data', join(dir, 'data')];
  const { key } = JSON.parse(await runNode([cli, 'keys', 'create', '--mode', 'credit', '--balance', '1000000', '--json', ...common])) as { key: string };
  const server = await spawnServer(`tollgate ${target}`, [...valgrind, cli, 'serve', ...common, '--host', HOST, '--port', '0'],
    { OPENAI_API_KEY: 'sk-bench', ANTHROPIC_API_KEY: 'sk-bench', TOLLGATE_QUIET: '1' }, 180_000, 'valgrind');
  return { server, key };
}

async function measure(target: string, mockUrl: string): Promise<number> {
  const dir = tempDir('tollgate-bench-instructions-');
  const out = join(dir, 'callgrind.out');
  const { server, key } = await startTarget(target, mockUrl, dir, out);
  const agent = new Agent({ connections: 1 });
  const calls = async (n: number): Promise<void> => {
    for (let i = 0; i < n; i++) {
      const res = await request(server.url + PATH, { method: 'POST', dispatcher: agent, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: BODY });
      await res.body.arrayBuffer();
      if (res.statusCode !== 200) throw new Error(`call answered ${res.statusCode}`);
    }
  };
  await calls(WARM_UP);
  execFileSync('callgrind_control', ['-i', 'on', String(server.pid)], { stdio: 'ignore' });
  await calls(CALLS);
  execFileSync('callgrind_control', ['-d', String(server.pid)], { stdio: 'ignore' });
  await agent.close();
  const exited = new Promise<void>((resolve) => server.proc.once('exit', () => resolve()));
  server.proc.kill('SIGTERM');
  await exited;
  await sleep(100);
  const dump = windowDump(dir);
  if (TOP > 0) printBreakdown(target, dump.file, server.pid);
  return dump.instructions / CALLS;
}

async function main(): Promise<void> {
  guardChildren(targets.length * (CALL === 'plain' ? 10 : 20) * 60_000);
  process.stderr.write(`instructions: ${machine()}, ${WARM_UP} ${CALL} calls, then ${CALLS} counted, per target\n`);
  const mock = await startMock();
  const counts = new Map<string, number[]>();
  console.log(`| target | instructions per ${CALL} call |`);
  console.log('|---|---|');
  for (const target of targets) {
    const n = await measure(target, mock.url);
    counts.set(target, [...(counts.get(target) ?? []), n]);
    console.log(`| ${target} | ${Math.round(n).toLocaleString('en-US')} |`);
  }
  // Each target's minimum (see the header), and its ratio to the bare proxy's.
  const bare = counts.has('bare') ? Math.min(...counts.get('bare')!) : null;
  if (bare === null || counts.size === 1) return;
  console.log(`\n| target | minimum | ÷ bare proxy |\n|---|---|---|`);
  for (const [target, runs] of counts) {
    const least = Math.min(...runs);
    console.log(`| ${target} | ${Math.round(least).toLocaleString('en-US')} | ${(least / bare).toFixed(2)} |`);
  }
}

await runMain('instructions', main);
