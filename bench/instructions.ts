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
 * million instructions per stream, against 1.01 million after 6,000).
 *
 * Repeatable to ±0.3 % for most runs of a build; some runs read 5–15 % higher, when a compilation
 * or a full collection fell inside the window (with 1,500 calls of warm-up, most did: figures
 * twice as high and ±4 %). The warm-up is long for that reason; take each target's minimum over
 * a few alternated runs.
 *
 * Environment: BENCH_WARM_UP (calls before the window, default 6000), BENCH_CALLS (default 2000),
 * BENCH_CALL (plain or stream, default plain).
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { bareProxyScript, CHAT_PATH, guardChildren, HOST, machine, MODEL, PLAIN_BODY, ROOT, runMain, runNode, spawnServer, startMock, tempDir, writeBenchConfig } from './lib.js';

const targets = process.argv.slice(2).length > 0 ? process.argv.slice(2) : [ROOT];
const WARM_UP = Number(process.env.BENCH_WARM_UP || 6000);
const CALLS = Number(process.env.BENCH_CALLS || 2000);
const CALL = process.env.BENCH_CALL || 'plain';
if (CALL !== 'plain' && CALL !== 'stream') throw new Error(`BENCH_CALL: unknown call '${CALL}' (plain, stream)`);
/** A streamed call whose events are each a read of their own (see the header). */
const STREAM_APART_BODY = JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'Say hi.' }], stream: true, stream_options: { include_usage: true }, mock: { chunks: 20, chunkDelayMs: 2 } });
const BODY = CALL === 'stream' ? STREAM_APART_BODY : PLAIN_BODY;

/** The instructions (Ir) of the largest callgrind dump in `dir`: the counted window's. */
function windowInstructions(dir: string): number {
  let most = 0;
  for (const file of readdirSync(dir)) {
    if (!file.startsWith('callgrind.out')) continue;
    const totals = /^(?:summary|totals): (\d+)/m.exec(readFileSync(join(dir, file), 'utf8'));
    if (totals !== null) most = Math.max(most, Number(totals[1]));
  }
  if (most === 0) throw new Error(`no callgrind dump with instructions in ${dir}`);
  return most;
}

/** The target under callgrind: a build's `tollgate serve` with a key of its own, or the bare proxy (no key). */
async function startTarget(target: string, mockUrl: string, dir: string, out: string): Promise<{ server: Awaited<ReturnType<typeof spawnServer>>; key: string }> {
  const valgrind = ['--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${out}`, process.execPath, '--single-threaded', '--hash-seed=1', '--random-seed=1'];
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
      const res = await request(server.url + CHAT_PATH, { method: 'POST', dispatcher: agent, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: BODY });
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
  return windowInstructions(dir) / CALLS;
}

async function main(): Promise<void> {
  guardChildren(targets.length * (CALL === 'stream' ? 20 : 10) * 60_000);
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
