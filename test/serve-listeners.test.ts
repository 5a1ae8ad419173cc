/**
 * `serve` prints its listening lines only once every listener accepts connections: a supervisor
 * waiting for them must never see them from a server about to exit. A listener that cannot start
 * (its port taken) stops start-up before any line on stdout, with exit 1 and one line on stderr
 * naming the listener and its address, in one process and with --workers alike.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { CLI, defaultConfig, PROVIDER_ENV } from './helpers/harness.js';
import { unlistenedPort } from './helpers/ports.js';

const dir = mkdtempSync(join(tmpdir(), 'tollgate-listeners-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

interface Served { code: number | null; stdout: string; stderr: string }

/**
 * Runs `tollgate serve ARGS` (info lines off) until it exits, or until it printed `wantLines`
 * listening lines, then stops it with SIGTERM. A guard kills it if it does neither.
 */
function serve(args: string[], wantLines = 1): Promise<Served> {
  return new Promise((resolve, reject) => {
    const env: NodeJS.ProcessEnv = { ...PROVIDER_ENV, TOLLGATE_QUIET: '1' };
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('TOLLGATE_')) env[k] ??= v;
    const child = spawn(process.execPath, [CLI, 'serve', ...args], { env, cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const guard = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.stdout.on('data', (d) => {
      stdout += d;
      if ((stdout.match(/listening on http/g) ?? []).length >= wantLines) child.kill('SIGTERM');
    });
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(guard);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Holds 127.0.0.1:port with a socket of this process. */
function occupy(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(port, '127.0.0.1', () => resolve(s));
  });
}

let n = 0;
function configFile(change: (c: any) => void = () => {}): string {
  const c: any = defaultConfig('http://127.0.0.1:9');
  change(c);
  const file = join(dir, `config-${++n}.json`);
  writeFileSync(file, JSON.stringify(c));
  return file;
}

t.test('a listener that cannot start: no listening line, one line naming it and its address, exit 1', async (t) => {
  const taken = await unlistenedPort();
  const held = await occupy(taken);
  t.teardown(() => held.close());
  const free = await unlistenedPort();
  const data = (name: string): string[] => ['--data', join(dir, name)];
  const cases: [string, string[], RegExp][] = [
    ['admin port taken', ['--config', configFile(), ...data('a'), '--port', '0', '--admin-port', String(taken)], new RegExp(`^tollgate: the admin listener cannot start on 127\\.0\\.0\\.1:${taken}: address already in use \\(EADDRINUSE\\)\\n$`)],
    ['admin.port the public port', ['--config', configFile((c) => (c.admin = { port: free })), ...data('b'), '--port', String(free)], new RegExp(`^tollgate: the admin listener cannot start on 127\\.0\\.0\\.1:${free}: address already in use \\(EADDRINUSE\\)\\n$`)],
    ['public port taken', ['--config', configFile(), ...data('c'), '--port', String(taken)], new RegExp(`^tollgate: the public listener cannot start on 127\\.0\\.0\\.1:${taken}: address already in use \\(EADDRINUSE\\)\\n$`)],
    ['admin port taken, --workers 2', ['--config', configFile(), ...data('d'), '--port', '0', '--admin-port', String(taken), '--workers', '2'], new RegExp(`^tollgate: the admin listener cannot start on 127\\.0\\.0\\.1:${taken}: address already in use \\(EADDRINUSE\\)\\n$`)],
    ['public port taken, --workers 2', ['--config', configFile(), ...data('e'), '--port', String(taken), '--workers', '2'], new RegExp(`^tollgate: the public listener cannot start on 127\\.0\\.0\\.1:${taken}: address already in use \\(EADDRINUSE\\)\\n$`)],
  ];
  // One at a time: two of them would take `free` from each other.
  for (const [name, args, line] of cases) {
    const r = await serve(args);
    t.equal(r.stdout, '', `${name}: nothing on stdout, no listening line`);
    t.match(r.stderr, line, `${name}: one line naming the listener (${JSON.stringify(r.stderr)})`);
    t.equal(r.code, 1, `${name}: exit 1`);
  }
});

t.test('with both listeners up, both lines, the public one first', async (t) => {
  for (const workers of [[], ['--workers', '2']]) {
    const r = await serve(['--config', configFile(), '--data', join(dir, 'up'), '--port', '0', '--admin-port', '0', ...workers], 2);
    t.match(r.stdout, /^tollgate serves \d+ models[^\n]*\ntollgate listening on http:\/\/127\.0\.0\.1:\d+ [^\n]*\nadmin listening on http:\/\/127\.0\.0\.1:\d+\n/, `${workers.join(' ') || 'one process'}: ${r.stdout}`);
    t.equal(r.code, 0, 'exits 0 on SIGTERM');
  }
});
