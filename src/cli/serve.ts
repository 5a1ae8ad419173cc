import cluster, { type Worker } from 'node:cluster';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isSea } from 'node:sea';
import { createAdminServer } from '../admin/listener.js';
import type { Readiness } from '../admin/health.js';
import { credentialValue, missingCredentials, repeatedCredentials, unsendableCredentials } from '../config/load.js';
import type { Config } from '../config/types.js';
import { createGateway } from '../server.js';
import { errorText, log } from '../log.js';
import { stdoutAccessLog } from '../observe/access-log.js';
import { CredentialWatch, current } from '../observe/credentials.js';
import type { NotInRotation } from '../forward/rotation.js';
import { answerClusterMetricRequests, clusterMetrics, Metrics } from '../observe/metrics.js';
import { offlineProviders, pointedAtMock, MOCK_PROVIDER_ENV } from '../mock/offline.js';
import { configFrom, parse, storePlanFrom, UsageError, wholeNumber } from './common.js';
import type { GatewayStore } from '../domain/interfaces.js';
import { checkLmdbBinding, openStore, RetentionSweeper, type StorePlan } from '../store/store.js';

const SERVE_OPTIONS = {
  host: { type: 'string' },
  port: { type: 'string' },
  workers: { type: 'string' },
  'admin-port': { type: 'string' },
  mock: { type: 'boolean' },
} as const;

/** How a cluster's primary tells its workers where its mock provider listens (`serve --mock --workers N`). */
const PRIMARY_MOCK_URL = 'TOLLGATE_PRIMARY_MOCK_URL';

/** What a serving process forwards to: the configured providers, or with --mock the mock provider in process. */
interface Providers {
  /** The configuration, its providers pointed at the mock provider with --mock. */
  config: Config;
  /** The environment the provider credentials are read from. */
  env: NodeJS.ProcessEnv;
  /** The mock provider this process runs (--mock, not in a worker), else null. */
  mockUrl: string | null;
  mock: boolean;
  close(): Promise<void>;
}

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
  const configured = configFrom(values);
  const host = (values.host as string | undefined) ?? (process.env.TOLLGATE_HOST || configured.host);
  const portText = (values.port as string | undefined) ?? (process.env.TOLLGATE_PORT || undefined);
  const port = portText === undefined ? configured.port : wholeNumber(portText, values.port === undefined ? 'TOLLGATE_PORT' : '--port', 0, 65535);
  const workers = values.workers === undefined ? 1 : wholeNumber(values.workers, '--workers', 1, 256);
  const plan = storePlanFrom(values, configured);
  if (host.length === 0) throw new UsageError('--host must not be empty');
  const adminPort = values['admin-port'] === undefined ? configured.admin.port : wholeNumber(values['admin-port'], '--admin-port', 0, 65535);
  // Read as a provider credential is: a token taken from a file often ends in a newline.
  const token = credentialValue(process.env, configured.admin.tokenEnv) || undefined;
  const admin: AdminPlan | null = token !== undefined || values['admin-port'] !== undefined || configured.admin.portGiven
    ? { host: configured.admin.host, port: adminPort, token }
    : null;

  if (workers > 1 && cluster.isPrimary) {
    if (plan.backend === 'lmdb') await checkLmdbBinding(); // once, here, rather than once per worker that would fail on it
    return runPrimary(workers, await providersFor(configured, values.mock === true), plan, admin);
  }

  const providers = await providersFor(configured, values.mock === true);
  const { config } = providers;
  const store = await openStore(plan, config.storage);
  // Calls left in flight by a process that is gone are settled before this one serves.
  await store.serveCalls();
  const metrics = new Metrics();
  answerClusterMetricRequests(metrics);
  const accessLog = config.log.access ? stdoutAccessLog() : null;
  const credentialWatch = cluster.isWorker ? workerCredentialWatch() : new CredentialWatch();
  const gateway = createGateway(config, store, { metrics, accessLog, credentialWatch, env: providers.env, mock: providers.mock });
  let adminServer: Server | null = null;
  let sweeper: RetentionSweeper | null = null;
  let stopping = false;
  let exitCode = 0;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    const signalledAt = performance.now();
    // At once, before anything closes: a load balancer polling /readyz stops sending now.
    gateway.draining = true;
    let drainedAt = signalledAt;
    void gateway.close()
      .then((at) => {
        drainedAt = at;
        return Promise.all([providers.close(), closeServer(adminServer), sweeper?.stop()]);
      })
      .then(() => accessLog?.flush())
      .then(() => store.close())
      .then(() => exitStopped(exitCode, signalledAt, drainedAt), () => exitStopped(1, signalledAt, drainedAt));
  };
  // A throw no call can be tied to (every stage of a call ends that call on its own throws,
  // server.ts): logged; the process drains the calls in flight and exits 1 (with --workers, the
  // primary replaces it).
  const fault = (err: unknown): void => {
    log('error', 'uncaught_exception', { error: errorText(err) });
    exitCode = 1;
    stop();
  };
  process.on('uncaughtException', fault);
  process.on('unhandledRejection', fault);
  // Before the listening line: a signal sent as soon as it is read (a supervisor, a test) must
  // find the handler in place, not the default action that ends the process unsettled.
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  // A worker whose primary went away must not linger.
  if (cluster.isWorker) process.on('disconnect', stop);

  try {
    await listenAs('public', gateway.server, port, host);
  } catch (err) {
    // A cluster's workers all fail alike: their primary says it once (runPrimary).
    if (cluster.isWorker) return cannotStart((err as Error).message);
    throw err;
  }
  const url = urlOf(gateway.server);
  if (cluster.isWorker) {
    process.send?.({ listening: url }, undefined, undefined, channelGone);
    return;
  }
  const readiness: Readiness = { draining: () => gateway.draining, storeAnswers: () => store.answers(), notInRotation: () => credentialWatch.notInRotation() };
  adminServer = await openAdmin(admin, providers, store, { text: () => metrics.text(), contentType: metrics.contentType }, readiness);
  if (stopping) return void closeServer(adminServer);
  // Only now that every listener accepts connections: whoever waits for these lines may connect.
  process.stdout.write(catalogueLine(config) + listeningLine(url, plan, 1, providers.mock) + adminLine(adminServer));
  if (adminServer !== null) warnNoAdminToken(admin!, config);
  sweeper = new RetentionSweeper(store, { retentionDays: config.storage.retentionDays, responseRetentionDays: config.storage.responseRetentionDays });
  sweeper.start();
}

