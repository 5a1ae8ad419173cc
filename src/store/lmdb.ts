import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { open, type Database, type RootDatabase } from 'lmdb';
import { log } from '../log.js';
import { assertFixedLmdbBinding } from './binding.js';
import { accountToRow, keyToRow, rowToAccount, rowToKey, rowToUsage, usageToRow, type AccountRow, type DailyRow, type KeyRow, type UsageRow } from './rows.js';
import type { Account, DailyTotals, KeyMode, KeyRecord, UsageRecord } from './types.js';

const WINDOW_MS = 60_000;

export interface NewKey {
  hash: string;
  prefix: string;
  name: string | null;
  mode: KeyMode;
  models: string[] | null;
  rpm: number | null;
  expiresAt: number | null;
  /** Opening balance (nUSD) for credit keys, budget (tokens) for token keys. */
  amount: number;
}

/** The charge a finished request makes on its key's account. */
export interface Charge { nano: number; tokens: number }

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

/** Told when a queued record is committed (and, with fsync 'commit', on disk). */
export interface CommitListener { committed(error: unknown): void }

/** Told the outcome of a queued rate-limit check: 0 admitted, else seconds to wait. */
export type AdmitListener = (retryAfter: number) => void;

/**
 * The one interface to persistent state: an LMDB environment under the data directory.
 *
 * Reads are synchronous and see the latest committed state as of the current event turn
 * (lmdb-js renews its read transaction every turn), so a change written by `tollgate keys …` in
 * another process is obeyed on the next request without any cache to invalidate.
 * Every read-modify-write runs inside a synchronous transaction (`transactionSync`), which holds
 * LMDB's single write lock across processes: exact under cluster workers and with issuer
 * commands opening the store while the server commits (tested), given the binding built by
 * scripts/build-lmdb.mjs (./binding.ts says why).
 */
export class Store {
  private admits: Array<[string, number, number, AdmitListener]> = [];
  private records: Array<[KeyRecord, UsageRecord, Charge, CommitListener]> = [];
  private flushScheduled = false;
  private flushTimer: NodeJS.Timeout | null = null;
  private readonly fsync: FsyncMode;
  /** The current UTC day as 'YYYY-MM-DD' and the ms range it covers: formatted once a day, not per record. */
  private day = { from: 0, to: 0, text: '' };

  private constructor(
    options: StoreOptions,
    private readonly root: RootDatabase,
    /** sha256(secret) → KeyRow */
    private readonly keys: Database<KeyRow, string>,
    /** key id → sha256(secret) */
    private readonly keyIds: Database<string, string>,
    private readonly accounts: Database<AccountRow, string>,
    /** key id → [window start (ms), requests in it] */
    private readonly rate: Database<[number, number], string>,
    /** model id → enabled (run-time override of the config file) */
    private readonly modelSwitches: Database<boolean, string>,
    /** [key id, at, request id] → UsageRow */
    private readonly usage: Database<UsageRow, [string, number, string]>,
    /** [key id, 'YYYY-MM-DD', model] → DailyRow */
    private readonly daily: Database<DailyRow, [string, string, string]>,
  ) {
    this.fsync = options.fsync ?? 'commit';
    if (this.fsync === 'interval') {
      this.flushTimer = setInterval(() => this.syncToDisk(logSyncFailure), options.fsyncIntervalMs ?? 1000);
      this.flushTimer.unref();
    }
  }

  /**
   * Opens the environment. The server passes its configured fsync mode; everything else (the
   * CLI) uses the default, `commit`, so every issuer change is on disk when the command returns.
   */
  static open(dataDir: string, options: StoreOptions = {}): Store {
    assertFixedLmdbBinding();
    createDataDir(dataDir);
    // Every process opens the environment with the same flags: lmdb-js would otherwise turn on
    // overlappingSync in a process that does not ask for noSync (the CLI), and a server asking
    // for noSync while such a process has the environment open is refused (open.js: "Can not
    // set noSync on a database that was opened with overlappingSync").
    const root = open({ path: dataDir, maxDbs: 16, noSync: options.fsync === 'interval', overlappingSync: false });
    return new Store(
      options,
      root,
      root.openDB({ name: 'keys' }),
      root.openDB({ name: 'key-ids' }),
      root.openDB({ name: 'accounts' }),
      root.openDB({ name: 'rate' }),
      root.openDB({ name: 'model-switches' }),
      root.openDB({ name: 'usage' }),
      root.openDB({ name: 'daily-by-model' }),
    );
  }

