/**
 * `npm start` passes SIGTERM on to the server: npm signals its child, and the start script
 * `exec`s the server so that the child is the server itself rather than a shell that would
 * swallow the signal and leave the server running after npm is gone.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { open } from './helpers/raw-http.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The content of a /proc file, or '' once the process is gone. */
function proc(path: string): string {
  try {
    return readFileSync(path, 'latin1');
  } catch {
    return '';
  }
}

for (const workers of [1, 2]) {
  t.test(`SIGTERM to npm stops the server it started (workers: ${workers})`, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-test-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const args = ['start', '--', '--data', join(dir, 'data'), '--host', '127.0.0.1', '--port', '0'];
    if (workers > 1) args.push('--workers', String(workers));
    // `npm start` runs the `node` on PATH: the Node.js running this suite, first on PATH, so the
    // server loads the LMDB binding built for it (npm run test:lts runs the suite on another one).
    const env = { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}` };
    const npm = spawn('npm', args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const npmExit = new Promise<number | null>((resolve) => npm.once('exit', (code) => resolve(code)));
    let server: number | undefined;
    t.teardown(() => {
      // Should the test fail half-way, nothing it started outlives it.
      if (npm.exitCode === null) npm.kill('SIGKILL');
      if (server !== undefined && existsSync(`/proc/${server}`)) process.kill(server, 'SIGKILL');
    });
    const base = await new Promise<string>((resolve, reject) => {
      let out = '';
      npm.stdout!.on('data', (d) => {
        out += d;
        const m = /listening on (http:\/\/[^\s]+)/.exec(out);
        if (m) resolve(m[1]!);
      });
      npm.once('exit', (code) => reject(new Error(`npm start exited with ${code}: ${out}`)));
    });
    [server] = proc(`/proc/${npm.pid}/task/${npm.pid}/children`).trim().split(/\s+/).filter(Boolean).map(Number);
    t.ok(server, 'npm has one child process');
    if (server === undefined) return;
    t.match(proc(`/proc/${server}/cmdline`), /dist\/cli\/main\.js\0serve/, 'and it is the server itself, not a shell');
    t.equal((await fetch(`${base}/usage`)).status, 200, 'the server answers');

    npm.kill('SIGTERM');
    t.equal(await npmExit, 0, 'npm exits 0');
    // The server is not this test's child, so its end is seen in /proc.
    for (const deadline = Date.now() + 10_000; existsSync(`/proc/${server}`) && Date.now() < deadline;) {
      await new Promise((r) => setTimeout(r, 20));
    }
    t.notOk(existsSync(`/proc/${server}`), 'the server process is gone');
    await t.rejects(open(Number(new URL(base).port)), { code: 'ECONNREFUSED' }, 'and its port is closed');
  });
}
