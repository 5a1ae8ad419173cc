/**
 * Runs behaviour files again on the Redis backend: each file as its own process, with
 * TOLLGATE_TEST_BACKEND=redis, so every gateway and every CLI command it starts use a
 * redis-server of the test's own (./harness.ts). Same assertions, other store.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Test } from 'tap';

/** Seconds a file may take on Redis: well inside the 20 minutes each on-redis-*.test.ts allows itself. */
const CHILD_TIMEOUT_S = 600;

export function runOnRedis(t: Test, names: readonly string[]): void {
  for (const name of names) {
    t.test(`${name} on Redis`, async (t) => {
      const file = fileURLToPath(new URL(`../${name}.test.ts`, import.meta.url));
      // The loader flags this file runs with (tap's TypeScript import), for the file it runs. The
      // child would take tap's time limit per file from the environment, where the runner put it
      // for this file: a file whose run on Redis takes longer than on LMDB gets this file's own.
      const child = spawn(process.execPath, [...process.execArgv, file], {
        env: { ...process.env, TOLLGATE_TEST_BACKEND: 'redis', TAP_TIMEOUT: String(CHILD_TIMEOUT_S) },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (out += d));
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      const failures = out.split('\n').filter((l) => /^\s*not ok /.test(l));
      t.same(failures, [], `${name}.test.ts: no failing assertion on Redis`);
      t.equal(code, 0, `${name}.test.ts passes on Redis${code === 0 ? '' : `:\n${out.slice(-6000)}`}`);
    });
  }
}
