import type { CommitListener, HoldListener } from '../../domain/interfaces.js';
import { fundsRefusal, modelAllowed, modelSwitchedOn, retryAfterSeconds, windowOver } from '../../domain/rules.js';
import type { Charge, Hold, KeyRecord, MadeResponse, Refusal, ResponseOwner, UsageRecord } from '../../domain/types.js';
import { log } from '../../log.js';
import { tell, tellCommitted } from '../common.js';
import { RetryQueue, type RetryOutcome } from '../retry.js';
import { addDailyRows, addHeld, callAccount, callHeld, chargeRow, countInDaily, countInWindow, heldToRow, processToRow, responseToRow, rowToAccount, rowToResponse, slotToRow, usageToRow, windowCount, windowStart, type DailyRow, type RateRow, type ResponseRow } from '../rows.js';
import type { AccountCache } from './account-cache.js';
import { CommittedRows } from './committed-rows.js';
import { LmdbUsage } from './usage.js';

/** Told the outcome of step 7 (rate window, concurrency slot): null admitted, else the refusal. */
export type AdmitListener = (refusal: Refusal | null, retryAfter: number) => void;

/**
 * A queued step 7: the key, the call, when, who is told; and for admitHolding the hold to place
 * in the same commit once admitted, with its listener (else null, null).
 */
type AdmitEntry = [KeyRecord, string, number, AdmitListener, Hold | null, HoldListener | null];

/** A queued hold: the key, the call, the hold, who is told, the owner record of the response it continues. */
type HoldEntry = [KeyRecord, string, Hold, HoldListener, ResponseOwner | null];

/** Resolved once: a lone call's group commit runs as its reaction (schedule). */
const SETTLED = Promise.resolve();

/** The decision of a step 7 whose call's hold went into the same commit: its hold tells the outcome. */
const HANDED_TO_HOLD: [null, number] = [null, -1];

/**
 * Holds, releases and settlements (Ledger), and the queued step 7 of admissions: every check,
 * hold and record of one event-loop turn in one synchronous transaction, the group commit (a call
 * alone is committed as soon as its callback returns: schedule).
 */
export class LmdbLedger extends LmdbUsage {
  // What this turn's group commit will decide (flush).
  protected admits: AdmitEntry[] = [];
  protected holds: HoldEntry[] = [];
  protected releases: ReleaseEntry[] = [];
  protected records: RecordEntry[] = [];

  /** Settlements and releases of a failed commit, tried again in order (store/retry.ts). */
  protected readonly retries = new RetryQueue<RecordEntry | ReleaseEntry>((items) => Promise.resolve(this.commitRetries(items)));

  protected flushScheduled = false;
  /** The ledger's transactions, and the rows every call's read as the last one left them. */
  protected readonly committedRows = new CommittedRows(this.root, this.accounts, this.modelSwitches);

  /**
   * The calls whose entries in flight this process wrote and has not ended: call id → [account,
   * amount held]. Ending one removes its entry without reading it back: the removal itself
   * tells whether the entry was still there (not when another process settled the call, taking
   * this one for dead). A call not here (its entry's commit failed) is read as before.
   */
  protected readonly written = new Map<string, [string, number]>();

  /** This process's id as the owner of its calls in flight, once it serves (see serveCalls). */
  protected owner: string | null = null;

  protected heartbeatDue = false;

  /** What proves this process gone to others on this machine (store/instance.ts), as its row holds it. */
  protected proof = '';

  /** The current UTC day as 'YYYY-MM-DD' and the ms range it covers: formatted once a day, not per record. */
  protected day = { from: 0, to: 0, text: '' };

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
  protected countLater(key: KeyRecord, callId: string, now: number, done: AdmitListener, hold: Hold | null = null, held: HoldListener | null = null): void {
    this.admits.push([key, callId, now, done, hold, held]);
    this.schedule(callId);
  }

  /**
   * Before forwarding: holds the call's worst case against its account. Re-checks the funds
   * net of every hold already placed (step 6 again, atomically): when nothing is left, the
   * hold is refused and `done` is told the 402 code; so of calls that passed step 6 together,
   * only those that find funds left go on. Also the call's entry in flight, written before it
   * is forwarded so that a process dying with it leaves a trace (see serveCalls).
   */
  hold(key: KeyRecord, callId: string, hold: Hold, done: HoldListener): void {
    const checked = this.beforeHold(key, hold);
    if (typeof checked === 'string') {
      this.release(key, callId);
      return done(checked, null);
    }
    this.holds.push([key, callId, hold, done, checked]);
    this.schedule(callId);
  }

  /**
   * What a hold checks before the funds, read now as every other read of the request path:
   * step 10's run-time switch, then the responses the call continues (a foreign or unknown one is
   * refused, and nothing is held). The refusal, or the owner record of the last response
   * continued (null: none). `switched`: the model's switch, when read inside a transaction.
   */
  protected beforeHold(key: KeyRecord, hold: Hold, switched = this.modelSwitches.get(hold.model)): Refusal | ResponseOwner | null {
    if (!modelSwitchedOn(switched, hold.enabledByDefault)) return 'model_not_available';
    if (hold.previousResponses === null) return null;
    return this.madeAll(key.account, hold.previousResponses) ?? 'previous_response_not_found';
  }