  async close(): Promise<void> {
    if (this.flushScheduled) this.flush();
    if (this.flushTimer !== null) clearInterval(this.flushTimer);
    await new Promise<void>((resolve) => this.syncToDisk(() => resolve()));
    await this.root.close();
  }

  /**
   * An issuer change (CLI): one synchronous transaction, on disk when it returns (the CLI opens
   * without noSync), under LMDB's write lock like the server's group commits, rather than on
   * lmdb-js's asynchronous write thread.
   */
  private async writeNow<T>(change: () => T): Promise<T> {
    return this.root.transactionSync(() => this.auditedResult(change()));
  }

  // ── keys ────────────────────────────────────────────────────────────────

  keyByHash(hash: string): KeyRecord | undefined {
    const row = this.keys.get(hash);
    return row === undefined ? undefined : rowToKey(row);
  }

  keyById(id: string): KeyRecord | undefined {
    const hash = this.keyIds.get(id);
    return hash === undefined ? undefined : this.keyByHash(hash);
  }

  allKeys(): KeyRecord[] {
    const list: KeyRecord[] = [];
    for (const { value } of this.keys.getRange()) list.push(rowToKey(value));
    return list.sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
  }

  account(id: string): Account | undefined {
    const row = this.accounts.get(id);
    return row === undefined ? undefined : rowToAccount(row);
  }

  /** Creates a key with a fresh account holding `amount`. */
  createKey(fields: NewKey, now = Date.now()): Promise<KeyRecord> {
    const record: KeyRecord = {
      id: newId('key'),
      hash: fields.hash,
      prefix: fields.prefix,
      name: fields.name,
      mode: fields.mode,
      models: fields.models,
      rpm: fields.rpm,
      expiresAt: fields.expiresAt,
      status: 'active',
      createdAt: now,
      account: newId('acct'),
      rotatedFrom: null,
    };
    const account: Account = fields.mode === 'credit'
      ? { mode: 'credit', balanceNano: fields.amount, budgetTokens: 0, usedTokens: 0 }
      : { mode: 'token', balanceNano: 0, budgetTokens: fields.amount, usedTokens: 0 };
    return this.writeNow(() => {
      if (this.keys.get(record.hash) !== undefined) throw new Error('a key with this secret already exists');
      this.accounts.put(record.account, accountToRow(account));
      this.keys.put(record.hash, keyToRow(record));
      this.keyIds.put(record.id, record.hash);
      return record;
    });
  }

  /** A new key with its own id and the same settings, drawing on the same account. */
  rotateKey(oldId: string, hash: string, prefix: string, now = Date.now()): Promise<KeyRecord | undefined> {
    return this.writeNow(() => {
      const old = this.keyById(oldId);
      if (!old) return undefined;
      const record: KeyRecord = { ...old, id: newId('key'), hash, prefix, status: 'active', createdAt: now, rotatedFrom: old.id };
      this.keys.put(hash, keyToRow(record));
      this.keyIds.put(record.id, hash);
      return record;
    });
  }

  /** Applies `change` to a key atomically; resolves to the new record (undefined if no such key). */
  updateKey(id: string, change: (key: KeyRecord) => KeyRecord): Promise<KeyRecord | undefined> {
    return this.writeNow(() => {
      const key = this.keyById(id);
      if (!key) return undefined;
      const next = change(key);
      this.keys.put(key.hash, keyToRow(next));
      return next;
    });
  }

