/**
 * The parent's side of the cost budgets (test/cost-*.test.ts): starts test/fixtures/cost-gateway.ts
 * in a child process under the given Node.js flags, with the mock provider in this process, opens
 * and closes its counting windows over IPC, and makes calls on keep-alive connections opened
 * beforehand, each call complete (its whole answer read, a 200) before its connection's next.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { startMockProvider, type MockProvider, type MockSwitches } from '../fixtures/mock-provider.js';
import { PROVIDER_ENV } from './harness.js';
import { open, parseResponses, portOf, postBytes } from './raw-http.js';
import type { RedisServer } from './redis.js';

interface Teardown { teardown(fn: () => unknown): void }

/** One collection as v8.GCProfiler reports it (the fields read here). */
export interface GcRun {
  gcType: string;
  beforeGC: { heapSpaceStatistics: Array<{ spaceName: string; spaceUsedSize: number }> };
  afterGC: { heapSpaceStatistics: Array<{ spaceName: string; spaceUsedSize: number }> };
}

/** What the child counted over one window. */
export interface WindowReport {
  /** Change of the sum of every heap space's used size. */
  heapBytes: number;
  /** The spaces whose used size changed, by how much. */
  spaces: Record<string, number>;
  /** The collections that ran: scavenges (with the old space's growth across them), any other, and each type's count. */
  gcs: { scavenges: number; others: number; promotedBytes: number; types: Record<string, number> };
  counts: {
    /** Writes made by the sockets of the gateway's clients. */
    clientWrites: number;
    /** Reads made by the sockets of the gateway's provider connections. */
    providerReads: number;
    /** Calls of the store's request-path methods. */
    store: Record<'admit' | 'admitHolding' | 'hold' | 'release' | 'record' | 'lookup' | 'modelEnabled', number>;
    /** LMDB: write transactions that carried request-path work. */
    transactions: number;
    /** lmdb-js read-snapshot timers run at the end of their turn (see the fixture). */
    readSnapshotResets: number;
    /** The access log's batch timers run at the end of their turn (see the fixture). */
    accessLogTimers: number;
  };
}

export interface CostGateway {
  url: string;
  /** A credit key with a rate limit, a concurrency limit and a model allowlist. */
  key: string;
  mock: MockProvider;
  /** Zeroes the counts and measures the heap; nothing runs in the child until the window's calls. */
  begin(): Promise<void>;
  /** Measures the heap again and reports the window. */
  end(): Promise<WindowReport>;
  /** A full collection in the child. */
  collect(): Promise<void>;
  /**
   * The access-log lines the child has written, once they are `expected` (its log is written
   * out asynchronously: asked again until then, at most 100 times).
   */
  accessLines(expected: number): Promise<number>;
}

const CHILD = fileURLToPath(new URL('../fixtures/cost-gateway.ts', import.meta.url));

export interface CostGatewayOptions {
  /** V8 flags for the child. */
  flags: string[];
  /** The store: LMDB in a temporary directory (default), or this Redis server. */
  redis?: RedisServer;
  /** More environment for the child. */
  env?: NodeJS.ProcessEnv;
}

