import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { open, type Database, type RootDatabase } from 'lmdb';
import { log } from '../log.js';
import { assertFixedLmdbBinding } from './binding.js';
import type { AdmissionListener, CommitListener, GatewayStore, HoldListener } from '../domain/interfaces.js';
import { fundsRefusal, keyRefusal } from '../domain/rules.js';
import { newInstanceId, ownProof, proofFrom, proofText, provenGone } from './instance.js';
import { accountToRow, keyToRow, processToRow, responseToRow, rowToAccount, rowToKey, rowToProcess, rowToResponse, rowToUsage, usageToRow, type AccountRow, type CallRow, type DailyRow, type KeyRow, type ProcessRow, type ResponseRow, type UsageRow } from './rows.js';
import { PLAIN_USAGE_DETAIL, type Account, type AuditEntry, type Charge, type DailyTotals, type Hold, type KeyMode, type KeyRecord, type MadeResponse, type NewKey, type Refusal, type ResponseCursor, type ResponseOwner, type UsageRecord } from '../domain/types.js';
import { PendingAudit } from './audit.js';
import { RetryQueue } from './retry.js';

const WINDOW_MS = 60_000;

/** A serving process writes its heartbeat this often … */
const HEARTBEAT_MS = 1_000;
/** … and another host's process is taken for dead when its heartbeat is older than this. */
export const OWNER_STALE_MS = 10_000;
/** How often a serving process looks for calls whose process died. */
export const SWEEP_MS = 2_000;