/**
 * A worker whose listener cannot start tells its primary why, which says it once for the
 * cluster, and exits; without a primary to tell, it says so itself.
 */
function cannotStart(why: string): Promise<never> {
  return new Promise(() => {
    const told = process.send?.({ cannotStart: why }, undefined, undefined, (err: Error | null) => {
      if (err !== null) process.stderr.write(`tollgate: ${why}\n`);
      process.exit(1);
    });
    if (told === undefined) {
      process.stderr.write(`tollgate: ${why}\n`);
      process.exit(1);
    }
  });
}

/**
 * The providers of this process. With --mock, the mock provider in process: the primary (or
 * single process) starts it, a worker points at its primary's, and no credential variable is
 * read. Without, the configured providers, each one whose credential is unset named once.
 */
async function providersFor(configured: Config, mock: boolean): Promise<Providers> {
  if (cluster.isPrimary) warnBuiltInLeftOut(configured);
  if (!mock) {
    if (cluster.isPrimary) {
      const unsendable = unsendableCredentials(configured, process.env);
      if (unsendable.length > 0) {
        const one = unsendable.length === 1;
        throw new UsageError(`${unsendable.join(', ')} ${one ? 'holds' : 'hold'} a character no HTTP header can carry (a control character, or one beyond Latin-1, inside the value; surrounding whitespace is cut): every call with ${one ? 'this provider credential' : 'these provider credentials'} would fail`);
      }
      const [repeated] = repeatedCredentials(configured, process.env);
      if (repeated !== undefined) {
        const { provider, first, second } = repeated;
        const from = first.apiKeyEnv === second.apiKeyEnv ? `both from ${first.apiKeyEnv}` : `from ${first.apiKeyEnv} and ${second.apiKeyEnv}`;
        throw new UsageError(`providers.${provider}: the credentials "${first.name}" and "${second.name}" hold the same key (${from}): each entry of a pool must be a key of its own, or a call one refuses is sent to the same key again`);
      }
      warnUnusableProviders(configured);
    }
    return { config: configured, env: process.env, mockUrl: null, mock: false, close: async () => undefined };
  }
  const primaryMock = cluster.isWorker ? process.env[PRIMARY_MOCK_URL] : undefined;
  if (primaryMock !== undefined) return { config: pointedAtMock(configured, primaryMock), env: MOCK_PROVIDER_ENV, mockUrl: null, mock: true, close: async () => undefined };
  const offline = await offlineProviders(configured);
  return { config: offline.config, env: offline.env, mockUrl: offline.mock.url, mock: true, close: () => offline.mock.close() };
}