  /** Adds nUSD (credit) or tokens (token) to an account. */
  topUp(accountId: string, amount: number): Promise<Account | undefined> {
    return this.writeNow(() => {
      const acct = this.account(accountId);
      if (!acct) return undefined;
      const next = acct.mode === 'credit'
        ? { ...acct, balanceNano: acct.balanceNano + amount }
        : { ...acct, budgetTokens: acct.budgetTokens + amount };
      this.accounts.put(accountId, accountToRow(next));
      return next;
    });
  }

  // ── the request path: one group commit per event-loop turn ─────────────

  /**
   * Counts one request in the key's fixed 60-second window (which starts with the first
   * request after the previous one ended) and tells `done` 0 when admitted, else the seconds
   * left in the window (for `retry-after`).
   *
   * Queued with every other check and record of this event-loop turn and decided in their
   * group commit, under LMDB's write lock: exact across processes. The decision is not flushed
   * to disk before it is used; a crash can only lose a count, which errs towards admitting.
   */
  admit(keyId: string, rpm: number, now: number, done: AdmitListener): void {
    this.admits.push([keyId, rpm, now, done]);
    this.schedule();
  }

  /**
   * Charges the account and stores the usage record and the day's totals. Queued for this
   * turn's group commit; `listener` is told once it is committed, so the caller can hold back
   * the response's last byte until then.
   */
  record(key: KeyRecord, usage: UsageRecord, charge: Charge, listener: CommitListener): void {
    this.records.push([key, usage, charge, listener]);
    this.schedule();
  }

  private schedule(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(this.flush);
  }

  /**
   * The group commit: every check and record queued during the turn, in one synchronous
   * transaction. Measured (architecture.md, and again in bench/README.md): a synchronous noSync
   * commit costs ≈ 13–17 µs, an awaited async transaction 130–450 µs; one per turn instead of
   * one per request keeps that off each request's latency and its CPU.
   */
  private readonly flush = (): void => {
    this.flushScheduled = false;
    const admits = this.admits;
    const records = this.records;
    this.admits = [];
    this.records = [];
    const decisions: number[] = [];
    let failure: unknown = null;
    try {
      this.root.transactionSync(() => {
        this.countRequests(admits, decisions);
        this.applyRecords(records);
      });
    } catch (err) {
      failure = err;
    }
    for (let i = 0; i < admits.length; i++) admits[i]![3](failure === null ? decisions[i]! : 0);
    if (records.length === 0) return;
    if (failure === null && this.fsync === 'commit') {
      this.syncToDisk((err) => {
        for (const r of records) r[3].committed(err ?? null);
      });
      return;
    }
    for (const r of records) r[3].committed(failure);
  };

  /** Flushes committed transactions to disk (mdb_env_sync, in lmdb-js's worker thread). */
  private syncToDisk(done: (err: unknown) => void): void {
    (this.root as unknown as { sync(cb: (err: unknown) => void): void }).sync(done);
  }

  /**
   * Decides the queued rate checks in order. Each key's window is read and written once per
   * group, however many of its requests the group holds.
   */
  private countRequests(admits: Array<[string, number, number, AdmitListener]>, decisions: number[]): void {
    const windows = new Map<string, [number, number]>();
    for (const [keyId, rpm, now] of admits) {
      let window = windows.get(keyId) ?? this.rate.get(keyId);
      if (window === undefined || now >= window[0] + WINDOW_MS) window = [now, 0];
      windows.set(keyId, window);
      if (window[1] < rpm) {
        window[1] += 1;
        decisions.push(0);
      } else {
        decisions.push(Math.max(1, Math.ceil((window[0] + WINDOW_MS - now) / 1000)));
      }
    }
    for (const [keyId, window] of windows) this.rate.put(keyId, window);
  }

  private dayOf(at: number): string {
    const day = this.day;
    if (at < day.from || at >= day.to) {
      const from = at - (at % 86_400_000);
      this.day = { from, to: from + 86_400_000, text: new Date(from).toISOString().slice(0, 10) };
    }
    return this.day.text;
  }

