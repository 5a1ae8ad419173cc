/**
 * A real `redis-server` (Debian's package, scripts/install-system-packages.sh) of a test's own:
 * on a free port, in a temporary directory, stopped and removed with the test. With `aof`, every
 * write is appended and fsynced before it is acknowledged (`appendfsync always`); without, no
 * persistence at all. `startRedisCluster` makes three masters into one Cluster.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { unlistenedPort } from './ports.js';

interface Teardown { teardown(fn: () => unknown): void }

export interface RedisServer {
  url: string;
  port: number;
  dir: string;
  /** Stops it: SIGTERM (a clean shutdown), or SIGKILL (a crash). */
  stop(signal?: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  /** Starts it again on the same port and directory (after stop). */
  start(): Promise<void>;
  /** The running server's pid (null while stopped). */
  readonly pid: number | null;
  /** redis-cli against it; resolves to its output. */
  cli(...args: string[]): Promise<string>;
}

export interface RedisOptions {
  aof?: boolean;
  cluster?: boolean;
  /** An RDB file to start from: copied into its directory as dump.rdb, which redis-server loads at start. */
  rdb?: string;
}

export function redisCli(port: number, ...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], (err, stdout, stderr) => (err ? reject(new Error(`${err.message} ${stderr}`)) : resolve(stdout)));
  });
}

export async function startRedis(t: Teardown, options: RedisOptions = {}): Promise<RedisServer> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-redis-'));
  if (options.rdb !== undefined) copyFileSync(options.rdb, join(dir, 'dump.rdb'));
  let proc: ChildProcess | null = null;
  // A Cluster node's bus listens 10000 above its port.
  const busAt = options.cluster ? 10_000 : 0;
  let port = await unlistenedPort(busAt);
  const args = (): string[] => [
    '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--protected-mode', 'no', '--daemonize', 'no', '--logfile', '',
    '--maxmemory-policy', 'noeviction',
    ...(options.aof ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']),
    ...(options.cluster ? ['--cluster-enabled', 'yes', '--cluster-config-file', join(dir, 'nodes.conf'), '--cluster-node-timeout', '5000'] : []),
  ];
  const start = async (): Promise<void> => {
    for (let attempt = 0; ; attempt++) {
      const child = spawn('redis-server', args(), { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      const ready = await new Promise<boolean>((resolve, reject) => {
        child.once('error', reject);
        child.stdout!.on('data', (d) => {
          out += d;
          if (/Ready to accept connections/.test(out)) resolve(true);
        });
        child.once('exit', () => resolve(false));
      });
      if (ready) {
        proc = child;
        return;
      }
      // Another file's redis-server drew the same port (only on a first start): another one.
      if (attempt < 3 && /Address already in use/.test(out)) {
        port = await unlistenedPort(busAt);
        continue;
      }
      throw new Error(`redis-server did not start: ${out}`);
    }
  };
  const stop = async (signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<void> => {
    const child = proc;
    proc = null;
    if (child === null || child.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill(signal);
    await exited;
  };
  t.teardown(async () => {
    await stop('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  await start();
  return {
    get url() {
      return `redis://127.0.0.1:${port}`;
    },
    get port() {
      return port;
    },
    get pid() {
      return (proc as ChildProcess | null)?.pid ?? null;
    },
    dir,
    stop,
    start,
    cli: (...a: string[]) => redisCli(port, ...a),
  };
}

/** Three masters, no replicas, made into one Cluster; resolves once every node says the cluster is ok. */
export async function startRedisCluster(t: Teardown): Promise<RedisServer[]> {
  const nodes = [await startRedis(t, { cluster: true }), await startRedis(t, { cluster: true }), await startRedis(t, { cluster: true })];
  await redisCli(nodes[0]!.port, '--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '0', '--cluster-yes');
  for (const node of nodes) {
    // The nodes agree through their gossip: asked until each says ok (it does within a second or so).
    for (let i = 0; !/cluster_state:ok/.test(await node.cli('cluster', 'info')); i++) {
      if (i > 200) throw new Error('the Redis Cluster did not become ok');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  return nodes;
}
