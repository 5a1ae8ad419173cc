import { interruptedRecord } from '../../domain/rules.js';
import { log } from '../../log.js';
import { newInstanceId, ownProof, proofFrom, proofText, provenGone } from '../instance.js';
import { usageToRow } from '../rows.js';
import { RedisLedger } from './ledger.js';
import { accountName, callsName, dayName, heartbeat, member, ownerCalls, OWNERS, usageIndex, usageRows, type CallEntry } from './names.js';

/** A serving process refreshes its heartbeat this often … */
const HEARTBEAT_MS = 1_000;
/** … which expires after this: its calls are then settled by the survivors. */
export const OWNER_TTL_MS = 10_000;
/** How often a serving process looks for calls of owners that are gone. */
const SWEEP_MS = 2_000;

/** Which process owns each call in flight, and the settlement of the calls of owners that are gone. */
export class RedisLiveness extends RedisLedger {
  protected serving: Promise<void> | null = null;

  serveCalls(): Promise<void> {
    if (this.serving !== null) return this.serving;
    const owner = newInstanceId();
    this.owner = owner;
    // The heartbeat's value: when it beat, then what proves this process gone (store/instance.ts).
    const proof = proofText(ownProof());
    const beat = (): void => {
      this.client.set(heartbeat(owner), `${Date.now()} ${proof}`, 'PX', OWNER_TTL_MS).catch(() => undefined);
    };
    beat();
    void this.client.sadd(OWNERS, owner).catch(() => undefined);
    const sweep = (): Promise<void> => this.settleOrphans().then(() => undefined, (err: unknown) => {
      log('error', 'orphan_sweep_failed', { error: String(err) });
    });
    const timers = [setInterval(beat, HEARTBEAT_MS), setInterval(() => void sweep(), SWEEP_MS)];
    for (const t of timers) t.unref();
    this.timers.push(...timers);
    this.serving = sweep();
    return this.serving;
  }

  /** Tries now what failed commands left; resolves to how many are still kept. */
  retryFailed(): Promise<number> {
    return this.retries.retry();
  }

  /**
   * Settles, exactly once, every call whose owner's heartbeat has expired (OWNER_TTL_MS):
   * recorded as `error: "interrupted"`, estimated, charged its input estimate, its hold
   * released; a call that only held a concurrency slot just frees it. The LMDB backend's rule.
   * Returns how many calls were settled.
   */
  async settleOrphans(): Promise<number> {
    const owners = await this.client.smembers(OWNERS);
    let settled = 0;
    let dead = 0;
    for (const owner of owners) {
      if (owner === this.owner || !(await this.ownerIsGone(owner))) continue;
      dead++;
      const members = await this.client.smembers(ownerCalls(owner));
      // Every call of the owner read at once, then every settlement sent in the same turn: one
      // pipeline, which Redis runs back to back, so readers see the owner's calls settled
      // together (as LMDB's one transaction shows them).
      const calls = members.map((m) => m.split(' ') as [string, string]);
      const entries = await Promise.all(calls.map(([hash, callId]) => this.client.hget(callsName(hash), callId)));
      const modes = await Promise.all(entries.map((raw) => (raw === null ? null : this.client.hget(accountName((JSON.parse(raw) as CallEntry).a), 'm'))));
      const results = await Promise.all(calls.map(([hash, callId], i) => this.settleOrphan(owner, hash, callId, entries[i]!, modes[i]!)));
      settled += results.filter(Boolean).length;
      if (!this.single && members.length > 0) await this.client.srem(ownerCalls(owner), ...members);
      if ((await this.client.scard(ownerCalls(owner))) === 0) await this.client.srem(OWNERS, owner);
    }
    if (settled > 0) log('warn', 'orphaned_calls_settled', { calls: settled, owners: dead });
    return settled;
  }

  /**
   * Gone: its heartbeat expired, or (the LMDB backend's rule, at once rather than after the
   * heartbeat's TTL) it is proven gone on this machine: same boot, same PID namespace, its pid
   * gone or reused (store/instance.ts). A heartbeat of an older build holds no proof.
   */
  protected async ownerIsGone(owner: string): Promise<boolean> {
    const beat = await this.client.get(heartbeat(owner));
    if (beat === null) return true;
    return provenGone(proofFrom(beat.slice(beat.indexOf(' ') + 1)));
  }

  /** One orphaned call, from its entry as read (`raw`) and its account's mode. */
  protected async settleOrphan(owner: string, hash: string, callId: string, raw: string | null, mode: string | null): Promise<boolean> {
    const ownerMember = `${hash} ${callId}`;
    const c = raw === null ? null : (JSON.parse(raw) as CallEntry);
    // Settled meanwhile, or (cannot happen, but an index entry left behind can) another owner's.
    if (c === null || c.o !== owner) {
      await this.client.srem(ownerCalls(owner), ownerMember);
      return false;
    }
    const credit = mode !== '1';
    const at = Number(c.at);
    const charge = Number(c.ic ?? '0');
    const record = interruptedRecord({ callId, at, endpoint: c.e ?? 'chat', model: c.m ?? '', stream: c.s === '1', inputTokens: Number(c.it ?? '0'), charge }, credit);
    const keys = [callsName(hash), accountName(c.a), usageIndex(hash), usageRows(hash), dayName(hash, at)];
    if (this.single) keys.push(ownerCalls(owner));
    const done = await this.s.tgOrphan(...keys, callId, raw!, member(at, callId), JSON.stringify(usageToRow(record)), String(charge),
      record.model, String(credit ? charge : 0), String(record.tokensCharged), ownerMember);
    return done === 1;
  }
}
