import type { GatewayErrorCode } from '../http/errors.js';
import type { Account, DailyTotals, KeyMode, KeyRecord, ResponseOwner, UsageRecord } from './types.js';

/**
 * The store, split by who uses it. The pipeline (server.ts, forward/, usage/, issuer/, admin/,
 * cli/) sees only these interfaces and never which backend runs: LMDB in the data directory
 * (./lmdb.ts, the default) or Redis/Valkey shared by any number of hosts (./redis.ts).
 *
 * The request path (Admission, Ledger) is callback-shaped, not promise-shaped: LMDB answers
 * most admissions synchronously and decides the rest in one group commit per event-loop turn,
 * and a callback lets it keep doing exactly that (no extra microtask per request); Redis answers
 * from one pipelined script call per check. The issuer's and the usage views' methods return
 * promises: they are not on the hot path.
 */

/** A key to create: its record's issuer-set fields, and its opening amount. */
export type NewKey = Pick<KeyRecord, 'hash' | 'prefix' | 'name' | 'mode' | 'models' | 'rpm' | 'expiresAt' | 'concurrency'> & {
  /** Opening balance (nUSD) for credit keys, budget (tokens) for token keys. */
  amount: number;
};

/** The charge a finished request makes on its key's account. */
export interface Charge { nano: number; tokens: number }

/**
 * What a call holds against its account before it is forwarded (see meter/hold.ts), and what
 * it is charged should its process die before the call is settled.
 */
export interface Hold {
  /** The call's worst-case cost, in the account's unit (nUSD for credit, tokens for token). */
  amount: number;
  /** The charge of an interrupted call, in the account's unit. */
  interruptedCharge: number;
  /** The input tokens that charge stands for (estimated from the request's size). */
  interruptedInputTokens: number;
  endpoint: string;
  model: string;
  /** The model's `enabled` in the config file: what step 10 obeys when no run-time switch is set. */
  enabledByDefault: boolean;
  stream: boolean;
  at: number;
  /**
   * The stored responses the call continues (Responses' `previous_response_id`: every value the
   * body names), each of which the key's account must have made, or the hold is refused with
   * `previous_response_not_found`; '' stands for a value that cannot be a response id (made by
   * nobody). Null when the call names none.
   */
  previousResponses: readonly string[] | null;
}

/**
 * A response the provider made for a call (the id its answer carries) and where it was made:
 * recorded as the account's with the call's settlement (`Ledger.record`).
 */
export interface MadeResponse {
  id: string;
  provider: string;
  credential: string;
}

/**
 * The hold of a call computed before its admission (its body came whole with its head), in both
 * units: which one applies is known only once the key is read.
 */
export interface HoldEitherWay {
  /** The hold should the key be a credit key (nUSD). */
  credit: Hold;
  /** The hold should the key be a token key (tokens); the same call, endpoint, model and time. */
  token: Hold;
}

/**
 * Told the outcome of steps 3–7: the key (undefined when unknown) and null when admitted,
 * else the refusal, with the seconds a 429 carries in `retry-after`. After `admitHolding`, an
 * admitted call that continues stored responses is told where the last of them lives
 * (`continued`, as by HoldListener).
 */
export type AdmissionListener = (key: KeyRecord | undefined, refusal: GatewayErrorCode | null, retryAfter: number, continued?: ResponseOwner | null) => void;

/**
 * Told whether a hold was placed (null) or why not; when placed for a call that continues
 * stored responses (Hold.previousResponses), the owner record of the last one it names (the one
 * a provider reads), so that the call goes to the credential that made it without a read of its
 * own; null otherwise.
 */
export type HoldListener = (refusal: GatewayErrorCode | null, continued: ResponseOwner | null) => void;

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
   * hold is placed, as after `hold`. A backend whose admission and hold cost no round trip of
   * their own (LMDB) leaves it out; the call then takes `admit` and `hold`.
   */
  admitHolding?(hash: string, surface: KeyMode, callId: string, hold: HoldEitherWay, done: AdmissionListener): void;
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

/**
 * The audit entry an issuer change is to write with itself, for both backends: `audited()` sets
 * how to make it from the change's result, and the store method making the change takes it, once,
 * and writes it in the same transaction or script as the change.
 */
export class PendingAudit {
  private make: ((result: unknown) => AuditEntry | undefined) | null = null;

  async around<T>(entry: (result: T) => AuditEntry | undefined, change: () => Promise<T>): Promise<T> {
    this.make = entry as (result: unknown) => AuditEntry | undefined;
    try {
      return await change();
    } finally {
      this.make = null;
    }
  }

  /**
   * How to make the pending entry from the change's result (null when none is pending), taken
   * once, synchronously, before the change's first await.
   */
  take(): ((result: unknown) => AuditEntry | undefined) | null {
    const make = this.make;
    this.make = null;
    return make;
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
  /** Adds nUSD (credit) or tokens (token) to an account. */
  topUp(accountId: string, amount: number): Promise<Account | undefined>;
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

/** Where a retention sweep of owner records goes on from: [account id, response id]. */
export type ResponseCursor = readonly [string, string];

/** Every part of a store, and its lifecycle. */
export interface GatewayStore extends Admission, Ledger, IssuerStore, UsageStore {
  /** `lmdb` or `redis`: for logs and error messages only, never for a rule. */
  readonly backend: 'lmdb' | 'redis';
  close(): Promise<void>;
}
