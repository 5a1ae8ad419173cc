/**
 * A redis-server for the bench's Redis-backed tollgate: on a free port of this machine (which
 * it shares with everything else measured), in a temporary directory, AOF on with
 * `appendfsync everysec` (what most deployments run; `always` adds an fsync per write batch on
 * the Redis host), noeviction. Stopped with the bench (lib.ts tracks its pid).
 */
import { execFile, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { HOST, tempDir, trackPid } from './lib.js';

export interface RedisForBench {
  url: string;
  pid: number;
  /** Commands run so far, by command name (INFO commandstats). */
  commandCounts(): Promise<Map<string, number>>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, HOST, () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** Whether redis-server is installed (scripts/install-system-packages.sh installs it). */
export function hasRedisServer(): Promise<boolean> {
  return new Promise((resolve) => execFile('redis-server', ['--version'], (err) => resolve(err === null)));
}

export async function startRedisForBench(): Promise<RedisForBench> {
  const dir = tempDir('tollgate-bench-redis-');
  const port = await freePort();
  const proc = spawn('redis-server', ['--port', String(port), '--bind', HOST, '--dir', dir, '--save', '', '--appendonly', 'yes', '--appendfsync', 'everysec',
    '--maxmemory-policy', 'noeviction', '--protected-mode', 'no', '--logfile', ''], { stdio: ['ignore', 'pipe', 'pipe'] });
  trackPid(proc.pid!);
  await new Promise<void>((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      if (/Ready to accept connections/.test(out)) resolve();
    });
    proc.once('exit', (code) => reject(new Error(`redis-server exited ${code}: ${out}`)));
  });
  const cli = (...args: string[]): Promise<string> => new Promise((resolve, reject) => {
    execFile('redis-cli', ['-h', HOST, '-p', String(port), ...args], (err, stdout) => (err ? reject(err) : resolve(stdout)));
  });
  return {
    url: `redis://${HOST}:${port}`,
    pid: proc.pid!,
    async commandCounts() {
      const counts = new Map<string, number>();
      for (const m of (await cli('info', 'commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) counts.set(m[1]!, Number(m[2]));
      return counts;
    },
  };
}
