/**
 * Start-up time to "listening": from spawning `tollgate serve --port 0` to the line `listening
 * on http://…` on its stdout, for the single binary and for the built CLI on Node.js, in
 * alternation (A B C D A B C D …), each target on a data directory of its own that the first,
 * unmeasured, start creates. Each server is stopped with SIGTERM before the next starts.
 *
 *   npm run build:binary && npx tsc -p tsconfig.json
 *   node --import tsx bench/startup.ts [--runs N]      (default 20 runs per target)
 *
 * Targets: dist/tollgate with its LMDB binding already in the cache directory (every start but
 * a host's first); dist/tollgate with an empty cache directory each time (a host's first start:
 * the binding is written out once); `node dist/cli/main.js` on this Node.js; and the same on the
 * binary's Node.js (scripts/lts-node.mjs), which separates what the runtime changes from what
 * the single-file packaging changes.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, guardChildren, machine, median, quantile, ROOT, runMain, spawnServer, tempDir } from './lib.js';
// @ts-expect-error: a plain .mjs script without types
import { ltsNode } from '../scripts/lts-node.mjs';

const runsArg = process.argv.indexOf('--runs');
const RUNS = runsArg === -1 ? 20 : Number(process.argv[runsArg + 1]);
if (!Number.isInteger(RUNS) || RUNS < 1) throw new Error('--runs needs a whole number ≥ 1');
const BINARY = join(ROOT, 'dist', 'tollgate');

interface Target {
  label: string;
  executable: string;
  args: string[];
  env: () => NodeJS.ProcessEnv;
  ms: number[];
}

async function main(): Promise<void> {
  if (!existsSync(BINARY)) throw new Error(`${BINARY} is missing: build it with \`npm run build:binary\``);
  guardChildren(RUNS * 4 * 10_000 + 60_000);
  const lts = ltsNode() as { execPath: string; version: string; modules: string };
  const providerEnv = { OPENAI_API_KEY: 'sk-bench', ANTHROPIC_API_KEY: 'sk-bench' };
  const serve = (dataDir: string): string[] => ['serve', '--data', dataDir, '--host', '127.0.0.1', '--port', '0'];
  const freshCaches: string[] = [];
  const targets: Target[] = [
    { label: 'binary, binding cached', executable: BINARY, args: serve(tempDir('startup-binary-')), env: () => providerEnv, ms: [] },
    {
      label: 'binary, first start (empty cache)',
      executable: BINARY,
      args: serve(tempDir('startup-binary-cold-')),
      env: () => {
        // Under the checkout, not /tmp (which may be noexec for the binding).
        const cache = mkdtempSync(join(ROOT, '.cache', 'startup-xdg-'));
        freshCaches.push(cache);
        return { ...providerEnv, XDG_CACHE_HOME: cache };
      },
      ms: [],
    },
    { label: `node ${process.version} dist/cli/main.js`, executable: process.execPath, args: [CLI, ...serve(tempDir('startup-node-'))], env: () => ({ ...process.env, ...providerEnv }), ms: [] },
    {
      label: `node ${lts.version} dist/cli/main.js`,
      executable: lts.execPath,
      args: [CLI, ...serve(tempDir('startup-lts-'))],
      env: () => ({ ...process.env, ...providerEnv, LMDB_PREBUILD: join(ROOT, '.cache', `lmdb-abi${lts.modules}`) }),
      ms: [],
    },
  ];
  process.on('exit', () => freshCaches.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

  process.stderr.write(`startup: ${machine()}\nstartup: ${RUNS} runs per target, alternating, after one unmeasured start each\n`);
  for (let run = -1; run < RUNS; run++) {
    for (const target of targets) {
      const started = process.hrtime.bigint();
      const server = await spawnServer(target.label, target.args, target.env(), 30_000, target.executable);
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      if (run >= 0) target.ms.push(ms);
      await new Promise<void>((resolve) => {
        server.proc.once('exit', () => resolve());
        server.proc.kill('SIGTERM');
      });
    }
  }

  const rows = targets.map((t) => {
    const sorted = Float64Array.from(t.ms).sort();
    return [t.label, median(t.ms).toFixed(1), quantile(sorted, 0.1).toFixed(1), quantile(sorted, 0.9).toFixed(1), Math.min(...t.ms).toFixed(1), Math.max(...t.ms).toFixed(1)];
  });
  const header = ['start-up to "listening", ms', 'median', 'p10', 'p90', 'min', 'max'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]): string => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  process.stdout.write(`machine: ${machine()}\nruns: ${RUNS} per target\n\n${[line(header), ...rows.map(line)].join('\n')}\n`);
}

await runMain('startup', main);
