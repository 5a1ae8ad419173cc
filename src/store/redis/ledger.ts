import type { CommitListener, HoldListener } from '../../domain/interfaces.js';
import { modelSwitchedOn } from '../../domain/rules.js';
import type { Charge, Hold, KeyRecord, MadeResponse, Refusal, UsageRecord } from '../../domain/types.js';
import { log } from '../../log.js';
import { tellCommitted } from '../common.js';
import { RetryQueue, type RetryOutcome } from '../retry.js';
import { responseToRow, usageToRow } from '../rows.js';
import { safely } from './connection.js';
import { RedisMigration } from './migration.js';
import { accountName, callsName, ownerOf, switchOf, dayName, member, NO_OWNER, ownerCalls, SWITCHES, usageIndex, usageRows, type CallEntry } from './names.js';

/** Holds, releases and settlements: the ledger of a call from its hold to its record (Ledger). */
export class RedisLedger extends RedisMigration {
  /** Releases and settlements that failed or whose reply was lost, tried again in order (store/retry.ts; each is idempotent). */
  protected readonly retries = new RetryQueue<() => Promise<unknown>>(commitInOrder);

  hold(key: KeyRecord, callId: string, hold: Hold, done: HoldListener): void {
    const entry: CallEntry = {
      o: this.owner ?? '', p: 1, a: key.account, at: String(hold.at), h: String(hold.amount), ic: String(hold.interruptedCharge),
      it: String(hold.interruptedInputTokens), e: hold.endpoint, m: hold.model, s: hold.stream ? '1' : '0', k: key.id,
    };
    const ownerMember = `${key.hash} ${callId}`;
    const args = [callsName(key.hash), accountName(key.account)];
    if (this.single) args.push(SWITCHES, ownerCalls(this.owner ?? NO_OWNER));
    args.push(callId, JSON.stringify(entry), String(hold.amount), hold.model, hold.enabledByDefault ? '1' : '0', ownerMember);
    if (hold.previousResponses !== null) args.push(...hold.previousResponses);
    const placed = (err: Error | null, reply: unknown, switchedOn = true): void => {
      if (err !== null) {
        this.failed('hold', err);
        this.release(key, callId);
        return safely(() => done('store_unavailable', null));
      }
      if (!switchedOn) {
        this.release(key, callId);
        return safely(() => done('model_not_available', null));
      }
      const [code, owner] = reply as [string, string | null];
      safely(() => done(code === '' ? null : (code as Refusal), ownerOf(owner)));
    };
    if (this.single) return this.run(this.hot.hold, args, placed);
    // On a Cluster the switch and the owner index are in other slots: sent in the same turn,
    // so they travel in the same round trip.
    if (this.owner !== null) void this.client.sadd(ownerCalls(this.owner), ownerMember).catch(() => undefined);
    Promise.all([this.s.tgHold(...args), this.client.hget(SWITCHES, hold.model)]).then(
      ([reply, sw]) => placed(null, reply, modelSwitchedOn(switchOf(sw), hold.enabledByDefault)),
      (err: Error) => placed(err, null),
    );
  }

  release(key: KeyRecord, callId: string): void {
    this.releaseByHash(key.hash, callId);
  }

  protected releaseByHash(hash: string, callId: string): void {
    const ownerMember = `${hash} ${callId}`;
    const args = [callsName(hash)];
    if (this.single) args.push(ownerCalls(this.owner ?? NO_OWNER));
    args.push(callId, ownerMember);
    const attempt = (): Promise<unknown> => this.runPromised(this.hot.release, args).then(() => {
      if (!this.single && this.owner !== null) return this.client.srem(ownerCalls(this.owner), ownerMember);
      return undefined;
    });
    attempt().catch(() => this.retries.add(attempt, callId, 'release'));
  }

  record(key: KeyRecord, usage: UsageRecord, charge: Charge, listener: CommitListener, settles = true, response: MadeResponse | null = null): void {
    const ownerMember = `${key.hash} ${usage.callId}`;
    const args = [callsName(key.hash), accountName(key.account), usageIndex(key.hash), usageRows(key.hash), dayName(key.hash, usage.at)];
    if (this.single) args.push(ownerCalls(this.owner ?? NO_OWNER));
    args.push(usage.callId, member(usage.at, usage.callId), JSON.stringify(usageToRow(usage)), String(charge.nano), String(charge.tokens), usage.model,
      String(usage.tokensCharged), settles ? '1' : '0', ownerMember,
      response === null ? '' : response.id, response === null ? '' : JSON.stringify(responseToRow(response, usage.at)), this.responseTtl);
    const stored = (reply: unknown): void => {
      if (reply === 0 && settles) log('warn', 'call_already_settled', { requestId: usage.callId, keyPrefix: key.prefix });
      if (!this.single && this.owner !== null) void this.client.srem(ownerCalls(this.owner), ownerMember).catch(() => undefined);
    };
    this.run(this.hot.settle, args, (err, reply) => {
      if (err === null) {
        stored(reply);
        return tellCommitted(listener, null);
      }
      this.failed('settle', err);
      // Idempotent by call id: tried again until Redis has it, so what the provider billed is
      // charged once (or, should this process die first, settled as interrupted by a survivor).
      this.retries.add(() => this.runPromised(this.hot.settle, args).then(stored), usage.callId);
      tellCommitted(listener, err);
    });
  }

  /** On a Cluster: takes a call out of this process's owner index (sent beside the scripts). */
  protected unindex(ownerMember: string): void {
    if (this.owner !== null) void this.client.srem(ownerCalls(this.owner), ownerMember).catch(() => undefined);
  }
}

/** Runs the kept attempts one after another, stopping at the first that fails: how many succeeded, and why it stopped. */
async function commitInOrder(attempts: readonly (() => Promise<unknown>)[]): Promise<RetryOutcome> {
  let committed = 0;
  for (const attempt of attempts) {
    try {
      await attempt();
    } catch (failure) {
      return { committed, failure };
    }
    committed++;
  }
  return { committed, failure: null };
}
