import type { Account, AuditEntry, Charge, DailyTotals, Hold, HoldEitherWay, KeyMode, KeyRecord, MadeResponse, NewKey, Refusal, ResponseCursor, ResponseOwner, UsageRecord } from './types.js';

/**
 * The store, split by who uses it. The pipeline (server.ts, forward/, usage/, issuer/, admin/,
 * cli/) sees only these interfaces and never which backend runs: LMDB in the data directory
 * (store/lmdb/, the default) or Redis/Valkey shared by any number of hosts (store/redis/). Only
 * the wiring and the command line open one (store/store.ts).
 *
 * The request path (Admission, Ledger) is callback-shaped, not promise-shaped: LMDB answers
 * most admissions synchronously and decides the rest in one group commit per event-loop turn,
 * and a callback lets it keep doing exactly that (no extra microtask per request); Redis answers
 * from one pipelined script call per check. The issuer's and the usage views' methods return
 * promises: they are not on the hot path.
 */

/**
 * Told the outcome of steps 3–7: the key (undefined when unknown) and null when admitted,
 * else the refusal, with the seconds a 429 carries in `retry-after`. After `admitHolding`, an
 * admitted call that continues stored responses is told where the last of them lives
 * (`continued`, as by HoldListener).
 */
export type AdmissionListener = (key: KeyRecord | undefined, refusal: Refusal | null, retryAfter: number, continued?: ResponseOwner | null) => void;

/**
 * Told whether a hold was placed (null) or why not; when placed for a call that continues
 * stored responses (Hold.previousResponses), the owner record of the last one it names (the one
 * a provider reads), so that the call goes to the credential that made it without a read of its
 * own; null otherwise.
 */
export type HoldListener = (refusal: Refusal | null, continued: ResponseOwner | null) => void;

/** Told when a queued record is committed (and durable as the backend's settings make it). */
export interface CommitListener { committed(error: unknown): void }

/** Steps 3–7 of the order of checks, and what /readyz asks. */
export interface Admission {
  /**
   * Steps 3–7 for the key whose secret hashes to `hash`, called on `surface`: known, usable
   * (status, expiry), right surface, funds net of holds, then the rate window and the
   * concurrency slot. An admitted call with a concurrency limit holds its slot until `release`
   * or its settlement. `done` is called exactly once, possibly before `admit` returns.
   */
  admit(hash: string, surface: KeyMode, callId: string, done: AdmissionListener): void;
  /**
   * `admit`, then, in the same atomic step and only for an admitted key, what `Ledger.hold` does
   * for `model`, with step 9 (the key's allowlist, `model_not_allowed`) checked between the two
   * as the order of checks puts it: for an inference call whose body was at hand before its
   * admission and whose model the catalogue serves. `done` is told as by `admit`; its refusal
   * may then also be step 9's, step 10's run-time switch, or the hold's. Admitted (null): the
   * hold is placed, as after `hold`. Redis decides it all in one script (one round trip instead
   * of two); LMDB composes `admit` and `hold`, which cost no round trip.
   */
  admitHolding(hash: string, surface: KeyMode, callId: string, hold: HoldEitherWay, done: AdmissionListener): void;
  /** Step 3 alone, for the usage API (suspended and expired keys read their usage). */
  lookup(hash: string, done: (key: KeyRecord | undefined, failure: unknown) => void): void;
  /** Step 10's run-time switch alone (the hold checks it itself): enabled, or null when the store failed. */
  modelEnabled(id: string, byDefault: boolean, done: (enabled: boolean | null) => void): void;
  /**
   * The owner record of response `id` of `account` (GET|DELETE /responses/{id}): undefined when
   * that account made no such response (or its record expired); `failure` set when the store failed.
   */
  responseOwner(account: string, id: string, done: (owner: ResponseOwner | undefined, failure: unknown) => void): void;
  /**
   * Every run-time switch set (`tollgate models enable|disable`), by model id, in one read (one
   * round trip on Redis, whatever the catalogue's size): for GET /models. Null when the store failed.
   */
  readModelSwitches(done: (switches: ReadonlyMap<string, boolean> | null) => void): void;
  /** For /readyz: the store answered recently. */
  answers(): boolean;
}