/**
 * `tollgate listening on http://HOST:PORT (store: lmdb DIR)` or `(store: redis HOST:PORT)`
 * (interface.md), then the workers and the mock provider when there are.
 */
function listeningLine(url: string, plan: StorePlan, workers: number, mock: boolean): string {
  const store = plan.backend === 'lmdb' ? `lmdb ${plan.dataDir}` : `redis ${new URL(plan.url).host}`;
  return `tollgate listening on ${url} (store: ${store})${workers > 1 ? ` (${workers} workers)` : ''}${mock ? ' (mock providers)' : ''}\n`;
}

/**
 * The last line before a stop's exit (stderr, `stopped`): how long the calls in flight took to
 * end after the signal (`drainMs`) and how long the exit took after the last of them ended, or
 * after the signal when none was in flight (`exitMs`). Measured by the process itself, up to
 * its process.exit(); what Node.js does after that is not in it (README, Shutdown).
 */
function exitStopped(code: number, signalledAt: number, drainedAt: number): never {
  const ms = (n: number): number => Math.round(n * 10) / 10;
  log('info', 'stopped', { drainMs: ms(drainedAt - signalledAt), exitMs: ms(performance.now() - drainedAt) });
  process.exit(code);
}

/** Messages between a cluster's workers and its primary about the credentials not in rotation. */
interface RotationMessage {
  /** worker → primary: the credentials this worker has not in rotation (on every change). */
  notInRotation?: readonly NotInRotation[];
  /** primary → workers: what every worker has not in rotation. */
  notInRotationInCluster?: readonly NotInRotation[];
}

/** A worker's watch, told to its primary, and the cluster's, told back (for /readyz). */
function workerCredentialWatch(): CredentialWatch {
  const watch = new CredentialWatch(Date.now, (list) => process.send?.({ notInRotation: list } satisfies RotationMessage, undefined, undefined, channelGone));
  process.on('message', (message: RotationMessage | null) => {
    if (Array.isArray(message?.notInRotationInCluster)) watch.seenElsewhere(message.notInRotationInCluster);
  });
  return watch;
}

/**
 * The primary's view of its workers' rotation: what each last said, until it exits; every
 * change is told to every worker, so that /readyz says the same whichever worker answers it.
 */
class ClusterCredentialWatch {
  private readonly byWorker = new Map<number, readonly NotInRotation[]>();

  heard(worker: Worker, message: (RotationMessage & { listening?: string }) | null): void {
    // A worker that starts (or replaces one) is told what the others see at once.
    if (message?.listening !== undefined && this.byWorker.size !== 0) worker.send({ notInRotationInCluster: this.all() } satisfies RotationMessage, undefined, channelGone);
    if (!Array.isArray(message?.notInRotation)) return;
    this.byWorker.set(worker.id, message.notInRotation);
    this.tell();
  }

  exited(workerId: number): void {
    if (this.byWorker.delete(workerId)) this.tell();
  }

  notInRotation(): NotInRotation[] {
    return current(this.all(), Date.now());
  }

  private all(): NotInRotation[] {
    return [...this.byWorker.values()].flat();
  }

  private tell(): void {
    const message: RotationMessage = { notInRotationInCluster: this.all() };
    for (const worker of Object.values(cluster.workers ?? {})) {
      if (worker?.isConnected()) worker.send(message, undefined, channelGone);
    }
  }
}

/**
 * A message between the primary and a worker whose channel closed meanwhile (a worker exiting
 * while the cluster drains, a primary gone) is dropped: the other side is going away. Without a
 * callback, Node reports the failed send (EPIPE) as an 'error' event, which nothing listens for,
 * and the process would end on it.
 */
function channelGone(): void {}

/**
 * What the catalogue serves, said once at start-up, in the line before the listening line (so a
 * server that never listens prints nothing on stdout): `tollgate serves 41 models: 22 from
 * openai, 19 from anthropic` (entries, not counting their aliases).
 */
export function catalogueLine(config: Config): string {
  const perProvider = new Map<string, number>();
  for (const m of config.models.values()) perProvider.set(m.provider.name, (perProvider.get(m.provider.name) ?? 0) + 1);
  const parts = [...perProvider].map(([provider, n]) => `${n} from ${provider}`);
  const n = config.models.size;
  return `tollgate serves ${n} model${n === 1 ? '' : 's'}${parts.length === 0 ? '' : `: ${parts.join(', ')}`}\n`;
}

/**
 * The built-in catalogue's providers that no configured provider is named after: their models
 * are left out of the catalogue, said once at start-up (a file with only `providers.myoai`
 * otherwise serves no model without a word).
 */
