import cluster, { type Worker } from 'node:cluster';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isSea } from 'node:sea';
import { createAdminServer } from '../admin/listener.js';
import type { Readiness } from '../admin/health.js';
import type { Config } from '../config/types.js';
import { createGateway } from '../server.js';
import { log } from '../log.js';
import { stdoutAccessLog } from '../observe/access-log.js';
import { CredentialRefusals } from '../observe/credential-refusals.js';
import { answerClusterMetricRequests, clusterMetrics, Metrics } from '../observe/metrics.js';
import { configFrom, parse, storePlanFrom, UsageError, wholeNumber } from './common.js';
import type { GatewayStore } from '../domain/interfaces.js';
import { checkLmdbBinding, openStore, RetentionSweeper, type StorePlan } from '../store/store.js';
import { SERVE_USAGE } from './usage-text.js';

const SERVE_OPTIONS = {
  host: { type: 'string' },
  port: { type: 'string' },
  workers: { type: 'string' },
  'admin-port': { type: 'string' },
} as const;

/** Where the admin listener goes, when it is opened at all (interface.md, "The admin listener"). */
interface AdminPlan { host: string; port: number; token: string | undefined }

/**
 * `tollgate serve`: one process, or with --workers N a node:cluster primary that forks N
 * workers sharing the port and the LMDB environment (LMDB's write lock keeps balances and rate
 * windows exact across them). Prints `listening on http://HOST:PORT` once connections are
 * accepted; SIGTERM or SIGINT turns /readyz to 503 at once, drains requests in flight, then
 * exits 0.
 *
 * The admin listener, the retention sweep and the metrics endpoint live in the one process
 * that is not a worker: the single process, or the cluster's primary, which sums its workers'
 * metrics (prom-client's AggregatorRegistry over the IPC channel) and opens the store itself
 * for the admin API.
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
  const plan = storePlanFrom(values, config);
  if (host.length === 0) throw new UsageError('--host must not be empty');
  const adminPort = values['admin-port'] === undefined ? config.admin.port : wholeNumber(values['admin-port'], '--admin-port', 0, 65535);
  const token = process.env[config.admin.tokenEnv] || undefined;
  const admin: AdminPlan | null = token !== undefined || values['admin-port'] !== undefined || config.admin.portGiven
    ? { host: config.admin.host, port: adminPort, token }
    : null;

  if (cluster.isPrimary) process.stdout.write(`${catalogueLine(config)}\n`);
  if (workers > 1 && cluster.isPrimary) {
    if (plan.backend === 'lmdb') await checkLmdbBinding(); // once, here, rather than once per worker that would fail on it
    warnUnusableProviders(config);
    return runPrimary(workers, config, plan, admin);
  }

  if (cluster.isPrimary) warnUnusableProviders(config);
  const store = await openStore(plan, config.storage);
  // Calls left in flight by a process that is gone are settled before this one serves.
  await store.serveCalls();
  const metrics = new Metrics();
  answerClusterMetricRequests(metrics);
  const accessLog = config.log.access ? stdoutAccessLog() : null;
  const credentialRefusals = cluster.isWorker ? workerCredentialRefusals() : new CredentialRefusals();
  const gateway = createGateway(config, store, { metrics, accessLog, credentialRefusals });
  await listen(gateway.server, port, host);
  const url = urlOf(gateway.server);
  if (cluster.isWorker) process.send?.({ listening: url });
  else process.stdout.write(`tollgate listening on ${url}\n`);

  let adminServer: Server | null = null;
  let sweeper: RetentionSweeper | null = null;
  if (cluster.isPrimary) {
    const readiness: Readiness = { draining: () => gateway.draining, storeAnswers: () => store.answers(), credentialRefused: () => credentialRefusals.providers() };
    adminServer = await openAdmin(admin, config, store, { text: () => metrics.text(), contentType: metrics.contentType }, readiness);
    sweeper = new RetentionSweeper(store, { retentionDays: config.storage.retentionDays, responseRetentionDays: config.storage.responseRetentionDays });
    sweeper.start();
  }

  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    // At once, before anything closes: a load balancer polling /readyz stops sending now.
    gateway.draining = true;
    void gateway.close()
      .then(() => closeServer(adminServer))
      .then(() => sweeper?.stop())
      .then(() => accessLog?.flush())
      .then(() => store.close())
      .then(() => process.exit(0), () => process.exit(1));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  // A worker whose primary went away must not linger.
  if (cluster.isWorker) process.on('disconnect', stop);
}

/** Messages between a cluster's workers and its primary about providers refusing the gateway's credential. */
interface CredentialRefusalMessage {
  /** worker → primary: the providers this worker sees refusing (on every change). */
  credentialRefused?: readonly string[];
  /** primary → workers: the providers any worker sees refusing. */
  credentialRefusedInCluster?: readonly string[];
}

/** A worker's refusals, told to its primary, and the cluster's, told back (for /readyz). */
function workerCredentialRefusals(): CredentialRefusals {
  const refusals = new CredentialRefusals(Date.now, (providers) => process.send?.({ credentialRefused: providers } satisfies CredentialRefusalMessage));
  process.on('message', (message: CredentialRefusalMessage | null) => {
    if (Array.isArray(message?.credentialRefusedInCluster)) refusals.seenElsewhere(message.credentialRefusedInCluster);
  });
  return refusals;
}

/**
 * The primary's view of its workers' refusals: what each last said, until it exits; every
 * change is told to every worker, so that /readyz says the same whichever worker answers it.
 */
class ClusterCredentialRefusals {
  private readonly byWorker = new Map<number, readonly string[]>();

