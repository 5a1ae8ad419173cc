import { interruptedRecord } from '../../domain/rules.js';
import { log } from '../../log.js';
import { newInstanceId, ownProof, proofFrom, proofText, provenGone } from '../instance.js';
import { callOwner, chargeRow, isCreditRow, processToRow, rowToCall, rowToProcess, usageToRow, type ProcessRow } from '../rows.js';
import { LmdbLedger } from './ledger.js';

/** A serving process writes its heartbeat this often … */
const HEARTBEAT_MS = 1_000;
/** … and another host's process is taken for dead when its heartbeat is older than this. */
export const OWNER_STALE_MS = 10_000;
/** How often a serving process looks for calls whose process died. */
export const SWEEP_MS = 2_000;


/** Which process owns each call in flight, and the settlement of the calls of processes that are gone. */
export class LmdbLiveness extends LmdbLedger {
  protected ownerTimers: NodeJS.Timeout[] = [];

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

  /** How many processes serve this store now: registered, and not gone (`tollgate store migrate` copies none that is served). */
  servingProcesses(now = Date.now()): number {
    let serving = 0;
    for (const { value } of this.processes.getRange()) if (!ownerIsGone(value, now)) serving++;
    return serving;
  }

  /** Stops the heartbeat and removes this process's registration (its calls are all settled by then, or become orphans). */
  protected stopServingCalls(): void {
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
    // The usual case, one serving process whose entries in flight are all its own, is told by a
    // count LMDB makes without decoding an entry: reading every entry held the event loop every
    // SWEEP_MS, ≈ 1 ms with 1,000 calls in flight and 6 ms with 10,000; the count takes 0.02 and
    // 0.1 ms (bench/README.md). An entry of ours that another process ended (taking this one for
    // dead) keeps the counts apart only until our call ends.
    const alone = dead.size === 0 && live.size === 1 && this.owner !== null && live.has(this.owner);
    if (alone && this.calls.getKeysCount() === this.written.size) return 0;
    const orphans: Array<[string, string]> = [];
    for (const { key, value } of this.calls.getRange()) {
      if (!live.has(callOwner(value))) orphans.push(key);
    }
    if (orphans.length === 0 && dead.size === 0) return 0;
    let settled = 0;
    this.committedRows.transact((accounts) => {
      for (const [keyId, callId] of orphans) {
        const row = this.calls.get([keyId, callId]);
        if (row === undefined || live.has(callOwner(row))) continue;
        this.endCall(keyId, callId, accounts);
        settled++;
        const call = rowToCall(row);
        if (call.phase === 0) continue;
        const acct = accounts.get(call.account);
        const credit = acct === undefined || isCreditRow(acct);
        if (acct !== undefined) chargeRow(acct, call.interruptedCharge, call.interruptedCharge);
        const record = interruptedRecord({ callId, at: call.at, endpoint: call.endpoint, model: call.model, stream: call.stream, inputTokens: call.interruptedInputTokens, charge: call.interruptedCharge }, credit);
        this.usage.put([keyId, record.at, callId], usageToRow(record));
        this.addDaily([keyId, this.dayOf(record.at), record.model], [1, credit ? call.interruptedCharge : 0, record.tokensCharged]);
      }
      for (const owner of dead) this.processes.remove(owner);
    });
    if (settled > 0) log('warn', 'orphaned_calls_settled', { calls: settled, owners: [...dead].length });
    return settled;
  }
}

/** Whether a registered serving process is gone: its heartbeat is stale, or it is proven gone on this machine. */
function ownerIsGone(row: ProcessRow, now: number): boolean {
  const { beat, proof } = rowToProcess(row);
  return now - beat > OWNER_STALE_MS || provenGone(proofFrom(proof));
}