function warnBuiltInLeftOut(config: Config): void {
  if (config.builtInLeftOut.length === 0) return;
  const names = config.builtInLeftOut.map((p) => p.provider);
  log('warn', 'built_in_models_left_out', {
    providers: names.join(','), models: config.builtInLeftOut.reduce((n, p) => n + p.models, 0),
    consequence: `the built-in catalogue's models of ${names.join(' and ')} are not served: no provider in "providers" has that name`,
  });
}

/**
 * Credentials whose variable is unset: named once at start-up. Such a credential is left out of
 * its provider's pool; a provider left with none answers model_not_available for its models.
 */
function warnUnusableProviders(config: Config): void {
  for (const provider of config.providers.values()) {
    const missing = missingCredentials(provider, process.env);
    if (missing.length === provider.credentials.length) {
      log('warn', 'provider_credential_missing', {
        provider: provider.name, env: provider.credentials.map((c) => c.apiKeyEnv).join(','),
        consequence: 'its models answer model_not_available until the variable is set and the server restarted (to try the gateway without provider accounts: tollgate serve --mock)',
      });
      continue;
    }
    for (const c of missing) {
      log('warn', 'provider_credential_missing', {
        provider: provider.name, credential: c.name, env: c.apiKeyEnv,
        consequence: 'this credential is left out of the provider\'s pool until the variable is set and the server restarted',
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

/**
 * Listens, or fails with one line naming the listener and its address:
 * `the admin listener cannot start on 127.0.0.1:8081: address already in use (EADDRINUSE)`.
 */
async function listenAs(which: 'public' | 'admin', server: Server, port: number, host: string): Promise<void> {
  try {
    await listen(server, port, host);
  } catch (err) {
    throw new Error(`the ${which} listener cannot start on ${host.includes(':') ? `[${host}]` : host}:${port}: ${listenProblem(err)}`);
  }
}

/** What the errors a listener meets most say, for those Node words without it (a cluster worker's `bind EADDRINUSE 127.0.0.1:8080`). */
const LISTEN_ERRORS: Readonly<Record<string, string>> = {
  EADDRINUSE: 'address already in use',
  EACCES: 'permission denied',
  EADDRNOTAVAIL: 'address not available',
};

/** Why a listen failed, without the address Node's text repeats: `address already in use (EADDRINUSE)`. */
function listenProblem(err: unknown): string {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  const text = err instanceof Error ? err.message : String(err);
  const said = code === undefined ? undefined : LISTEN_ERRORS[code] ?? /^listen \w+: (.*?)(?: \S+:\d+)?$/.exec(text)?.[1];
  return said === undefined ? text : `${said} (${code!})`;
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

/** The admin listener, listening (its line is printed with the others: adminLine), or null when it is not opened. */
async function openAdmin(plan: AdminPlan | null, providers: Providers, store: GatewayStore, metrics: { text(): Promise<string>; contentType: string }, readiness: Readiness): Promise<Server | null> {
  if (plan === null) return null;
  const server = createAdminServer({ store, config: providers.config, env: providers.env, token: plan.token, metrics, readiness, mock: providers.mock });
  await listenAs('admin', server, plan.port, plan.host);
  return server;
}

function adminLine(server: Server | null): string {
  return server === null ? '' : `admin listening on ${urlOf(server)}\n`;
}

function warnNoAdminToken(plan: AdminPlan, config: Config): void {
  if (plan.token === undefined) log('warn', 'admin_token_missing', { env: config.admin.tokenEnv, consequence: 'every /admin/v1/ request is refused with invalid_admin_token' });
}

/** More unexpected worker exits than this within a minute, and the primary gives up (exit 1). */
const RESTARTS_PER_MINUTE = 10;

function runPrimary(workers: number, providers: Providers, plan: StorePlan, admin: AdminPlan | null): Promise<void> {
  const { config } = providers;
  // Workers forward to the primary's mock provider (--mock): one for the whole gateway.
  const workerEnv = providers.mockUrl === null ? undefined : { [PRIMARY_MOCK_URL]: providers.mockUrl };
  return new Promise((resolve) => {
    let listening = 0;
    /** Every worker listens; then the admin listener opens, and the gateway is announced. */
    let started = false;
    let announced = false;
    let stopping = false;
    let signalledAt = 0;
    let exiting = false;
    let exitCode = 0;
    const exits: number[] = [];
    let store: GatewayStore | null = null;
    let adminServer: Server | null = null;
    let sweeper: RetentionSweeper | null = null;
    const metrics = clusterMetrics();
    const credentialWatch = new ClusterCredentialWatch();
    // The workers accept from the shared socket themselves. Under node:cluster's round-robin the
    // primary accepts and hands each connection over IPC; one handed to a worker that dies before
    // acknowledging it stays open in the primary, unanswered, for ever. Taken by the workers, a
    // connection waits in the kernel's queue for a live one, or is closed with the one that died.
    // Set first: the first setupPrimary() or fork() freezes it.
    cluster.schedulingPolicy = cluster.SCHED_NONE;
    // A worker of the single binary (a Node.js SEA) is started as `EXECUTABLE EXEC ARGS…` but sees
    // the executable's path once more before EXEC, so EXEC must be the first argument itself.
    if (isSea()) cluster.setupPrimary({ exec: process.argv[2]!, args: process.argv.slice(3) });
    for (let i = 0; i < workers; i++) cluster.fork(workerEnv);
    cluster.on('message', (worker, message: { listening?: string; cannotStart?: string } & RotationMessage) => {
      credentialWatch.heard(worker, message);
      if (typeof message?.cannotStart === 'string') return giveUp(message.cannotStart);
      if (message?.listening && ++listening === workers && !started) {
        started = true;
        const url = message.listening;
        openStore(plan, config.storage).then((s) => {
          store = s;
          if (stopping) return;
          sweeper = new RetentionSweeper(s, { retentionDays: config.storage.retentionDays, responseRetentionDays: config.storage.responseRetentionDays });
          sweeper.start();
          const readiness: Readiness = {
            draining: () => stopping,
            storeAnswers: () => s.answers(),
            notReady: () => (Object.keys(cluster.workers ?? {}).length === 0 ? 'no_workers' : null),
            notInRotation: () => credentialWatch.notInRotation(),
          };
          return openAdmin(admin, providers, s, metrics, readiness).then((server) => {
            adminServer = server;
            if (stopping) return void closeServer(server);
            // Only now that every listener accepts connections, the workers' and the admin one.
            announced = true;
            process.stdout.write(catalogueLine(providers.config) + listeningLine(url, plan, workers, providers.mock) + adminLine(server));
            if (server !== null) warnNoAdminToken(admin!, config);
          }, (err: unknown) => giveUp((err as Error).message));
        }, (err: unknown) => giveUp(`the store cannot be opened: ${(err as Error).message}`));
      }
    });
    const stop = (): void => {
      if (stopping) return;
      stopping = true;
      signalledAt = performance.now();
      for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
      exitWhenAllGone();
    };
    const exitWhenAllGone = (): void => {
      // A dead worker can still be listed: node:cluster removes it on the later of its 'exit' and
      // its 'disconnect', and this runs on 'exit'; counting it would wait for ever.
      if (exiting || Object.values(cluster.workers ?? {}).some((w) => w !== undefined && !w.isDead())) return;
      exiting = true;
      // The primary's calls in flight are its workers: drained once the last of them is gone.
      const drainedAt = performance.now();
      void Promise.all([closeServer(adminServer), sweeper?.stop(), providers.close()])
        .then(() => store?.close())
        .finally(() => {
          resolve();
          exitStopped(exitCode, signalledAt, drainedAt);
        });
    };
    const giveUp = (why: string): void => {
      // The first reason is the one said: the workers of a cluster that cannot start all fail alike.
      if (stopping) return;
      exitCode = 1;
      process.stderr.write(`tollgate: ${why}\n`);
      stop();
    };
    cluster.on('exit', (worker, code, signal) => {
      credentialWatch.exited(worker.id);
      if (stopping) return exitWhenAllGone();
      // A worker that cannot start (port taken, data directory unusable) would fail again. One
      // that said why (cannotStart) did so before its channel closed, which may be read after its
      // exit: wait for that, so that the reason is the one line printed.
      if (!announced) {
        const failed = (): void => {
          if (stopping) return;
          log('error', 'worker_exited', { pid: worker.process.pid, code, signal });
          giveUp('a worker exited before the gateway was listening; stopping');
        };
        if (worker.isConnected()) worker.once('disconnect', failed);
        else failed();
        return;
      }
      log('error', 'worker_exited', { pid: worker.process.pid, code, signal });
      const now = Date.now();
      exits.push(now);
      while (exits[0]! < now - 60_000) exits.shift();
      if (exits.length > RESTARTS_PER_MINUTE) return giveUp(`workers exited ${exits.length} times within a minute; stopping`);
      // A worker that died unexpectedly is replaced so the gateway keeps its capacity.
      cluster.fork(workerEnv);
    });
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  });
}