  heard(worker: Worker, message: (CredentialRefusalMessage & { listening?: string }) | null): void {
    // A worker that starts (or replaces one) is told what the others see at once.
    if (message?.listening !== undefined && this.byWorker.size !== 0) worker.send({ credentialRefusedInCluster: this.providers() } satisfies CredentialRefusalMessage);
    if (!Array.isArray(message?.credentialRefused)) return;
    this.byWorker.set(worker.id, message.credentialRefused);
    this.tell();
  }

  exited(workerId: number): void {
    if (this.byWorker.delete(workerId)) this.tell();
  }

  providers(): string[] {
    return [...new Set([...this.byWorker.values()].flat())].sort();
  }

  private tell(): void {
    const message: CredentialRefusalMessage = { credentialRefusedInCluster: this.providers() };
    for (const worker of Object.values(cluster.workers ?? {})) {
      if (worker?.isConnected()) worker.send(message);
    }
  }
}

/**
 * What the catalogue serves, said once at start-up: `tollgate serves 41 models: 22 from openai,
 * 19 from anthropic` (entries, not counting their aliases).
 */
export function catalogueLine(config: Config): string {
  const perProvider = new Map<string, number>();
  for (const m of config.models.values()) perProvider.set(m.provider.name, (perProvider.get(m.provider.name) ?? 0) + 1);
  const parts = [...perProvider].map(([provider, n]) => `${n} from ${provider}`);
  const n = config.models.size;
  return `tollgate serves ${n} model${n === 1 ? '' : 's'}${parts.length === 0 ? '' : `: ${parts.join(', ')}`}`;
}

/** Providers whose credential variable is unset: named once at start-up; their models answer model_not_available. */
function warnUnusableProviders(config: Config): void {
  for (const provider of config.providers.values()) {
    if (!process.env[provider.apiKeyEnv]) {
      log('warn', 'provider_credential_missing', {
        provider: provider.name, env: provider.apiKeyEnv,
        consequence: 'its models answer model_not_available until the variable is set and the server restarted',
      });
    }
  }
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
}

function urlOf(server: Server): string {
  const address = server.address() as AddressInfo;
  return `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
}

function closeServer(server: Server | null): Promise<void> {
  if (server === null) return Promise.resolve();
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

async function openAdmin(plan: AdminPlan | null, config: Config, store: GatewayStore, metrics: { text(): Promise<string>; contentType: string }, readiness: Readiness): Promise<Server | null> {
  if (plan === null) return null;
  const server = createAdminServer({ store, config, env: process.env, token: plan.token, metrics, readiness });
  await listen(server, plan.port, plan.host);
  process.stdout.write(`admin listening on ${urlOf(server)}\n`);
  if (plan.token === undefined) log('warn', 'admin_token_missing', { env: config.admin.tokenEnv, consequence: 'every /admin/v1/ request is refused with invalid_admin_token' });
  return server;
}

/** More unexpected worker exits than this within a minute, and the primary gives up (exit 1). */
const RESTARTS_PER_MINUTE = 10;

function runPrimary(workers: number, config: Config, plan: StorePlan, admin: AdminPlan | null): Promise<void> {
  return new Promise((resolve) => {
    let listening = 0;
    let announced = false;
    let stopping = false;
    let exitCode = 0;
    const exits: number[] = [];
    let store: GatewayStore | null = null;
    let adminServer: Server | null = null;
    let sweeper: RetentionSweeper | null = null;
    const metrics = clusterMetrics();
    const credentialRefusals = new ClusterCredentialRefusals();
    // A worker of the single binary (a Node.js SEA) is started as `EXECUTABLE EXEC ARGS…` but sees
    // the executable's path once more before EXEC, so EXEC must be the first argument itself.
    if (isSea()) cluster.setupPrimary({ exec: process.argv[2]!, args: process.argv.slice(3) });
    for (let i = 0; i < workers; i++) cluster.fork();
    cluster.on('message', (worker, message: { listening?: string } & CredentialRefusalMessage) => {
      credentialRefusals.heard(worker, message);
      if (message?.listening && ++listening === workers && !announced) {
        announced = true;
        process.stdout.write(`tollgate listening on ${message.listening} (${workers} workers)\n`);
        openStore(plan, config.storage).then((s) => {
          store = s;
          if (stopping) return;
          sweeper = new RetentionSweeper(s, { retentionDays: config.storage.retentionDays, responseRetentionDays: config.storage.responseRetentionDays });
          sweeper.start();
          const readiness: Readiness = {
            draining: () => stopping,
            storeAnswers: () => s.answers(),
            notReady: () => (Object.keys(cluster.workers ?? {}).length === 0 ? 'no_workers' : null),
            credentialRefused: () => credentialRefusals.providers(),
          };
          return openAdmin(admin, config, s, metrics, readiness).then((server) => {
            adminServer = server;
            if (stopping) void closeServer(server);
          }, (err: unknown) => giveUp(`the admin listener cannot start: ${(err as Error).message}`));
        }, (err: unknown) => giveUp(`the store cannot be opened: ${(err as Error).message}`));
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
      void closeServer(adminServer)
        .then(() => sweeper?.stop())
        .then(() => store?.close())
        .finally(() => {
          resolve();
          process.exit(exitCode);
        });
    };
    const giveUp = (why: string): void => {
      exitCode = 1;
      process.stderr.write(`tollgate: ${why}\n`);
      stop();
    };
    cluster.on('exit', (worker, code, signal) => {
      credentialRefusals.exited(worker.id);
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
