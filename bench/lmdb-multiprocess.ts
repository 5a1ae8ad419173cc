/**
 * Does LMDB (through lmdb-js) keep read-modify-write transactions exact when other processes
 * open the same environment while two processes write? The shape of `tollgate serve` (a
 * writer) with `tollgate keys …` commands (short-lived processes that open the environment)
 * next to it, with nothing of tollgate's own code: two writer processes each increment one
 * counter N times in `transactionSync` (noSync, like the server), while, in the `churn` run,
 * four processes at a time open the environment, read and exit, every 200 ms.
 *
 *   node --import tsx bench/lmdb-multiprocess.ts            # quiet, then churn
 *   BENCH_INCREMENTS=20000 node --import tsx bench/lmdb-multiprocess.ts
 *
 * Prints the final count against the expected one for each run; exit code 1 when one differs.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { open } from 'lmdb';

const N = Number(process.env.BENCH_INCREMENTS || 20000);
const OPTIONS = 'maxDbs: 16, overlappingSync: false';
const WRITER = `import { open } from 'lmdb';
const root = open({ path: process.argv[1], ${OPTIONS}, noSync: true });
const db = root.openDB({ name: 'c' });
for (let i = 0; i < ${N}; i++) {
  root.transactionSync(() => { db.put('n', (db.get('n') ?? 0) + 1); });
  if (i % 50 === 0) await new Promise((r) => setTimeout(r, 1));
}
process.exit(0);`;
const OPENER = `import { open } from 'lmdb';
open({ path: process.argv[1], ${OPTIONS} }).openDB({ name: 'c' }).get('n');
process.exit(0);`;

function run(code: string, path: string): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', code, path], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (c) => resolve({ code: c, stderr }));
  });
}

async function once(churn: boolean): Promise<boolean> {
  const path = mkdtempSync(join(tmpdir(), 'lmdb-mp-'));
  try {
    await run(OPENER, path);
    const writers = [run(WRITER, path), run(WRITER, path)];
    let done = false;
    void Promise.all(writers).then(() => (done = true));
    const openers: Promise<unknown>[] = [];
    while (churn && !done) {
      for (let i = 0; i < 4; i++) openers.push(run(OPENER, path));
      await sleep(200);
    }
    const results = await Promise.all(writers);
    await Promise.all(openers);
    const root = open({ path, maxDbs: 16, overlappingSync: false });
    const count = root.openDB({ name: 'c' }).get('n') as number;
    await root.close();
    const failed = results.filter((r) => r.code !== 0).map((r) => r.stderr.split('\n').find((l) => l.startsWith('Error')) ?? `exit ${r.code}`);
    console.log(`${churn ? 'churn' : 'quiet'}: count ${count}, expected ${2 * N}${failed.length ? `; writers failed: ${failed.join('; ')}` : ''}`);
    return count === 2 * N && failed.length === 0;
  } finally {
    rmSync(path, { recursive: true, force: true });
  }
}

const quiet = await once(false);
const churn = await once(true);
process.exit(quiet && churn ? 0 : 1);