  /**
   * Stores the queued usage records, and applies their charges and day totals summed per
   * account and per (key, day, model): one read and one write each per group, not per request
   * (at c=32 these puts were ≈ 9 % of the gateway's CPU, bench/profile.ts).
   */
  private applyRecords(records: Array<[KeyRecord, UsageRecord, Charge, CommitListener]>): void {
    const charges = new Map<string, Charge>();
    const days = new Map<string, [[string, string, string], DailyRow]>();
    for (const [key, usage, charge] of records) {
      this.usage.put([key.id, usage.at, usage.requestId], usageToRow(usage));
      if (charge.nano !== 0 || charge.tokens !== 0) {
        const sum = charges.get(key.account);
        if (sum === undefined) charges.set(key.account, { nano: charge.nano, tokens: charge.tokens });
        else {
          sum.nano += charge.nano;
          sum.tokens += charge.tokens;
        }
      }
      // Tokens are counted for both kinds of key (what was used); cost is what was charged.
      const day = this.dayOf(usage.at);
      const id = `${key.id}\n${day}\n${usage.model}`;
      const total = days.get(id);
      if (total === undefined) days.set(id, [[key.id, day, usage.model], [1, charge.nano, usage.tokensCharged]]);
      else {
        total[1][0] += 1;
        total[1][1] += charge.nano;
        total[1][2] += usage.tokensCharged;
      }
    }
    for (const [account, charge] of charges) {
      const acct = this.accounts.get(account);
      if (acct === undefined) continue;
      if (acct[0] === 0) acct[1] -= charge.nano;
      else acct[3] += charge.tokens;
      this.accounts.put(account, acct);
    }
    for (const [dayKey, add] of days.values()) {
      const row = this.daily.get(dayKey);
      this.daily.put(dayKey, row === undefined ? add : [row[0] + add[0], row[1] + add[1], row[2] + add[2]]);
    }
  }

  // ── models ──────────────────────────────────────────────────────────────

  modelSwitch(id: string): boolean | undefined {
    return this.modelSwitches.get(id);
  }

  setModelSwitch(id: string, enabled: boolean): Promise<boolean> {
    return this.writeNow(() => {
      void this.modelSwitches.put(id, enabled);
      return true;
    });
  }

  // ── usage ───────────────────────────────────────────────────────────────

  /** A key's usage records, newest first; `before` is an exclusive [at, requestId] cursor. */
  usageOf(keyId: string, limit: number, before?: [number, string]): UsageRecord[] {
    const start: [string, number, string] = before ? [keyId, before[0], before[1]] : [keyId, Number.MAX_SAFE_INTEGER, ''];
    const list: UsageRecord[] = [];
    for (const { key, value } of this.usage.getRange({ start, end: [keyId, -1, ''], reverse: true, limit: limit + 1 })) {
      if (before && key[1] === before[0] && key[2] === before[1]) continue;
      list.push(rowToUsage(value));
      if (list.length === limit) break;
    }
    return list;
  }

  /** Daily totals of a key from `fromDay` to `toDay` inclusive ('YYYY-MM-DD'), with the split by model. */
  dailyOf(keyId: string, fromDay: string, toDay: string): Map<string, DailyTotals> {
    const days = new Map<string, DailyTotals>();
    for (const { key, value } of this.daily.getRange({ start: [keyId, fromDay, ''], end: [keyId, `${toDay}~`, ''] })) {
      const [, day, model] = key;
      let totals = days.get(day);
      if (totals === undefined) days.set(day, (totals = { requests: 0, costNano: 0, tokens: 0, byModel: {} }));
      totals.requests += value[0];
      totals.costNano += value[1];
      totals.tokens += value[2];
      totals.byModel[model] = { requests: value[0], costNano: value[1], tokens: value[2] };
    }
    return days;
  }

  // ── operating it: audit trail, retention, readiness (kept apart from the rest) ──
  //
  // The audit trail is its own sub-database, opened on first use: [at, entry id] → AuditRow.
  // An issuer change made through `audited()` writes its entry inside the same transaction as
  // the change itself, so a change is never without its entry, nor an entry without its change.