  /**
   * Ends a call that was admitted but never forwarded (refused after step 7, or its client
   * left before it went out) or that is neither billed nor listed (GET /models): frees its
   * concurrency slot and releases its hold, without a charge or a record. Idempotent.
   */
  release(key: KeyRecord, callId: string): void {
    this.releases.push([key, callId]);
    this.schedule(callId);
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
    this.schedule(usage.callId);
  }

  /**
   * The group commit runs at the end of the turn (setImmediate), after the turn's other I/O
   * callbacks, whose entries join it; but when the entry just queued is the only one and no other
   * call of this process has an entry in flight, nothing is coming to join it, and it runs as soon
   * as the current callback returns (a promise reaction: ≈ 5 µs sooner per commit at c=1, and
   * ≈ 450 bytes fewer per call than setImmediate; bench/README.md, History, "2026-11-28, second").
   */
  protected schedule(callId?: string): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    const queued = this.admits.length + this.holds.length + this.releases.length + this.records.length;
    if (callId !== undefined && queued === 1 && this.written.size === (this.written.has(callId) ? 1 : 0)) void SETTLED.then(this.flush);
    else setImmediate(this.flush);
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
  protected readonly flush = (): void => {
    // Already run (close() commits what is queued at once): nothing is left for this callback.
    if (!this.flushScheduled) return;
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
      this.committedRows.transact((accounts) => {
        this.applyRecords(records, accounts);
        for (const [key, callId] of releases) this.endCall(key.id, callId, accounts);
        this.countRequests(admits, admitted);
        this.holdOnAdmission(admits, admitted, holds, accounts);
        this.placeHolds(holds, accounts, held);
        if (this.heartbeatDue && this.owner !== null) {
          this.heartbeatDue = false;
          this.processes.put(this.owner, processToRow(Date.now(), this.proof));
          this.committedRows.wroteOther();
        }
      });
    } catch (err) {
      failure = err;
      log('error', 'store_commit_failed', { error: String(err) });
      // Entries of this group were never written; those it ended are read back when tried again.
      for (const a of admits) this.written.delete(a[1]);
      for (const h of holds) this.written.delete(h[1]);
      // The calls settled or released in it keep their holds; tried again in order (retry.ts).
      for (const r of records) this.retries.add(r, r[1].callId);
      for (const r of releases) this.retries.add(r, r[1], 'release');
    }
    // Fail closed: when the commit failed, nothing is admitted and nothing is forwarded.
    for (let i = 0; i < admits.length; i++) {
      // A call whose hold was queued with its admission is told by its hold, below.
      if (admitted[i] === HANDED_TO_HOLD) continue;
      const [refusal, retryAfter] = failure === null ? admitted[i]! : ['store_unavailable' as const, 0];
      tell(admits[i]![3], refusal, retryAfter);
    }
    for (let i = 0; i < holds.length; i++) tell(holds[i]![3], failure === null ? held[i]! : 'store_unavailable', failure === null && held[i] === null ? holds[i]![4] : null);
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
   * own (a group commit of new calls never waits on it): all of them, or none (it throws).
   */
  protected commitRetries(items: readonly (RecordEntry | ReleaseEntry)[]): RetryOutcome {
    this.committedRows.transact((accounts) => {
      for (const item of items) {
        if (item.length === 2) this.endCall(item[0].id, item[1], accounts);
        else this.applyRecords([item], accounts);
      }
    });
    return { committed: items.length, failure: null };
  }

  /** Tries now what failed commits left; resolves to how many are still kept. */
  retryFailed(): Promise<number> {
    return this.retries.retry();
  }

  /**
   * Decides the queued rate and concurrency checks in order. Each key's window is read and
   * written once per group, however many of its requests the group holds; a key's calls in
   * flight are counted from its entries (at most its limit, so the count is short).
   */
  protected countRequests(admits: AdmitEntry[], decisions: Array<[Refusal | null, number]>): void {
    // A group of settlements alone (every other group at c=1) makes no map for windows.
    if (admits.length === 0) return;
    const windows = new Map<string, RateRow>();
    for (const [key, callId, now] of admits) {
      let window: RateRow | undefined;
      if (key.rpm !== null) {
        window = windows.get(key.id) ?? this.committedRows.window(key.id) ?? this.rate.get(key.id);
        if (window === undefined || windowOver(windowStart(window), now)) window = [now, 0];
        windows.set(key.id, window);
        if (windowCount(window) >= key.rpm) {
          decisions.push(['rate_limit_exceeded', retryAfterSeconds(windowStart(window), now)]);
          continue;
        }
      }
      if (key.concurrency !== null) {
        if (this.calls.getKeysCount({ start: [key.id, ''], end: [key.id, '\uffff'] }) >= key.concurrency) {
          decisions.push(['concurrency_limit_exceeded', 1]);
          continue;
        }
        this.calls.put([key.id, callId], slotToRow(key.account, this.owner ?? '', now));
        this.written.set(callId, [key.account, 0]);
      }
      if (window !== undefined) countInWindow(window);
      decisions.push([null, 0]);
    }
    for (const [keyId, window] of windows) {
      this.rate.put(keyId, window);
      this.committedRows.wroteWindow(keyId, window);
    }
  }

