import cluster from 'node:cluster';
import type { AddressInfo } from 'node:net';
import { createGateway } from '../server.js';
import { log } from '../log.js';
import { configFrom, dataDirFrom, parse, UsageError, wholeNumber } from './common.js';
import { assertFixedLmdbBinding } from '../store/binding.js';
import { Store } from '../store/lmdb.js';
import { SERVE_USAGE } from './usage-text.js';

const SERVE_OPTIONS = {
  host: { type: 'string' },
  port: { type: 'string' },
  workers: { type: 'string' },
} as const;

/**
 * `tollgate serve`: one process, or with --workers N a node:cluster primary that forks N
 * workers sharing the port and the LMDB environment (LMDB's write lock keeps balances and rate
 * windows exact across them). Prints `listening on http://HOST:PORT` once connections are
 * accepted; SIGTERM or SIGINT drains requests in flight, then exits 0.
 */
export async function serveCommand(args: string[]): Promise<void> {
  const { values } = parse(args, SERVE_OPTIONS, 0);
  if (values.help) {
    process.stdout.write(`${SERVE_USAGE}\n`);
    return;
  }
  const config = configFrom(values);
  const host = (values.host as string | undefined) ?? (process.env.TOLLGATE_HOST || config.host);
  const portText = (values.port as string | undefined) ?? (process.env.TOLLGATE_PORT || undefined);
  const port = portText === undefined ? config.port : wholeNumber(portText, values.port === undefined ? 'TOLLGATE_PORT' : '--port', 0, 65535);
  const workers = values.workers === undefined ? 1 : wholeNumber(values.workers, '--workers', 1, 256);
  const dataDir = dataDirFrom(values, config);
  if (host.length === 0) throw new UsageError('--host must not be empty');

  if (workers > 1 && cluster.isPrimary) {
    assertFixedLmdbBinding(); // once, here, rather than once per worker that would fail on it
    return runPrimary(workers);
  }

  for (const provider of config.providers.values()) {
    if (!process.env[provider.apiKeyEnv] && cluster.isPrimary) {
      log('warn', 'provider_credential_missing', { provider: provider.name, env: provider.apiKeyEnv });
    }
  }
  const store = Store.open(dataDir, config.storage);
  const gateway = createGateway(config, store);
  await new Promise<void>((resolve, reject) => {
    gateway.server.once('error', reject);
    gateway.server.listen(port, host, () => resolve());
  });
  const address = gateway.server.address() as AddressInfo;
  const url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
  if (cluster.isWorker) process.send?.({ listening: url });
  else process.stdout.write(`tollgate listening on ${url}\n`);

  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    void gateway.close()
      .then(() => store.close())
      .then(() => process.exit(0), () => process.exit(1));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  // A worker whose primary went away must not linger.
  if (cluster.isWorker) process.on('disconnect', stop);
}

/** More unexpected worker exits than this within a minute, and the primary gives up (exit 1). */
const RESTARTS_PER_MINUTE = 10;

function runPrimary(workers: number): Promise<void> {
  return new Promise((resolve) => {
    let listening = 0;
    let announced = false;
    let stopping = false;
    let exitCode = 0;
    const exits: number[] = [];
    for (let i = 0; i < workers; i++) cluster.fork();
    cluster.on('message', (_worker, message: { listening?: string }) => {
      if (message?.listening && ++listening === workers && !announced) {
        announced = true;
        process.stdout.write(`tollgate listening on ${message.listening} (${workers} workers)\n`);
      }
    });
    const stop = (): void => {
      if (stopping) return;
      stopping = true;
      for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
      exitWhenAllGone();
    };
    const exitWhenAllGone = (): void => {
      if (Object.keys(cluster.workers ?? {}).length > 0) return;
      resolve();
      process.exit(exitCode);
    };
    const giveUp = (why: string): void => {
      exitCode = 1;
      process.stderr.write(`tollgate: ${why}\n`);
      stop();
    };
    cluster.on('exit', (worker, code, signal) => {
      if (stopping) return exitWhenAllGone();
      log('error', 'worker_exited', { pid: worker.process.pid, code, signal });
      // A worker that cannot start (port taken, data directory unusable) would fail again.
      if (!announced) return giveUp('a worker exited before the gateway was listening; stopping');
      const now = Date.now();
      exits.push(now);
      while (exits[0]! < now - 60_000) exits.shift();
      if (exits.length > RESTARTS_PER_MINUTE) return giveUp(`workers exited ${exits.length} times within a minute; stopping`);
      // A worker that died unexpectedly is replaced so the gateway keeps its capacity.
      cluster.fork();
    });
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  });
}
