import { existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { open, type Database, type RootDatabase } from 'lmdb';
import { log } from '../../log.js';
import { assertFixedLmdbBinding } from '../binding.js';
import type { AccountRow, CallRow, DailyRow, KeyRow, ProcessRow, RateRow, ResponseRow, UsageRow } from '../rows.js';

/**
 * When a commit reaches the disk:
 * - `interval`: commits are synchronous and unsynced (LMDB `noSync`), and the environment is
 *   flushed to disk every `fsyncIntervalMs`. A killed process loses nothing committed; a power
 *   loss or kernel crash can lose the commits since the last flush.
 * - `commit`: every group commit is flushed to disk before the requests in it are answered.
 */
export type FsyncMode = 'interval' | 'commit';

export interface StoreOptions {
  fsync?: FsyncMode;
  fsyncIntervalMs?: number;
}

/** The environment and its named databases, in the order LmdbEnvironment's constructor takes them. */
export type LmdbDatabases = [
  RootDatabase,
  Database<KeyRow, string>,
  Database<string, string>,
  Database<AccountRow, string>,
  Database<RateRow, string>,
  Database<boolean, string>,
  Database<UsageRow, [string, number, string]>,
  Database<DailyRow, [string, string, string]>,
  Database<CallRow, [string, string]>,
  Database<ProcessRow, string>,
  Database<ResponseRow, [string, string]>,
];

/**
 * Opens the environment of `dataDir` and its databases. The server passes its configured fsync
 * mode; everything else (the CLI) uses the default, `commit`, so every issuer change is on disk
 * when the command returns.
 */
export function openEnvironment(dataDir: string, options: StoreOptions): LmdbDatabases {
  assertFixedLmdbBinding();
  createDataDir(dataDir);
  // Every process opens the environment with the same flags: lmdb-js would otherwise turn on
  // overlappingSync in a process that does not ask for noSync (the CLI), and a server asking
  // for noSync while such a process has the environment open is refused (open.js: "Can not
  // set noSync on a database that was opened with overlappingSync").
  //
  // A server (which always names its fsync mode) commits without a sync inside the transaction
  // in both modes: with `commit`, one asynchronous flush per group commit follows (flush()),
  // so the event loop never waits for the disk. Measured (bench/lmdb-commit.ts, two runs at
  // load average 6): a synced transactionSync blocked the loop 1.2–1.9 ms per group commit and
  // the flush after it was a second sync (1.9–3.0 ms until flushed); unsynced, then flushed:
  // 65–88 µs blocked, 0.9–1.3 ms until flushed. Other processes (the CLI, the demo) keep the
  // synced commit: on disk when the command returns.
  const root = open({ path: dataDir, maxDbs: 16, noSync: options.fsync !== undefined, overlappingSync: false });
  return [
    root,
    root.openDB({ name: 'keys' }),
    root.openDB({ name: 'key-ids' }),
    root.openDB({ name: 'accounts' }),
    root.openDB({ name: 'rate' }),
    root.openDB({ name: 'model-switches' }),
    root.openDB({ name: 'usage' }),
    root.openDB({ name: 'daily-by-model' }),
    root.openDB({ name: 'calls' }),
    root.openDB({ name: 'processes' }),
    root.openDB({ name: 'responses' }),
  ];
}

/**
 * The LMDB store's ground floor: the environment, its databases, and when commits reach the disk.
 * The roles are built on it, one file each: issuer.ts, usage.ts, ledger.ts (the group commit),
 * liveness.ts (calls whose process died), admission.ts; store.ts is the whole.
 */
export class LmdbEnvironment {
  protected flushTimer: NodeJS.Timeout | null = null;
  protected readonly fsync: FsyncMode;
  /** Commits are synced inside their transaction (opened without noSync: see open()). */
  protected readonly syncedCommits: boolean;

  protected constructor(
    options: StoreOptions,
    protected readonly root: RootDatabase,
    /** sha256(secret) → KeyRow */
    protected readonly keys: Database<KeyRow, string>,
    /** key id → sha256(secret) */
    protected readonly keyIds: Database<string, string>,
    protected readonly accounts: Database<AccountRow, string>,
    /** key id → [window start (ms), requests in it] */
    protected readonly rate: Database<RateRow, string>,
    /** model id → enabled (run-time override of the config file) */
    protected readonly modelSwitches: Database<boolean, string>,
    /** [key id, at, request id] → UsageRow */
    protected readonly usage: Database<UsageRow, [string, number, string]>,
    /** [key id, 'YYYY-MM-DD', model] → DailyRow */
    protected readonly daily: Database<DailyRow, [string, string, string]>,
    /** [key id, call id] → CallRow: the calls in flight, with their holds */
    protected readonly calls: Database<CallRow, [string, string]>,
    /** owner id → ProcessRow: the serving processes and their heartbeats */
    protected readonly processes: Database<ProcessRow, string>,
    /** [account id, response id] → ResponseRow: who made each stored response (deleted by the retention sweep) */
    protected readonly responses: Database<ResponseRow, [string, string]>,
  ) {
    this.fsync = options.fsync ?? 'commit';
    this.syncedCommits = options.fsync === undefined;
    if (this.fsync === 'interval') {
      this.flushTimer = setInterval(() => this.syncToDisk(logSyncFailure), options.fsyncIntervalMs ?? 1000);
      this.flushTimer.unref();
    }
  }

  /** Flushes committed transactions to disk (mdb_env_sync, in lmdb-js's worker thread). */
  protected syncToDisk(done: (err: unknown) => void): void {
    (this.root as unknown as { sync(cb: (err: unknown) => void): void }).sync(done);
  }

  /** For /readyz: the environment answers a read. */
  answers(): boolean {
    try {
      this.keyIds.get('');
      return true;
    } catch {
      return false;
    }
  }

  /** Flushes committed transactions to disk (the admin API's changes, in a server opened with noSync). */
  flushToDisk(): Promise<void> {
    return new Promise((resolve, reject) => this.syncToDisk((err) => (err ? reject(err) : resolve())));
  }
}

function logSyncFailure(err: unknown): void {
  if (err) log('error', 'fsync_failed', { error: String(err) });
}

/**
 * Creates the data directory and its missing parents one level at a time, each failure as one
 * line naming the directory: Node 20's `mkdirSync(…, { recursive: true })` never returns for
 * some paths (`/proc/nonexistent/x`).
 */
function createDataDir(dataDir: string): void {
  const missing: string[] = [];
  for (let dir = resolve(dataDir); !existsSync(dir); dir = dirname(dir)) {
    missing.unshift(dir);
    if (dirname(dir) === dir) break;
  }
  for (const dir of missing) {
    try {
      mkdirSync(dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') continue;
      throw new Error(`cannot create the data directory ${dataDir}: ${(err as Error).message.replace(/^E[A-Z]+: /, '')}`);
    }
  }
  if (!statSync(dataDir).isDirectory()) throw new Error(`the data directory ${dataDir} is not a directory`);
}
