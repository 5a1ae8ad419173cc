/**
 * CPU instructions per plain call, counted by valgrind's callgrind: repeatable for the same
 * build whatever else the machine is doing, where CPU time on a shared two-core machine moves by
 * ±30 % from one round to the next (bench/cpu-budget.ts). Each build's `tollgate serve` runs
 * under callgrind (`node --single-threaded`: no compiler or GC threads), takes WARM_UP sequential
 * calls uninstrumented, then CALLS instrumented (`callgrind_control -i on`, then `-d` dumps
 * them); the window's instructions divided by CALLS are what one call costs it, every thread of
 * the process counted. The client and the mock provider run outside valgrind.
 *
 *   node --import tsx bench/instructions.ts [BUILD_DIR ...]      (default: this checkout)
 *
 * A BUILD_DIR is a checkout with `dist/cli/main.js`; name builds more than once to alternate
 * them. Needs valgrind (Debian's package). About a minute and a half per build.
 *
 * Repeatable to ±0.3 % for most runs of a build; some runs read 5–15 % higher, when a compilation
 * or a full collection fell inside the window (with 1,500 calls of warm-up, most did: figures
 * twice as high and ±4 %). The warm-up is long for that reason; take each build's minimum over
 * a few alternated runs.
 *
 * Environment: BENCH_WARM_UP (calls before the window, default 6000), BENCH_CALLS (default 2000).
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { CHAT_PATH, guardChildren, HOST, machine, PLAIN_BODY, ROOT, runMain, runNode, spawnServer, startMock, tempDir, writeBenchConfig } from './lib.js';

const builds = process.argv.slice(2).length > 0 ? process.argv.slice(2) : [ROOT];
const WARM_UP = Number(process.env.BENCH_WARM_UP || 6000);
const CALLS = Number(process.env.BENCH_CALLS || 2000);

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

async function measure(build: string, mockUrl: string): Promise<number> {
  const cli = join(build, 'dist', 'cli', 'main.js');
  const dir = tempDir('tollgate-bench-instructions-');
  const config = join(dir, 'tollgate.config.json');
  writeBenchConfig(config, mockUrl);
  const common = ['--config', config, '--data', join(dir, 'data')];
  const { key } = JSON.parse(await runNode([cli, 'keys', 'create', '--mode', 'credit', '--balance', '1000000', '--json', ...common])) as { key: string };
  const out = join(dir, 'callgrind.out');
  const server = await spawnServer(`tollgate ${build}`, [
    '--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${out}`,
    process.execPath, '--single-threaded', '--hash-seed=1', '--random-seed=1', cli, 'serve', ...common, '--host', HOST, '--port', '0',
  ], { OPENAI_API_KEY: 'sk-bench', ANTHROPIC_API_KEY: 'sk-bench', TOLLGATE_QUIET: '1' }, 180_000, 'valgrind');
  const agent = new Agent({ connections: 1 });
  const calls = async (n: number): Promise<void> => {
    for (let i = 0; i < n; i++) {
      const res = await request(server.url + CHAT_PATH, { method: 'POST', dispatcher: agent, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: PLAIN_BODY });
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
  guardChildren(builds.length * 10 * 60_000);
  process.stderr.write(`instructions: ${machine()}, ${WARM_UP} calls, then ${CALLS} counted, per build\n`);
  const mock = await startMock();
  console.log('| build | instructions per plain call |');
  console.log('|---|---|');
  for (const build of builds) console.log(`| ${build} | ${Math.round(await measure(build, mock.url)).toLocaleString('en-US')} |`);
}

await runMain('instructions', main);