  private auditDb: Database<AuditRow, [number, string]> | null = null;
  private auditNext: ((result: unknown) => AuditEntry | undefined) | null = null;
  private auditSeq = 0;

  private get audit(): Database<AuditRow, [number, string]> {
    return (this.auditDb ??= this.root.openDB({ name: 'audit' }));
  }

  /** Runs an issuer change (one of the methods above) and records `entry(result)` with it. */
  async audited<T>(entry: (result: T) => AuditEntry | undefined, change: () => Promise<T>): Promise<T> {
    this.auditNext = entry as (result: unknown) => AuditEntry | undefined;
    try {
      return await change();
    } finally {
      this.auditNext = null;
    }
  }

  /** Inside writeNow's transaction: the pending audit entry for this change's result. */
  private auditedResult<T>(result: T): T {
    const make = this.auditNext;
    this.auditNext = null;
    const e = make?.(result);
    if (e !== undefined) {
      this.audit.put([e.at, `${process.pid.toString(36)}.${(this.auditSeq++).toString(36)}`], [e.at, e.action, e.keyId, e.actor, e.address, JSON.stringify(e.detail)]);
    }
    return result;
  }

  /** Audit entries, oldest first; only those of `keyId` when given. */
  auditTrail(keyId?: string, limit = 10_000): AuditEntry[] {
    const list: AuditEntry[] = [];
    for (const { value: r } of this.audit.getRange()) {
      if (keyId !== undefined && r[2] !== keyId) continue;
      list.push({ at: r[0], action: r[1], keyId: r[2], actor: r[3], address: r[4], detail: JSON.parse(r[5]) as Record<string, unknown> });
      if (list.length === limit) break;
    }
    return list;
  }

  /** A key's usage records with `from <= at < to`, oldest first, at most `limit`. */
  usageBetween(keyId: string, from: number, to: number, limit: number): UsageRecord[] {
    const list: UsageRecord[] = [];
    for (const { value } of this.usage.getRange({ start: [keyId, from, ''], end: [keyId, to, ''], limit })) list.push(rowToUsage(value));
    return list;
  }

  /**
   * Retention: deletes up to `limit` usage records older than `before` (epoch ms), visiting
   * keys in id order from `fromKeyId`; returns how many went and the key id to go on from
   * (null once every key was visited). Daily totals are kept. One small synchronous
   * transaction per call, so a sweep interleaves with the request path's group commits
   * (cost per batch: bench/retention.ts).
   */
  deleteUsageBefore(before: number, limit: number, fromKeyId: string): { deleted: number; next: string | null } {
    const doomed: [string, number, string][] = [];
    let next: string | null = null;
    for (const keyId of this.keyIds.getKeys({ start: fromKeyId })) {
      if (doomed.length >= limit) {
        next = keyId;
        break;
      }
      for (const key of this.usage.getKeys({ start: [keyId, -1, ''], end: [keyId, before, ''], limit: limit - doomed.length })) doomed.push(key);
      if (doomed.length >= limit) {
        next = keyId; // it may hold more old records
        break;
      }
    }
    if (doomed.length > 0) {
      this.root.transactionSync(() => {
        for (const key of doomed) this.usage.removeSync(key);
      });
    }
    return { deleted: doomed.length, next };
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

/** One issuer change: when, what, which key, by whom (never a secret). */
export interface AuditEntry {
  at: number;
  /** `key.create`, `key.suspend`, `key.resume`, `key.topup`, `key.extend`, `key.set`, `key.rotate`, `model.enable`, `model.disable` */
  action: string;
  keyId: string | null;
  /** `cli@HOSTNAME`, or `admin-api` */
  actor: string;
  /** The admin API caller's address; null for the local command line. */
  address: string | null;
  detail: Record<string, unknown>;
}

type AuditRow = [number, string, string | null, string, string | null, string];

function logSyncFailure(err: unknown): void {
  if (err) log('error', 'fsync_failed', { error: String(err) });
}

function newId(kind: string): string {
  return `${kind}_${randomBytes(8).toString('hex')}`;
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