/** Told the outcome of step 7 (rate window, concurrency slot): null admitted, else the refusal. */
type AdmitListener = (refusal: Refusal | null, retryAfter: number) => void;

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
export class Store implements GatewayStore {
  readonly backend = 'lmdb' as const;
  private admits: Array<[KeyRecord, string, number, AdmitListener]> = [];
  private holds: Array<[KeyRecord, string, Hold, HoldListener]> = [];
  private releases: ReleaseEntry[] = [];
  private records: RecordEntry[] = [];
  /** Settlements and releases of a failed commit, tried again in order (store/retry.ts). */
  private readonly retries = new RetryQueue<RecordEntry | ReleaseEntry>((items) => Promise.resolve(this.commitRetries(items)));
  private flushScheduled = false;
  /** This process's id as the owner of its calls in flight, once it serves (see serveCalls). */
  private owner: string | null = null;
  private heartbeatDue = false;
  /** What proves this process gone to others on this machine (store/instance.ts), as its row holds it. */
  private proof = '';
  private ownerTimers: NodeJS.Timeout[] = [];
  private flushTimer: NodeJS.Timeout | null = null;
  private readonly fsync: FsyncMode;
  /** Commits are synced inside their transaction (opened without noSync: see open()). */
  private readonly syncedCommits: boolean;
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
    /** [key id, call id] → CallRow: the calls in flight, with their holds */
    private readonly calls: Database<CallRow, [string, string]>,
    /** owner id → ProcessRow: the serving processes and their heartbeats */
    private readonly processes: Database<ProcessRow, string>,
    /** [account id, response id] → ResponseRow: who made each stored response (deleted by the retention sweep) */
    private readonly responses: Database<ResponseRow, [string, string]>,
  ) {
    this.fsync = options.fsync ?? 'commit';
    this.syncedCommits = options.fsync === undefined;
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
    //
    // A server (which always names its fsync mode) commits without a sync inside the transaction
    // in both modes: with `commit`, one asynchronous flush per group commit follows (flush()),
    // so the event loop never waits for the disk. Measured (bench/lmdb-commit.ts, two runs at
    // load average 6): a synced transactionSync blocked the loop 1.2–1.9 ms per group commit and
    // the flush after it was a second sync (1.9–3.0 ms until flushed); unsynced, then flushed:
    // 65–88 µs blocked, 0.9–1.3 ms until flushed. Other processes (the CLI, the demo) keep the
    // synced commit: on disk when the command returns.
    const root = open({ path: dataDir, maxDbs: 16, noSync: options.fsync !== undefined, overlappingSync: false });
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
      root.openDB({ name: 'calls' }),
      root.openDB({ name: 'processes' }),
      root.openDB({ name: 'responses' }),
    );
  }

  async close(): Promise<void> {
    if (this.flushScheduled) this.flush();
    await this.retries.close();
    if (this.flushTimer !== null) clearInterval(this.flushTimer);
    this.stopServingCalls();
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

  /** Synchronous reads (about a microsecond): the request path and the transactions use these. */
  private keyRecord(hash: string): KeyRecord | undefined {
    const row = this.keys.get(hash);
    return row === undefined ? undefined : rowToKey(row);
  }

  private keyRecordById(id: string): KeyRecord | undefined {
    const hash = this.keyIds.get(id);
    return hash === undefined ? undefined : this.keyRecord(hash);
  }

  private accountOf(id: string): Account | undefined {
    const row = this.accounts.get(id);
    return row === undefined ? undefined : rowToAccount(row);
  }

  keyByHash(hash: string): Promise<KeyRecord | undefined> {
    return Promise.resolve(this.keyRecord(hash));
  }

  keyById(id: string): Promise<KeyRecord | undefined> {
    return Promise.resolve(this.keyRecordById(id));
  }

  allKeys(): Promise<KeyRecord[]> {
    const list: KeyRecord[] = [];
    for (const { value } of this.keys.getRange()) list.push(rowToKey(value));
    return Promise.resolve(list.sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id)));
  }

  account(id: string): Promise<Account | undefined> {
    return Promise.resolve(this.accountOf(id));
  }

  /** One environment holds every account: any key may draw on any of them. */
  fitsAccount(): boolean {
    return true;
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
      concurrency: fields.concurrency,
      expiresAt: fields.expiresAt,
      status: 'active',
      createdAt: now,
      account: newId('acct'),
      rotatedFrom: null,
    };
    const account: Account = fields.mode === 'credit'
      ? { mode: 'credit', balanceNano: fields.amount, budgetTokens: 0, usedTokens: 0, held: 0 }
      : { mode: 'token', balanceNano: 0, budgetTokens: fields.amount, usedTokens: 0, held: 0 };
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
      const old = this.keyRecordById(oldId);
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
      const key = this.keyRecordById(id);
      if (!key) return undefined;
      const next = change(key);
      this.keys.put(key.hash, keyToRow(next));
      return next;
    });
  }

  /** Adds nUSD (credit) or tokens (token) to an account. */
  topUp(accountId: string, amount: number): Promise<Account | undefined> {
    return this.writeNow(() => {
      const acct = this.accountOf(accountId);
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
   * Steps 3–7. Steps 3–6 are synchronous reads of the state committed as of this event turn
   * (no cache: a change made by `tollgate keys …` in another process is obeyed on the next
   * request), so refusals and keys without a rate or concurrency limit are answered at once,
   * before this returns. Step 7 is queued for this turn's group commit (`countLater`).
   */
  admit(hash: string, surface: KeyMode, callId: string, done: AdmissionListener): void {
    const key = this.keyRecord(hash);
    if (key === undefined) return done(undefined, 'invalid_api_key', 0);
    const now = Date.now();
    const refusal = keyRefusal(key, surface, now) ?? fundsRefusal(this.accountOf(key.account));
    if (refusal !== null || (key.rpm === null && key.concurrency === null)) return done(key, refusal, 0);
    this.countLater(key, callId, now, (refused, retryAfter) => done(key, refused, retryAfter));
  }

  lookup(hash: string, done: (key: KeyRecord | undefined, failure: unknown) => void): void {
    done(this.keyRecord(hash), null);
  }

  modelEnabled(id: string, byDefault: boolean, done: (enabled: boolean | null) => void): void {
    done(this.modelSwitches.get(id) ?? byDefault);
  }

  responseOwner(account: string, id: string, done: (owner: ResponseOwner | undefined, failure: unknown) => void): void {
    const row = this.responses.get([account, id]);
    done(row === undefined ? undefined : rowToResponse(row), null);
  }

  /** Whether `account` made every one of these responses (each a read of the state as of this turn). */
  private madeAll(account: string, ids: readonly string[]): boolean {
    for (const id of ids) if (this.responses.get([account, id]) === undefined) return false;
    return true;
  }

  readModelSwitches(done: (switches: ReadonlyMap<string, boolean> | null) => void): void {
    const switches = new Map<string, boolean>();
    for (const { key, value } of this.modelSwitches.getRange()) switches.set(key, value);
    done(switches);
  }

  /**
   * Step 7: counts one request in the key's fixed 60-second window (which starts with the
   * first request after the previous one ended) and, for a key with a concurrency limit, takes
   * one of its slots. Tells `done` null when admitted, else `rate_limit_exceeded` with the
   * seconds left in the window, or `concurrency_limit_exceeded`.
   *
   * Queued with every other check and record of this event-loop turn and decided in their
   * group commit, under LMDB's write lock: exact across processes. A refused request takes
   * nothing: neither a count in the window nor a slot.
   */
  private countLater(key: KeyRecord, callId: string, now: number, done: AdmitListener): void {
    this.admits.push([key, callId, now, done]);
    this.schedule();
  }

  /**
   * Before forwarding: holds the call's worst case against its account. Re-checks the funds
   * net of every hold already placed (step 6 again, atomically): when nothing is left, the
   * hold is refused and `done` is told the 402 code; so of calls that passed step 6 together,
   * only those that find funds left go on. Also the call's entry in flight, written before it
   * is forwarded so that a process dying with it leaves a trace (see serveCalls).
   */
  hold(key: KeyRecord, callId: string, hold: Hold, done: HoldListener): void {
    // Step 10's run-time switch, read now as every other read of the request path.
    if (!(this.modelSwitches.get(hold.model) ?? hold.enabledByDefault)) {
      this.release(key, callId);
      return done('model_not_available');
    }
    // The responses it continues, read now too: a foreign or unknown one is refused before the
    // funds are checked again, and nothing is held.
    if (hold.previousResponses !== null && !this.madeAll(key.account, hold.previousResponses)) {
      this.release(key, callId);
      return done('previous_response_not_found');
    }
    this.holds.push([key, callId, hold, done]);
    this.schedule();
  }

  /**
   * Ends a call that was admitted but never forwarded (refused after step 7, or its client
   * left before it went out) or that is neither billed nor listed (GET /models): frees its
   * concurrency slot and releases its hold, without a charge or a record. Idempotent.
   */
  release(key: KeyRecord, callId: string): void {
    this.releases.push([key, callId]);
    this.schedule();
  }

  /**
   * Settles a forwarded call: releases its hold, charges the account and stores the usage
   * record and the day's totals, in one step (the call's entry in flight goes with it, so a
   * call is settled exactly once: a call already settled by another process, because this
   * one was taken for dead, is not charged again). Queued for this turn's group commit;
   * `listener` is told once it is committed, so the caller can hold back the response's last
   * byte until then.
   *
   * `settles: false` is for a record that is not a forwarded call's settlement (a call that
   * failed inside the gateway): it is stored whether or not the call has an entry in flight,
   * and ends that entry if it has one. `response`: its owner record goes in the same commit.
   */
  record(key: KeyRecord, usage: UsageRecord, charge: Charge, listener: CommitListener, settles = true, response: MadeResponse | null = null): void {
    this.records.push([key, usage, charge, listener, settles, response]);
    this.schedule();
  }

  private schedule(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(this.flush);
  }

  /**
   * The group commit: every check, hold and record queued during the turn, in one synchronous
   * transaction. Measured (architecture.md, and again in bench/README.md): a synchronous noSync
   * commit costs ≈ 13–17 µs, an awaited async transaction 130–450 µs; one per turn instead of
   * one per request keeps that off each request's latency and its CPU.
   *
   * Settlements go first, so the funds and slots they free are there for the admissions and
   * holds of the same turn.
   */
  private readonly flush = (): void => {
    this.flushScheduled = false;
    const { admits, holds, releases, records } = this;
    this.admits = [];
    this.holds = [];
    this.releases = [];
    this.records = [];
    const admitted: Array<[Refusal | null, number]> = [];
    const held: Array<Refusal | null> = [];
    let failure: unknown = null;
    try {
      this.root.transactionSync(() => {
        const accounts = new AccountCache(this.accounts);
        this.applyRecords(records, accounts);
        for (const [key, callId] of releases) this.endCall(key.id, callId, accounts);
        this.countRequests(admits, admitted);
        this.placeHolds(holds, accounts, held);
        accounts.writeBack();
        if (this.heartbeatDue && this.owner !== null) {
          this.heartbeatDue = false;
          this.processes.put(this.owner, processToRow(Date.now(), this.proof));
        }
      });
    } catch (err) {
      failure = err;
      log('error', 'store_commit_failed', { error: String(err) });
      // The calls settled or released in it keep their holds; tried again in order (retry.ts).
      for (const r of records) this.retries.add(r, r[1].callId);
      for (const r of releases) this.retries.add(r, r[1]);
    }
    // Fail closed: when the commit failed, nothing is admitted and nothing is forwarded.
    for (let i = 0; i < admits.length; i++) {
      const [refusal, retryAfter] = failure === null ? admitted[i]! : ['store_unavailable' as const, 0];
      tell(admits[i]![3], refusal, retryAfter);
    }
    for (let i = 0; i < holds.length; i++) tell(holds[i]![3], failure === null ? held[i]! : 'store_unavailable', 0);
    if (records.length === 0) return;
    if (failure === null && this.fsync === 'commit' && !this.syncedCommits) {
      // One asynchronous flush (lmdb-js's worker thread) for the whole group, then the answers.
      this.syncToDisk((err) => {
        for (const r of records) tellCommitted(r[3], err ?? null);
      });
      return;
    }
    for (const r of records) tellCommitted(r[3], failure);
  };

  /**
   * Commits what failed commits left (store/retry.ts), oldest first, in one transaction of its
   * own (a group commit of new calls never waits on it); returns how many were committed.
   */
  private commitRetries(items: readonly (RecordEntry | ReleaseEntry)[]): number {
    this.root.transactionSync(() => {
      const accounts = new AccountCache(this.accounts);
      for (const item of items) {
        if (item.length === 2) this.endCall(item[0].id, item[1], accounts);
        else this.applyRecords([item], accounts);
      }
      accounts.writeBack();
    });
    return items.length;
  }

  /** Tries now what failed commits left; resolves to how many are still kept. */
  retryFailed(): Promise<number> {
    return this.retries.retry();
  }

  /** Flushes committed transactions to disk (mdb_env_sync, in lmdb-js's worker thread). */
  private syncToDisk(done: (err: unknown) => void): void {
    (this.root as unknown as { sync(cb: (err: unknown) => void): void }).sync(done);
  }

  /**
   * Decides the queued rate and concurrency checks in order. Each key's window is read and
   * written once per group, however many of its requests the group holds; a key's calls in
   * flight are counted from its entries (at most its limit, so the count is short).
   */
  private countRequests(admits: Array<[KeyRecord, string, number, AdmitListener]>, decisions: Array<[Refusal | null, number]>): void {
    const windows = new Map<string, [number, number]>();
    for (const [key, callId, now] of admits) {
      let window: [number, number] | undefined;
      if (key.rpm !== null) {
        window = windows.get(key.id) ?? this.rate.get(key.id);
        if (window === undefined || now >= window[0] + WINDOW_MS) window = [now, 0];
        windows.set(key.id, window);
        if (window[1] >= key.rpm) {
          decisions.push(['rate_limit_exceeded', Math.max(1, Math.ceil((window[0] + WINDOW_MS - now) / 1000))]);
          continue;
        }
      }
      if (key.concurrency !== null) {
        if (this.calls.getKeysCount({ start: [key.id, ''], end: [key.id, '\uffff'] }) >= key.concurrency) {
          decisions.push(['concurrency_limit_exceeded', 1]);
          continue;
        }
        this.calls.put([key.id, callId], [key.account, this.owner ?? '', now, 0, 0, 0, '', '', 0, 0]);
      }
      if (window !== undefined) window[1] += 1;
      decisions.push([null, 0]);
    }
    for (const [keyId, window] of windows) this.rate.put(keyId, window);
  }

  /** Places the queued holds in order, each re-checking the funds net of the holds before it. */
  private placeHolds(holds: Array<[KeyRecord, string, Hold, HoldListener]>, accounts: AccountCache, decisions: Array<Refusal | null>): void {
    for (const [key, callId, hold] of holds) {
      const acct = accounts.get(key.account);
      const short = acct === undefined ? null : fundsRefusal(rowToAccount(acct));
      if (short !== null) {
        // Nothing goes out: the slot the call took at step 7, if any, is freed.
        this.calls.remove([key.id, callId]);
        decisions.push(short);
        continue;
      }
      if (acct !== undefined) acct[4] = (acct[4] ?? 0) + hold.amount;
      this.calls.put([key.id, callId], [key.account, this.owner ?? '', hold.at, hold.amount, hold.interruptedCharge, hold.interruptedInputTokens,
        hold.endpoint, hold.model, hold.stream ? 1 : 0, 1]);
      decisions.push(null);
    }
  }

  /** Deletes a call's entry in flight and releases its hold; false when it was not there. */
  private endCall(keyId: string, callId: string, accounts: AccountCache): boolean {
    const call = this.calls.get([keyId, callId]);
    if (call === undefined) return false;
    this.calls.remove([keyId, callId]);
    if (call[3] !== 0) {
      const acct = accounts.get(call[0]);
      if (acct !== undefined) acct[4] = (acct[4] ?? 0) - call[3];
    }
    return true;
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
   * Settles the queued calls: each call's hold is released and its charge applied to the
   * account (read and written once per group through the cache), its record stored, and its
   * day totals summed per (key, day, model): one read and one write each per group, not per
   * request (at c=32 these puts were ≈ 9 % of the gateway's CPU, bench/profile.ts).
   */
  private applyRecords(records: readonly RecordEntry[], accounts: AccountCache): void {
    const days = new Map<string, [[string, string, string], DailyRow]>();
    for (const [key, usage, charge, , settles, response] of records) {
      // The provider made the response for this account whatever the ledger's state of the call.
      if (response !== null) this.responses.put([key.account, response.id], responseToRow(response, usage.at));
      if (!this.endCall(key.id, usage.callId, accounts) && settles) {
        log('warn', 'call_already_settled', { requestId: usage.callId, keyPrefix: key.prefix });
        continue;
      }
      this.usage.put([key.id, usage.at, usage.callId], usageToRow(usage));
      const acct = accounts.get(key.account);
      if (acct !== undefined) {
        if (acct[0] === 0) acct[1] -= charge.nano;
        else acct[3] += charge.tokens;
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
    for (const [dayKey, add] of days.values()) this.addDaily(dayKey, add);
  }

  private addDaily(dayKey: [string, string, string], add: DailyRow): void {
    const row = this.daily.get(dayKey);
    this.daily.put(dayKey, row === undefined ? add : [row[0] + add[0], row[1] + add[1], row[2] + add[2]]);
  }

  // ── calls whose process died ────────────────────────────────────────────

  /**
   * Makes this process the owner of the calls it forwards: registers it with a heartbeat
   * (every HEARTBEAT_MS, in the group commit), settles at once every call left in flight by a
   * process that is gone (a previous run killed with -9, a cluster worker that died), and
   * keeps looking every SWEEP_MS. A process is gone when its heartbeat is older than
   * OWNER_STALE_MS, or, at once, when it is proven gone (same boot, same PID namespace, and its
   * pid gone or reused: store/instance.ts).
   */
  serveCalls(): Promise<void> {
    if (this.owner !== null) return Promise.resolve();
    this.owner = newInstanceId();
    this.proof = proofText(ownProof());
    this.root.transactionSync(() => this.processes.put(this.owner!, processToRow(Date.now(), this.proof)));
    this.settleOrphans(Date.now());
    const beat = setInterval(() => {
      this.heartbeatDue = true;
      this.schedule();
    }, HEARTBEAT_MS);
    const sweep = setInterval(() => {
      try {
        this.settleOrphans(Date.now());
      } catch (err) {
        log('error', 'orphan_sweep_failed', { error: String(err) });
      }
    }, SWEEP_MS);
    beat.unref();
    sweep.unref();
    this.ownerTimers = [beat, sweep];
    return Promise.resolve();
  }

  /** Stops the heartbeat and removes this process's registration (its calls are all settled by then, or become orphans). */
  private stopServingCalls(): void {
    for (const timer of this.ownerTimers) clearInterval(timer);
    this.ownerTimers = [];
    if (this.owner === null) return;
    const owner = this.owner;
    this.owner = null;
    this.root.transactionSync(() => this.processes.remove(owner));
  }

  /**
   * Settles, exactly once, every call whose owner is gone: an interrupted call is recorded as
   * `error: "interrupted"`, `estimated: true`, and charged its input estimate (the provider
   * received the request and bills its input; what it produced never reached anyone whole),
   * and its hold is released; a call that only held a concurrency slot just frees it. Each
   * entry is re-read inside the transaction, so two processes sweeping at once settle it once.
   * Returns how many calls were settled.
   */
  settleOrphans(now: number): number {
    const live = new Set<string>();
    const dead = new Set<string>();
    for (const { key: owner, value } of this.processes.getRange()) {
      if (owner === this.owner || !ownerIsGone(value, now)) live.add(owner);
      else dead.add(owner);
    }
    const orphans: Array<[string, string]> = [];
    for (const { key, value } of this.calls.getRange()) {
      if (!live.has(value[1])) orphans.push(key);
    }
    if (orphans.length === 0 && dead.size === 0) return 0;
    let settled = 0;
    this.root.transactionSync(() => {
      const accounts = new AccountCache(this.accounts);
      for (const [keyId, callId] of orphans) {
        const call = this.calls.get([keyId, callId]);
        if (call === undefined || live.has(call[1])) continue;
        this.endCall(keyId, callId, accounts);
        settled++;
        if (call[9] === 0) continue;
        const acct = accounts.get(call[0]);
        const credit = acct === undefined || acct[0] === 0;
        if (acct !== undefined) {
          if (credit) acct[1] -= call[4];
          else acct[3] += call[4];
        }
        const record: UsageRecord = {
          at: call[2], callId, requestId: callId, endpoint: call[6] as UsageRecord['endpoint'], model: call[7], stream: call[8] === 1,
          status: INTERRUPTED_STATUS, inputTokens: call[5], outputTokens: 0, cachedInputTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0,
          costNano: credit ? call[4] : null, tokensCharged: credit ? 0 : call[4], error: 'interrupted', estimated: true, clientGone: false,
          ...PLAIN_USAGE_DETAIL, estimateReason: 'interrupted',
        };
        this.usage.put([keyId, record.at, callId], usageToRow(record));
        this.addDaily([keyId, this.dayOf(record.at), record.model], [1, credit ? call[4] : 0, record.tokensCharged]);
      }
      accounts.writeBack();
      for (const owner of dead) this.processes.remove(owner);
    });
    if (settled > 0) log('warn', 'orphaned_calls_settled', { calls: settled, owners: [...dead].length });
    return settled;
  }

  /** The calls in flight and their holds, for the usage views. */
  callsInFlight(keyId: string): number {
    return this.calls.getKeysCount({ start: [keyId, ''], end: [keyId, '\uffff'] });
  }

  // ── models ──────────────────────────────────────────────────────────────

  modelSwitch(id: string): Promise<boolean | undefined> {
    return Promise.resolve(this.modelSwitches.get(id));
  }

  setModelSwitch(id: string, enabled: boolean): Promise<boolean> {
    return this.writeNow(() => {
      void this.modelSwitches.put(id, enabled);
      return true;
    });
  }

  // ── usage ───────────────────────────────────────────────────────────────

  /** A key's usage records, newest first; `before` is an exclusive [at, requestId] cursor. */
  usageOf(key: KeyRecord, limit: number, before?: [number, string]): Promise<UsageRecord[]> {
    const keyId = key.id;
    const start: [string, number, string] = before ? [keyId, before[0], before[1]] : [keyId, Number.MAX_SAFE_INTEGER, ''];
    const list: UsageRecord[] = [];
    for (const { key, value } of this.usage.getRange({ start, end: [keyId, -1, ''], reverse: true, limit: limit + 1 })) {
      if (before && key[1] === before[0] && key[2] === before[1]) continue;
      list.push(rowToUsage(value));
      if (list.length === limit) break;
    }
    return Promise.resolve(list);
  }

  /** Daily totals of a key from `fromDay` to `toDay` inclusive ('YYYY-MM-DD'), with the split by model. */
  dailyOf(key: KeyRecord, fromDay: string, toDay: string): Promise<Map<string, DailyTotals>> {
    const keyId = key.id;
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
    return Promise.resolve(days);
  }

  // ── operating it: audit trail, retention, readiness (kept apart from the rest) ──
  //
  // The audit trail is its own sub-database, opened on first use: [at, entry id] → AuditRow.
  // An issuer change made through `audited()` writes its entry inside the same transaction as
  // the change itself, so a change is never without its entry, nor an entry without its change.

  private auditDb: Database<AuditRow, [number, string]> | null = null;
  private readonly pendingAudit = new PendingAudit();
  private auditSeq = 0;

  private get audit(): Database<AuditRow, [number, string]> {
    return (this.auditDb ??= this.root.openDB({ name: 'audit' }));
  }

  /** Runs an issuer change (one of the methods above) and records `entry(result)` with it. */
  audited<T>(entry: (result: T) => AuditEntry | undefined, change: () => Promise<T>): Promise<T> {
    return this.pendingAudit.around(entry, change);
  }

  /** Inside writeNow's transaction: the pending audit entry for this change's result. */
  private auditedResult<T>(result: T): T {
    const e = this.pendingAudit.take()?.(result);
    if (e !== undefined) {
      this.audit.put([e.at, `${process.pid.toString(36)}.${(this.auditSeq++).toString(36)}`], [e.at, e.action, e.keyId, e.actor, e.address, JSON.stringify(e.detail)]);
    }
    return result;
  }

  /** Audit entries, oldest first; only those of `keyId` when given. */
  auditTrail(keyId?: string, limit = 10_000): Promise<AuditEntry[]> {
    const list: AuditEntry[] = [];
    for (const { value: r } of this.audit.getRange()) {
      if (keyId !== undefined && r[2] !== keyId) continue;
      list.push({ at: r[0], action: r[1], keyId: r[2], actor: r[3], address: r[4], detail: JSON.parse(r[5]) as Record<string, unknown> });
      if (list.length === limit) break;
    }
    return Promise.resolve(list);
  }

  /** A key's usage records with `from <= at < to`, oldest first, at most `limit`. */
  usageBetween(key: KeyRecord, from: number, to: number, limit: number): Promise<UsageRecord[]> {
    const keyId = key.id;
    const list: UsageRecord[] = [];
    for (const { value } of this.usage.getRange({ start: [keyId, from, ''], end: [keyId, to, ''], limit })) list.push(rowToUsage(value));
    return Promise.resolve(list);
  }

  /**
   * Retention: deletes up to `limit` usage records older than `before` (epoch ms), visiting
   * keys in id order from `fromKeyId`; returns how many went and the key id to go on from
   * (null once every key was visited). Daily totals are kept. One small synchronous
   * transaction per call, so a sweep interleaves with the request path's group commits
   * (cost per batch: bench/retention.ts).
   */
  deleteUsageBefore(before: number, limit: number, fromKeyId: string): Promise<{ deleted: number; next: string | null }> {
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
    return Promise.resolve({ deleted: doomed.length, next });
  }

  /**
   * Retention of owner records (storage.responseRetentionDays): visits up to `limit` of them in
   * key order from `from`, and deletes those made before `before` in one small synchronous
   * transaction, as deleteUsageBefore does. Owner records have no index by time: a sweep reads
   * them all, a row of about a microsecond each (cost: bench/response-owners.ts).
   */
  deleteResponsesBefore(before: number, limit: number, from: ResponseCursor | null): Promise<{ deleted: number; next: ResponseCursor | null }> {
    const doomed: [string, string][] = [];
    let next: ResponseCursor | null = null;
    let visited = 0;
    for (const { key, value } of this.responses.getRange(from === null ? {} : { start: [from[0], from[1]] })) {
      if (visited++ === limit) {
        next = key;
        break;
      }
      if (value[2] < before) doomed.push(key);
    }
    if (doomed.length > 0) {
      this.root.transactionSync(() => {
        for (const key of doomed) this.responses.removeSync(key);
      });
    }
    return Promise.resolve({ deleted: doomed.length, next });
  }

  /**
   * Everything the store holds, for `tollgate store migrate` (./migrate.ts): read in one read
   * transaction's view, so the copy is of one moment (the server should be stopped anyway).
   */
  dump(): StoreDump {
    const keys: KeyRecord[] = [];
    for (const { value } of this.keys.getRange()) keys.push(rowToKey(value));
    const accounts: Array<[string, Account]> = [];
    for (const { key, value } of this.accounts.getRange()) accounts.push([key, rowToAccount(value)]);
    const calls: StoreDump['calls'] = [];
    for (const { key, value: c } of this.calls.getRange()) {
      calls.push({ keyId: key[0], callId: key[1], account: c[0], owner: c[1], at: c[2], held: c[3], interruptedCharge: c[4], interruptedInputTokens: c[5], endpoint: c[6], model: c[7], stream: c[8] === 1, phase: c[9] });
    }
    const usage: Array<[string, UsageRecord]> = [];
    for (const { key, value } of this.usage.getRange()) usage.push([key[0], rowToUsage(value)]);
    const daily: StoreDump['daily'] = [];
    for (const { key, value } of this.daily.getRange()) daily.push({ keyId: key[0], day: key[1], model: key[2], requests: value[0], costNano: value[1], tokens: value[2] });
    const switches: Array<[string, boolean]> = [];
    for (const { key, value } of this.modelSwitches.getRange()) switches.push([key, value]);
    const audit: AuditEntry[] = [];
    for (const { value: r } of this.audit.getRange()) audit.push({ at: r[0], action: r[1], keyId: r[2], actor: r[3], address: r[4], detail: JSON.parse(r[5]) as Record<string, unknown> });
    const responses: StoreDump['responses'] = [];
    for (const { key, value } of this.responses.getRange()) responses.push({ account: key[0], id: key[1], ...rowToResponse(value) });
    return { keys, accounts, calls, usage, daily, switches, audit, responses };
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

/** The status recorded for a call settled after its process died (the client saw its connection drop). */
const INTERRUPTED_STATUS = 500;

/** Tells one listener of a group commit; one that throws must not keep the others from being told. */
function tell<A, B>(listener: (a: A, b: B) => void, a: A, b: B): void {
  try {
    listener(a, b);
  } catch (err) {
    log('error', 'commit_listener_failed', { error: String(err) });
  }
}

function tellCommitted(listener: CommitListener, error: unknown): void {
  tell((e: unknown) => listener.committed(e), error, undefined);
}

/** A settlement queued for the group commit: key, record, charge, listener, settles, response made. */
type RecordEntry = [KeyRecord, UsageRecord, Charge, CommitListener, boolean, MadeResponse | null];
/** A release queued for the group commit: key, call id. */
type ReleaseEntry = [KeyRecord, string];

/** Whether a registered serving process is gone: its heartbeat is stale, or it is proven gone on this machine. */
function ownerIsGone(row: ProcessRow, now: number): boolean {
  const { beat, proof } = rowToProcess(row);
  return now - beat > OWNER_STALE_MS || provenGone(proofFrom(proof));
}

/**
 * The accounts touched by one transaction: each read once and written back once, however many
 * holds, releases and charges of the group fall on it.
 */
class AccountCache {
  private readonly rows = new Map<string, AccountRow | undefined>();
  constructor(private readonly db: Database<AccountRow, string>) {}

  get(id: string): AccountRow | undefined {
    if (this.rows.has(id)) return this.rows.get(id);
    const row = this.db.get(id);
    this.rows.set(id, row);
    return row;
  }

  writeBack(): void {
    for (const [id, row] of this.rows) if (row !== undefined) this.db.put(id, row);
  }
}

/** Everything a store holds, as `tollgate store migrate` copies it. */
export interface StoreDump {
  keys: KeyRecord[];
  accounts: Array<[string, Account]>;
  calls: Array<{ keyId: string; callId: string; account: string; owner: string; at: number; held: number; interruptedCharge: number; interruptedInputTokens: number; endpoint: string; model: string; stream: boolean; phase: 0 | 1 }>;
  usage: Array<[string, UsageRecord]>;
  daily: Array<{ keyId: string; day: string; model: string; requests: number; costNano: number; tokens: number }>;
  switches: Array<[string, boolean]>;
  /** Oldest first. */
  audit: AuditEntry[];
  /** The owner records of stored responses. */
  responses: Array<ResponseOwner & { account: string; id: string }>;
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