/** Holds, releases and settlements: the ledger of a call from its admission to its record. */
export interface Ledger {
  /**
   * Before forwarding: step 10's run-time model switch (`model_not_available`), then the
   * responses the call continues (`previous_response_not_found` unless the key's account made
   * every one, Hold.previousResponses), then the funds
   * net of every hold already placed (step 6 again, atomically), then the hold of the call's
   * worst case and its entry in flight, written before it is forwarded so that a process dying
   * with it leaves a trace. A refused hold frees what step 7 took.
   */
  hold(key: KeyRecord, callId: string, hold: Hold, done: HoldListener): void;
  /**
   * Ends a call that was admitted but never forwarded, or that is neither billed nor listed:
   * frees its concurrency slot and releases its hold, without a charge or a record. Idempotent.
   */
  release(key: KeyRecord, callId: string): void;
  /**
   * Settles a forwarded call in one atomic step: releases its hold, charges the account, stores
   * the usage record and the day's totals. Idempotent by the call id: a call already settled
   * (by another process, because this one was taken for dead) is not charged again.
   * `settles: false` is for a record that is not a forwarded call's settlement (a call that
   * failed inside the gateway): stored whether or not the call has an entry in flight.
   * `response`: the response the call made, whose owner record (the key's account, kept
   * `storage.responseRetentionDays`) is written in the same step, whatever the ledger's state.
   */
  record(key: KeyRecord, usage: UsageRecord, charge: Charge, listener: CommitListener, settles?: boolean, response?: MadeResponse | null): void;
  /**
   * Makes this process the owner of the calls it forwards (heartbeat), and settles the calls of
   * owners that are gone, now and periodically. Resolves once the first settlement is done (a
   * server starts listening after it); calling it again returns the same promise.
   */
  serveCalls(): Promise<void>;
}

/** What `tollgate keys|models|audit` and the admin API change and read. */
export interface IssuerStore {
  keyByHash(hash: string): Promise<KeyRecord | undefined>;
  keyById(id: string): Promise<KeyRecord | undefined>;
  allKeys(): Promise<KeyRecord[]>;
  account(id: string): Promise<Account | undefined>;
  /** Creates a key with a fresh account holding `amount`. */
  createKey(fields: NewKey, now?: number): Promise<KeyRecord>;
  /** A new key with its own id and the same settings, drawing on the same account. */
  rotateKey(oldId: string, hash: string, prefix: string, now?: number): Promise<KeyRecord | undefined>;
  /**
   * Whether a key whose secret hashes to `hash` may draw on `account`: always, on LMDB; on Redis
   * only when both fall in the same Cluster slot, so that every check of a call is one script
   * on one shard (rotate draws secrets until one fits).
   */
  fitsAccount(account: string, hash: string): boolean;
  /** Applies `change` to a key atomically; resolves to the new record (undefined if no such key). */
  updateKey(id: string, change: (key: KeyRecord) => KeyRecord): Promise<KeyRecord | undefined>;
  /**
   * Adds nUSD (credit) or tokens (token) to an account, checked against the stored amount in the
   * same transaction (or script): a sum that would pass MAX_ACCOUNT_AMOUNT is not made, and
   * neither is its audit entry (`added: false`, the account as it is). Undefined without such
   * an account.
   */
  topUp(accountId: string, amount: number): Promise<{ added: boolean; account: Account } | undefined>;
  modelSwitch(id: string): Promise<boolean | undefined>;
  setModelSwitch(id: string, enabled: boolean): Promise<boolean>;
  /** Runs one issuer change (a method above) and records `entry(result)` atomically with it. */
  audited<T>(entry: (result: T) => AuditEntry | undefined, change: () => Promise<T>): Promise<T>;
  /** Audit entries, oldest first; only those of `keyId` when given. */
  auditTrail(keyId?: string, limit?: number): Promise<AuditEntry[]>;
  /** Makes the changes made so far durable (the admin API answers after it). */
  flushToDisk(): Promise<void>;
}

/** What the usage API, the admin API's usage views and the retention sweep read. */
export interface UsageStore {
  account(id: string): Promise<Account | undefined>;
  allKeys(): Promise<KeyRecord[]>;
  /** A key's usage records, newest first; `before` is an exclusive [at, callId] cursor. */
  usageOf(key: KeyRecord, limit: number, before?: [number, string]): Promise<UsageRecord[]>;
  /** Daily totals of a key from `fromDay` to `toDay` inclusive ('YYYY-MM-DD'), with the split by model. */
  dailyOf(key: KeyRecord, fromDay: string, toDay: string): Promise<Map<string, DailyTotals>>;
  /** A key's usage records with `from <= at < to`, oldest first, at most `limit`. */
  usageBetween(key: KeyRecord, from: number, to: number, limit: number): Promise<UsageRecord[]>;
  /**
   * Retention: deletes up to `limit` usage records older than `before` (epoch ms), visiting
   * keys in id order from `fromKeyId`; returns how many went and the key id to go on from
   * (null once every key was visited). Daily totals are kept.
   */
  deleteUsageBefore(before: number, limit: number, fromKeyId: string): Promise<{ deleted: number; next: string | null }>;
  /**
   * Retention of owner records: visits up to `limit` of them from the cursor `from` (null: the
   * first), deletes those made before `before` (epoch ms); returns how many went and where to go
   * on (null once all were visited). A backend whose owner records expire by themselves (Redis:
   * a TTL) leaves it out.
   */
  deleteResponsesBefore?(before: number, limit: number, from: ResponseCursor | null): Promise<{ deleted: number; next: ResponseCursor | null }>;
}

/** Every part of a store, and its lifecycle. */
export interface GatewayStore extends Admission, Ledger, IssuerStore, UsageStore {
  /** `lmdb` or `redis`: for logs and error messages only, never for a rule. */
  readonly backend: 'lmdb' | 'redis';
  close(): Promise<void>;
}
