/**
 * Does LMDB (through lmdb-js) keep read-modify-write transactions exact when other processes
 * open the same environment while two processes write? The shape of `tollgate serve` (a
 * writer) with `tollgate keys …` commands (short-lived processes that open the environment)
 * next to it, with nothing of tollgate's own code: two writer processes each increment one
 * counter N times in `transactionSync` (noSync, like the server), while, in the churn runs,
 * eight processes at a time open the environment, read and exit, every 100 ms.
 *
 * Three runs: quiet (no openers) and churn, on the binding scripts/build-lmdb.mjs builds (LMDB's
 * ITS#9496 fix), and churn on lmdb-js's prebuilt binding (PREBUILDS_ONLY=1) as the baseline.
 *
 *   node --import tsx bench/lmdb-multiprocess.ts
 *   BENCH_INCREMENTS=20000 BENCH_ROUNDS=3 node --import tsx bench/lmdb-multiprocess.ts
 *
 * Prints the final count against the expected one for each run; exits 1 when a run on the fixed
 * binding is not exact (the prebuilt baseline is expected to lose increments).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { open } from 'lmdb';

const N = Number(process.env.BENCH_INCREMENTS || 20000);
const ROUNDS = Number(process.env.BENCH_ROUNDS || 1);
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

function run(code: string, path: string, prebuilt: boolean): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const env = prebuilt ? { ...process.env, PREBUILDS_ONLY: '1' } : process.env;
    const child = spawn(process.execPath, ['--input-type=module', '-e', code, path], { stdio: ['ignore', 'ignore', 'pipe'], env });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (c) => resolve({ code: c, stderr }));
  });
}

async function once(churn: boolean, prebuilt: boolean): Promise<boolean> {
  const path = join(mkdtempSync(join(tmpdir(), 'lmdb-mp-')), 'data');
  try {
    await run(OPENER, path, prebuilt);
    const writers = [run(WRITER, path, prebuilt), run(WRITER, path, prebuilt)];
    let done = false;
    void Promise.all(writers).then(() => (done = true));
    const openers: Promise<unknown>[] = [];
    while (churn && !done) {
      for (let i = 0; i < 8; i++) openers.push(run(OPENER, path, prebuilt));
      await sleep(100);
    }
    const results = await Promise.all(writers);
    await Promise.all(openers);
    const root = open({ path, maxDbs: 16, overlappingSync: false });
    const count = root.openDB({ name: 'c' }).get('n') as number;
    await root.close();
    const failed = results.filter((r) => r.code !== 0).map((r) => r.stderr.split('\n').find((l) => l.startsWith('Error')) ?? `exit ${r.code}`);
    console.log(`${churn ? 'churn' : 'quiet'}, ${prebuilt ? 'prebuilt binding' : 'fixed binding'}: count ${count}, expected ${2 * N}${failed.length ? `; writers failed: ${failed.join('; ')}` : ''}`);
    return count === 2 * N && failed.length === 0;
  } finally {
    rmSync(dirname(path), { recursive: true, force: true });
  }
}

let exact = true;
for (let round = 0; round < ROUNDS; round++) {
  exact = (await once(false, false)) && exact;
  exact = (await once(true, false)) && exact;
  await once(true, true);
}
process.exit(exact ? 0 : 1);