  /**
   * For calls admitted by this group's step 7 whose hold came with their admission
   * (admitHolding): step 9 (the key's allowlist), step 10's run-time switch and the responses
   * continued, then the hold queued after this group's other holds — in the same commit as the
   * admission. A refusal frees what step 7 took; an admitted call is told by its hold.
   */
  protected holdOnAdmission(admits: AdmitEntry[], decisions: Array<[Refusal | null, number]>, holds: HoldEntry[], accounts: AccountCache): void {
    for (let i = 0; i < admits.length; i++) {
      const [key, callId, , , hold, held] = admits[i]!;
      if (hold === null || decisions[i]![0] !== null) continue;
      const checked = modelAllowed(key, hold.model) ? this.beforeHold(key, hold, this.committedRows.switchOf(hold.model)) : 'model_not_allowed';
      if (typeof checked === 'string') {
        this.endCall(key.id, callId, accounts);
        decisions[i] = [checked, 0];
        continue;
      }
      decisions[i] = HANDED_TO_HOLD;
      holds.push([key, callId, hold, held!, checked]);
    }
  }

  /** Places the queued holds in order, each re-checking the funds net of the holds before it. */
  protected placeHolds(holds: HoldEntry[], accounts: AccountCache, decisions: Array<Refusal | null>): void {
    for (const [key, callId, hold] of holds) {
      const acct = accounts.get(key.account);
      const short = acct === undefined ? null : fundsRefusal(rowToAccount(acct));
      if (short !== null) {
        // Nothing goes out: the slot the call took at step 7, if any, is freed.
        this.calls.remove([key.id, callId]);
        this.written.delete(callId);
        decisions.push(short);
        continue;
      }
      if (acct !== undefined) addHeld(acct, hold.amount);
      this.calls.put([key.id, callId], heldToRow(key.account, this.owner ?? '', hold));
      this.written.set(callId, [key.account, hold.amount]);
      decisions.push(null);
    }
  }

  /**
   * When `account` made every one of these responses (each a read of the state as of this turn),
   * the owner record of the last; else undefined.
   */
  protected madeAll(account: string, ids: readonly string[]): ResponseOwner | undefined {
    let row: ResponseRow | undefined;
    for (const id of ids) if ((row = this.responses.get([account, id])) === undefined) return undefined;
    return row === undefined ? undefined : rowToResponse(row);
  }

  /** Deletes a call's entry in flight and releases its hold; false when it was not there. */
  protected endCall(keyId: string, callId: string, accounts: AccountCache): boolean {
    let account: string;
    let held: number;
    const mine = this.written.get(callId);
    if (mine !== undefined) {
      this.written.delete(callId);
      if (!this.calls.removeSync([keyId, callId])) return false;
      [account, held] = mine;
    } else {
      const call = this.calls.get([keyId, callId]);
      if (call === undefined) return false;
      this.calls.remove([keyId, callId]);
      account = callAccount(call);
      held = callHeld(call);
    }
    if (held !== 0) {
      const acct = accounts.get(account);
      if (acct !== undefined) addHeld(acct, -held);
    }
    return true;
  }

  protected dayOf(at: number): string {
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
  protected applyRecords(records: readonly RecordEntry[], accounts: AccountCache): void {
    // A group of admissions alone (every other group at c=1) makes no map for day totals.
    if (records.length === 0) return;
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
      if (acct !== undefined) chargeRow(acct, charge.nano, charge.tokens);
      // Tokens are counted for both kinds of key (what was used); cost is what was charged.
      const day = this.dayOf(usage.at);
      const id = `${key.id}\n${day}\n${usage.model}`;
      const total = days.get(id);
      if (total === undefined) days.set(id, [[key.id, day, usage.model], [1, charge.nano, usage.tokensCharged]]);
      else countInDaily(total[1], charge.nano, usage.tokensCharged);
    }
    for (const [dayKey, add] of days.values()) this.addDaily(dayKey, add);
  }

  /** Adds to a day's totals (key id, day, model); inside `committedRows.transact` only. */
  protected addDaily(dayKey: [string, string, string], add: DailyRow): void {
    const id = dayKey.join('\n');
    const row = this.committedRows.day(id) ?? this.daily.get(dayKey);
    const total = row === undefined ? add : addDailyRows(row, add);
    this.daily.put(dayKey, total);
    this.committedRows.wroteDay(id, total);
  }
}

/** A settlement queued for the group commit: key, record, charge, listener, settles, response made. */
export type RecordEntry = [KeyRecord, UsageRecord, Charge, CommitListener, boolean, MadeResponse | null];
/** A release queued for the group commit: key, call id. */
export type ReleaseEntry = [KeyRecord, string];