export async function startCostGateway(t: Teardown, options: CostGatewayOptions): Promise<CostGateway> {
  const mock = await startMockProvider({ record: false });
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-costs-'));
  let child: ChildProcess | null = null;
  t.teardown(async () => {
    if (child !== null && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child!.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    await mock.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const store = options.redis === undefined ? ['lmdb', join(dir, 'data')] : ['redis', options.redis.url];
  // The access log goes to a file: nothing here has to keep up with reading it.
  const stdoutFile = join(dir, 'stdout');
  const stdout = openSync(stdoutFile, 'w');
  const proc = fork(CHILD, [mock.url, ...store], {
    execArgv: ['--import', 'tsx', ...options.flags],
    env: { ...process.env, ...PROVIDER_ENV, ...options.env },
    stdio: ['ignore', stdout, 'pipe', 'ipc'],
  });
  closeSync(stdout);
  child = proc;
  let stderr = '';
  proc.stderr!.on('data', (d) => (stderr += d));
  const replies: Array<(message: Record<string, unknown>) => void> = [];
  proc.on('message', (message: Record<string, unknown>) => replies.shift()?.(message));
  const reply = <T>(field: string): Promise<T> => new Promise((resolve, reject) => {
    const onExit = (code: number | null): void => reject(new Error(`the gateway exited (${code}) before '${field}': ${stderr}`));
    proc.once('exit', onExit);
    replies.push((message) => {
      proc.off('exit', onExit);
      if (!(field in message)) return reject(new Error(`expected '${field}', got ${JSON.stringify(message)}`));
      resolve(message[field] as T);
    });
  });
  const ask = <T>(message: object, field: string): Promise<T> => {
    const answer = reply<T>(field);
    proc.send(message);
    return answer;
  };
  const ready = await reply<{ url: string; key: string }>('ready');
  return {
    url: ready.url,
    key: ready.key,
    mock,
    begin: () => ask<void>({ begin: true }, 'begun'),
    end: () => ask<WindowReport>({ end: true }, 'report'),
    collect: () => ask<void>({ collect: true }, 'collected'),
    async accessLines(expected) {
      let lines = 0;
      for (let attempt = 0; attempt < 100 && lines < expected; attempt++) {
        if (attempt > 0) await sleep(10);
        await ask({ flush: true }, 'flushed');
        lines = readFileSync(stdoutFile, 'utf8').split('\n').filter((line) => line.startsWith('{"time":')).length;
      }
      return lines;
    },
  };
}

/**
 * A chat completion, plain or streamed (the mock answers 5 content events in one write unless
 * `mock`, its switches, says otherwise).
 */
export function chatCall(key: string, stream: boolean, mock?: MockSwitches): Buffer {
  const body = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], ...(stream ? { stream: true } : {}), ...(mock === undefined ? {} : { mock }) };
  return postBytes('/v1/chat/completions', key, JSON.stringify(body));
}

/** Calls on one keep-alive connection, one after another. */
class Connection {
  private received: Buffer[] = [];
  private waiting: (() => void) | null = null;
  private constructor(private readonly socket: Socket) {
    socket.on('data', (d: Buffer) => {
      this.received.push(d);
      this.waiting?.();
    });
    socket.on('close', () => this.waiting?.());
  }

  static async open(url: string): Promise<Connection> {
    return new Connection(await open(portOf(url)));
  }

  /** Sends `request` and resolves once its whole answer came; throws unless it is a 200. */
  async call(request: Buffer): Promise<void> {
    this.socket.write(request);
    for (;;) {
      const data = this.received.length === 1 ? this.received[0]! : Buffer.concat(this.received);
      this.received = data.length === 0 ? [] : [data];
      const { responses, rest } = parseResponses(data);
      if (responses.length > 0) {
        if (responses.length > 1 || rest.length > 0) throw new Error('more than one answer to one call');
        if (responses[0]!.status !== 200) throw new Error(`answered ${responses[0]!.status}: ${responses[0]!.body.toString()}`);
        this.received = [];
        return;
      }
      if (this.socket.destroyed) throw new Error(`the connection closed mid-answer: ${data.toString('latin1').slice(0, 300)}`);
      await new Promise<void>((resolve) => (this.waiting = resolve));
      this.waiting = null;
    }
  }

  close(): void {
    this.socket.destroy();
  }
}

/** Keep-alive connections to the gateway, opened once: the calls of a window open none. */
export interface Clients {
  /**
   * `total` calls of `request`, each connection making its next call once its previous one is
   * answered (so as many calls are in flight as there are connections, until the last ones).
   * With `pauseMs`, each connection waits that long after an answer before its next call.
   */
  run(request: Buffer, total: number, pauseMs?: number): Promise<void>;
  /** Calls answered so far. */
  readonly answered: number;
}

export async function openClients(t: Teardown, url: string, connections: number): Promise<Clients> {
  const open = await Promise.all(Array.from({ length: connections }, () => Connection.open(url)));
  t.teardown(() => {
    for (const c of open) c.close();
  });
  let answered = 0;
  return {
    async run(request, total, pauseMs) {
      let started = 0;
      await Promise.all(open.map(async (c) => {
        while (started < total) {
          started++;
          await c.call(request);
          answered++;
          if (pauseMs !== undefined) await sleep(pauseMs);
        }
      }));
    },
    get answered() {
      return answered;
    },
  };
}
