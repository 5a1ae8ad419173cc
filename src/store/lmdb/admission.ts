import type { AdmissionListener } from '../../domain/interfaces.js';
import { fundsRefusal, keyRefusal, modelSwitchedOn } from '../../domain/rules.js';
import type { HoldEitherWay, KeyMode, KeyRecord, ResponseOwner } from '../../domain/types.js';
import { rowToResponse } from '../rows.js';
import { LmdbLiveness } from './liveness.js';

/** Steps 3–7 of the order of checks and what the request path reads beside them (Admission). */
export class LmdbAdmission extends LmdbLiveness {
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

  /**
   * `admit`, then step 9 (the key's allowlist) and `hold` with the hold of the key's mode, in
   * that order, deciding as the two calls would. Steps 3–6 are read now; step 7, step 9 and the
   * hold go into the same group commit (LmdbLedger.holdOnAdmission): one commit before the call
   * goes out.
   */
  admitHolding(hash: string, surface: KeyMode, callId: string, hold: HoldEitherWay, done: AdmissionListener): void {
    const key = this.keyRecord(hash);
    if (key === undefined) return done(undefined, 'invalid_api_key', 0);
    const now = Date.now();
    const refusal = keyRefusal(key, surface, now) ?? fundsRefusal(this.accountOf(key.account));
    if (refusal !== null) return done(key, refusal, 0);
    const own = key.mode === 'credit' ? hold.credit : hold.token;
    this.countLater(key, callId, now, (refused, retryAfter) => done(key, refused, retryAfter), own, (held, continued) => done(key, held, 0, continued));
  }

  lookup(hash: string, done: (key: KeyRecord | undefined, failure: unknown) => void): void {
    done(this.keyRecord(hash), null);
  }

  modelEnabled(id: string, byDefault: boolean, done: (enabled: boolean | null) => void): void {
    done(modelSwitchedOn(this.modelSwitches.get(id), byDefault));
  }

  responseOwner(account: string, id: string, done: (owner: ResponseOwner | undefined, failure: unknown) => void): void {
    const row = this.responses.get([account, id]);
    done(row === undefined ? undefined : rowToResponse(row), null);
  }

  readModelSwitches(done: (switches: ReadonlyMap<string, boolean> | null) => void): void {
    const switches = new Map<string, boolean>();
    for (const { key, value } of this.modelSwitches.getRange()) switches.set(key, value);
    done(switches);
  }
}
