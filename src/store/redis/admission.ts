import type { AdmissionListener } from '../../domain/interfaces.js';
import { modelSwitchedOn } from '../../domain/rules.js';
import type { HoldEitherWay, KeyMode, KeyRecord, Refusal, ResponseOwner } from '../../domain/types.js';
import { rowToResponse, type ResponseRow } from '../rows.js';
import { safely } from './connection.js';
import { RedisLiveness } from './liveness.js';
import { callsName, keyName, ownerOf, switchOf, NO_OWNER, ownerCalls, rateName, responseName, SWITCHES } from './names.js';

/** Steps 3–7 of the order of checks, with 9, 10 and the hold in the same script when it can, and what the request path reads beside them (Admission). */
export class RedisAdmission extends RedisLiveness {
  /** Key records by their JSON (keyOf). */
  protected readonly parsedKeys = new Map<string, KeyRecord>();

  admit(hash: string, surface: KeyMode, callId: string, done: AdmissionListener): void {
    if (this.lost) return safely(() => done(undefined, 'store_unavailable', 0));
    const ownerMember = `${hash} ${callId}`;
    const keys = [keyName(hash), rateName(hash), callsName(hash)];
    if (this.single) keys.push(ownerCalls(this.owner ?? NO_OWNER), SWITCHES);
    this.run(this.hot.admit, [...keys, surface, callId, this.owner ?? '', ownerMember], (err, reply) => {
      if (err !== null) return this.admitFailed(hash, callId, err, done);
      const [code, retryAfter, raw, owner] = reply as [string, number, string | null, string | null | undefined];
      const key = raw ? this.keyOf(raw) : undefined;
      // On a Cluster the owner's index is in another slot: a slot taken is indexed now.
      if (!this.single && this.owner !== null && code === '' && key?.concurrency != null) void this.client.sadd(ownerCalls(this.owner), ownerMember).catch(() => undefined);
      safely(() => done(key, code === '' ? null : (code as Refusal), retryAfter, ownerOf(owner)));
    });
  }

  admitHolding(hash: string, surface: KeyMode, callId: string, hold: HoldEitherWay, done: AdmissionListener): void {
    if (this.lost) return safely(() => done(undefined, 'store_unavailable', 0));
    const { credit, token } = hold;
    const owner = this.owner ?? '';
    const ownerMember = `${hash} ${callId}`;
    // The call's entry (CallEntry) but for what the key decides (account, key id, hold,
    // interrupted charge), which the script adds.
    const entry = `{"o":${JSON.stringify(owner)},"p":1,"at":"${credit.at}","it":"${credit.interruptedInputTokens}","e":${JSON.stringify(credit.endpoint)},"m":${JSON.stringify(credit.model)},"s":"${credit.stream ? '1' : '0'}"`;
    const args = [keyName(hash), rateName(hash), callsName(hash)];
    if (this.single) args.push(ownerCalls(this.owner ?? NO_OWNER), SWITCHES);
    args.push(surface, callId, owner, ownerMember, credit.model, credit.enabledByDefault ? '1' : '0', entry,
      String(credit.amount), String(credit.interruptedCharge), String(token.amount), String(token.interruptedCharge));
    if (credit.previousResponses !== null) args.push(...credit.previousResponses);
    const decided = (err: Error | null, reply: unknown, switchedOn = true): void => {
      if (err !== null) return this.admitFailed(hash, callId, err, done);
      const [code, retryAfter, raw, owner] = reply as [string, number, string | null, string | null | undefined];
      const key = raw ? this.keyOf(raw) : undefined;
      if (!this.single) {
        if (code !== '') this.unindex(ownerMember);
        // Step 10's switch comes before the responses the call continues.
        if (!switchedOn && (code === '' || code === 'previous_response_not_found')) {
          if (code === '') this.releaseByHash(hash, callId);
          return safely(() => done(key, 'model_not_available', 0));
        }
      }
      safely(() => done(key, code === '' ? null : (code as Refusal), retryAfter, ownerOf(owner)));
    };
    if (this.single) return this.run(this.hot.admit, args, decided);
    // On a Cluster the switch and the owner index are in other slots: sent in the same turn, so
    // they travel in the same round trip (the index entry is taken back if nothing is held).
    if (this.owner !== null) void this.client.sadd(ownerCalls(this.owner), ownerMember).catch(() => undefined);
    Promise.all([this.s.tgAdmit(...args), this.client.hget(SWITCHES, credit.model)]).then(
      ([reply, sw]) => decided(null, reply, modelSwitchedOn(switchOf(sw), credit.enabledByDefault)),
      (err: Error) => decided(err, null),
    );
  }

  /** An admission whose reply did not come: refused 503, and whatever it may have taken freed. */
  protected admitFailed(hash: string, callId: string, err: Error, done: AdmissionListener): void {
    this.failed('admit', err);
    // The script may have run and taken a slot or placed a hold whose reply was lost: free it (idempotent).
    this.releaseByHash(hash, callId);
    safely(() => done(undefined, 'store_unavailable', 0));
  }

  /**
   * A key record from its JSON as a script returned it: parsed once per version of the record
   * (the last few hundred are kept), not once per call. Records are never changed in place.
   */
  protected keyOf(raw: string): KeyRecord {
    let key = this.parsedKeys.get(raw);
    if (key === undefined) {
      if (this.parsedKeys.size >= 512) this.parsedKeys.clear();
      key = JSON.parse(raw) as KeyRecord;
      this.parsedKeys.set(raw, key);
    }
    return key;
  }

  lookup(hash: string, done: (key: KeyRecord | undefined, failure: unknown) => void): void {
    this.client.get(keyName(hash)).then((raw) => safely(() => done(raw ? (JSON.parse(raw) as KeyRecord) : undefined, null)), (err: unknown) => {
      this.failed('lookup', err);
      safely(() => done(undefined, err));
    });
  }

  responseOwner(account: string, id: string, done: (owner: ResponseOwner | undefined, failure: unknown) => void): void {
    this.client.get(responseName(account, id)).then((raw) => safely(() => done(raw === null ? undefined : rowToResponse(JSON.parse(raw) as ResponseRow), null)), (err: unknown) => {
      this.failed('response_owner', err);
      safely(() => done(undefined, err));
    });
  }

  modelEnabled(id: string, byDefault: boolean, done: (enabled: boolean | null) => void): void {
    this.client.hget(SWITCHES, id).then((v) => safely(() => done(modelSwitchedOn(switchOf(v), byDefault))), (err: unknown) => {
      this.failed('model_switch', err);
      safely(() => done(null));
    });
  }

  readModelSwitches(done: (switches: ReadonlyMap<string, boolean> | null) => void): void {
    this.client.hgetall(SWITCHES).then((all) => safely(() => done(new Map(Object.entries(all).map(([id, v]) => [id, v === '1'])))), (err: unknown) => {
      this.failed('model_switch', err);
      safely(() => done(null));
    });
  }
}
