import type { Pool } from 'undici';

/**
 * A provider's credentials taking turns: which one a call goes out with, and which ones rest or
 * are out of rotation after the provider refused them. State is this process's own (each worker
 * of a cluster keeps its own; README, Credential pools); everything time-based reads the
 * injected clock.
 */

/** The time source (epoch ms): Date.now, or a test's. */
export type Clock = () => number;

/** What one send to a provider came to, as `tollgate_upstream_attempts_total` labels it. */
export const OUTCOMES = ['ok', 'status_429', 'status_5xx', 'connect_error', 'auth_error'] as const;
const OK = 0;
const STATUS_429 = 1;
const STATUS_5XX = 2;
const CONNECT_ERROR = 3;
const AUTH_ERROR = 4;

/** Why a credential is out of rotation until a probe is answered with a 2xx. */
export type OutReason = 'unauthenticated' | 'insufficient_quota';

/** Why a credential is not in rotation, as /readyz says it. */
export type NotInRotationReason = OutReason | 'unreachable' | 'rate_limited';

/** One credential not in rotation (for a model, when `model` is set), for /readyz. */
export interface NotInRotation {
  provider: string;
  credential: string;
  reason: NotInRotationReason;
  /** Rate limited: the model it rests for. */
  model?: string;
  /** When it began (epoch ms). */
  since: number;
  /** When the rest ends (epoch ms); null while out of rotation (a probe brings it back). */
  until: number | null;
}

/** A provider's refusal kept to answer the calls that find every credential resting (without a send). */
export interface KeptAnswer {
  status: number;
  contentType: string | undefined;
  body: Buffer;
  /**
   * As answered again: whole seconds until a credential may next be sent the call (the soonest
   * end of the rests), given to the client as `retry-after`; undefined when none rests (every
   * one is out).
   */
  retryAfter?: number;
  /**
   * As answered again when every credential is out of rotation (OpenAI's `insufficient_quota`):
   * no retry can succeed until the operator acts, so the client's SDK is told not to retry
   * (`x-should-retry: false`, as after a 401).
   */
  final?: boolean;
}

/**
 * What a call is answered with when no credential may be sent to: a provider's answer kept from
 * the refusal that rested the last one, or the gateway's 502 (`UNREACHABLE`; `UNAUTHENTICATED`:
 * with `x-should-retry: false`).
 */
export type Refusal = KeptAnswer | typeof UNREACHABLE | typeof UNAUTHENTICATED;
export const UNREACHABLE = 0;
export const UNAUTHENTICATED = 1;

/** The first rest without a `retry-after`, doubled at each refusal that follows, up to REST_MAX_MS. */
const REST_FIRST_MS = 1000;
const REST_MAX_MS = 60_000;
/** A provider's `retry-after` is obeyed up to this long. */
const RETRY_AFTER_MAX_MS = 3_600_000;
/** At most one call a minute is sent to a credential out of rotation, to see whether it was fixed. */
export const PROBE_INTERVAL_MS = 60_000;

/** A (credential, model) pair resting after the provider's 429. */
interface ModelRest {
  until: number;
  /** The length of the next rest without `retry-after`. */
  nextMs: number;
  since: number;
  answer: KeptAnswer;
}

/** Told when a credential leaves the rotation or comes back, or begins to rest (observe/credentials.ts). */
export interface RotationListener {
  out(provider: string, credential: string, reason: OutReason): void;
  back(provider: string, credential: string): void;
  rested(): void;
}

/** One credential of a provider: its own connection pool, key and base URL, and its state. */
export class Credential {
  /** Until when it rests for every model (its origin could not be reached). */
  restUntil = 0;
  restSince = 0;
  /** The length of its next rest after a connection failure. */
  restNextMs = REST_FIRST_MS;
  out: OutReason | null = null;
  outSince = 0;
  /** The insufficient_quota answer that took it out, answered while it is out. */
  outAnswer: KeptAnswer | null = null;
  /** When a call may next be sent to it while it is out. */
  probeAt = 0;
  /** Models it rests for (the provider limits per model), by id. */
  readonly modelRests = new Map<string, ModelRest>();
  /** Sends by outcome (OUTCOMES), for tollgate_upstream_attempts_total: plain numbers, read when scraped. */
  readonly attempts = [0, 0, 0, 0, 0];
  /** Its seed in the rendezvous hash: from its name, so that every process and restart agrees. */
  readonly seed: number;

  constructor(
    readonly provider: string,
    readonly name: string,
    /** Its bit in a call's set of tried credentials. */
    readonly bit: number,
    readonly weight: number,
    readonly pool: Pool,
    /** Its credential header, [name, value]. */
    readonly header: readonly [string, string],
    /** The path prefix of its base URL ("/v1"). */
    readonly basePath: string,
  ) {
    this.seed = mix(stringHash(FNV_OFFSET, name));
  }

  /** Whether calls of `model` (null: calls of no model) may be sent to it now. */
  inRotation(model: string | null, now: number): boolean {
    if (this.out !== null || this.restUntil > now) return false;
    if (model === null || this.modelRests.size === 0) return true;
    const rest = this.modelRests.get(model);
    return rest === undefined || rest.until <= now;
  }

  /** Whether it was never rested or taken out (so it is in rotation whatever the time). */
  neverRested(): boolean {
    return this.restUntil === 0 && this.out === null && this.modelRests.size === 0;
  }

  /** Whether nothing about it is resting or out now (tollgate_upstream_credential_up). */
  up(now: number): boolean {
    if (!this.inRotation(null, now)) return false;
    for (const rest of this.modelRests.values()) if (rest.until > now) return false;
    return true;
  }
}

/** The credentials of one provider, how a call's is chosen, and what the provider's answers do to them. */
export class Rotation {
  private outCount = 0;

  constructor(
    readonly credentials: readonly Credential[],
    readonly now: Clock,
    private readonly listener: RotationListener,
  ) {}

  /**
   * The credential a call of `account` and `model` goes out with: by weighted rendezvous hashing
   * among those in rotation for the model, so that an account's calls of a model keep going to
   * the same credential (and its organisation's prompt cache) until it rests or is out, and over
   * many accounts the calls split by weight. Those in `tried` (a set of Credential.bit) are
   * taken only when no other is in rotation. A call's first pick may instead be the probe of a
   * credential out of rotation, at most one a minute each. Null: none may be sent to now.
   *
   * O(credentials) and allocation-free: one pass over the two strings, then per credential a
   * multiply-xor mix of the hash with its seed and one logarithm.
   */
  pick(account: string, model: string, tried: number): Credential | null {
    if (tried === 0 && this.outCount !== 0) {
      const probe = this.probe(this.now());
      if (probe !== null) return probe;
    }
    const credentials = this.credentials;
    if (credentials.length === 1) {
      const only = credentials[0]!;
      // A credential never refused is in rotation without reading the clock (whose reading is
      // a heap number per call).
      return only.neverRested() || only.inRotation(model, this.now()) ? only : null;
    }
    const now = this.now();
    const hash = stringHash(stringHash(FNV_OFFSET, account) ^ SEPARATOR, model);
    let best: Credential | null = null;
    let bestScore = -1;
    let again: Credential | null = null;
    let againScore = -1;
    for (let i = 0; i < credentials.length; i++) {
      const c = credentials[i]!;
      if (!c.inRotation(model, now)) continue;
      // Weighted rendezvous (highest random weight): -w / ln(u), u uniform in (0, 1) per
      // (call key, credential); the largest wins with probability w / Σw.
      const score = c.weight / -Math.log((mix(hash ^ c.seed) + 0.5) / 4294967296);
      if ((tried & c.bit) === 0) {
        if (score > bestScore) {
          best = c;
          bestScore = score;
        }
      } else if (score > againScore) {
        again = c;
        againScore = score;
      }
    }
    return best ?? again;
  }

  /**
   * The credential recorded with a stored object (pinned calls go there or nowhere): itself
   * while in rotation for `model`, or as its probe when one is due; else null.
   */
  pinned(credential: Credential, model: string | null): Credential | null {
    const now = this.now();
    if (credential.inRotation(model, now)) return credential;
    if (credential.out !== null && now >= credential.probeAt) {
      credential.probeAt = now + PROBE_INTERVAL_MS;
      return credential;
    }
    return null;
  }

  /** A credential out of rotation whose probe is due, claimed for this call. */
  private probe(now: number): Credential | null {
    for (const c of this.credentials) {
      if (c.out !== null && now >= c.probeAt) {
        c.probeAt = now + PROBE_INTERVAL_MS;
        return c;
      }
    }
    return null;
  }

  /** The credential named `name`, if it has its key. */
  named(name: string): Credential | undefined {
    return this.credentials.find((c) => c.name === name);
  }

  // ── what the provider's answers do ──────────────────────────────────────

  /**
   * A head other than 401 from `c`: counted by its outcome; its origin was reached. A 2xx brings
   * it back into rotation (its probe succeeded) and ends what it rested for the model.
   */
  answered(c: Credential, model: string | null, status: number): void {
    c.attempts[status === 429 ? STATUS_429 : status >= 500 ? STATUS_5XX : OK]! += 1;
    if (c.restNextMs !== REST_FIRST_MS) c.restNextMs = REST_FIRST_MS;
    if (status >= 300) return;
    if (c.out !== null) this.putBack(c);
    if (model !== null && c.modelRests.size !== 0) c.modelRests.delete(model);
  }

  /** The provider answered 401: the gateway's credential is refused. */
  unauthenticated(c: Credential): void {
    c.attempts[AUTH_ERROR]! += 1;
    this.takeOut(c, 'unauthenticated', null);
  }

  /**
   * The provider's 429 from `c` for `model`, once its body is read: `insufficient_quota` (the
   * account has no credit left) takes the credential out; any other rests the pair for the
   * answer's `retry-after` (`retryAfterMs`, -1 when it gave none) or else 1 s doubling to 60 s.
   */
  rateLimited(c: Credential, model: string | null, retryAfterMs: number, answer: KeptAnswer): void {
    if (answer.body.includes(INSUFFICIENT_QUOTA)) return this.takeOut(c, 'insufficient_quota', answer);
    if (model === null) return;
    const now = this.now();
    const rest = c.modelRests.get(model);
    // The doubling goes on while refusals follow each other; a rest long over starts it again.
    const nextMs = rest === undefined || now - rest.until > REST_MAX_MS ? REST_FIRST_MS : rest.nextMs;
    const ms = retryAfterMs >= 0 ? Math.min(retryAfterMs, RETRY_AFTER_MAX_MS) : nextMs;
    c.modelRests.set(model, { until: now + ms, nextMs: retryAfterMs >= 0 ? nextMs : Math.min(nextMs * 2, REST_MAX_MS), since: now, answer });
    this.listener.rested();
  }

  /**
   * A send to `c` that got no head. When the request was not written whole (the origin could not
   * be reached, or the connection failed before), the credential rests for every model, 1 s
   * doubling to 60 s while it stays unreachable; otherwise it is counted only.
   */
  noAnswer(c: Credential, written: boolean): void {
    c.attempts[CONNECT_ERROR]! += 1;
    if (written) return;
    const now = this.now();
    c.restSince = now;
    c.restUntil = now + c.restNextMs;
    c.restNextMs = Math.min(c.restNextMs * 2, REST_MAX_MS);
    this.listener.rested();
  }

  private takeOut(c: Credential, reason: OutReason, answer: KeptAnswer | null): void {
    c.outAnswer = answer;
    // A probe refused again: still out, its next probe a minute on (claimed when it was sent).
    if (c.out === reason) return;
    if (c.out === null) this.outCount++;
    c.out = reason;
    c.outSince = this.now();
    c.probeAt = c.outSince + PROBE_INTERVAL_MS;
    this.listener.out(c.provider, c.name, reason);
  }

  private putBack(c: Credential): void {
    c.out = null;
    c.outAnswer = null;
    this.outCount--;
    this.listener.back(c.provider, c.name);
  }

  // ── what is known of the credentials ────────────────────────────────────

  /**
   * What a call of `model` (null: of no model) is answered with when no credential may be sent
   * to: the refusal that began the latest of their rests or outs.
   */
  lastRefusal(model: string | null): Refusal {
    return this.latestRefusal(this.credentials, model);
  }

  /** What a call pinned to `c` is answered with when it may not be sent to it. */
  refusalOf(c: Credential, model: string | null): Refusal {
    return this.latestRefusal([c], model);
  }

  private latestRefusal(credentials: readonly Credential[], model: string | null): Refusal {
    const now = this.now();
    let refusal: Refusal = UNREACHABLE;
    let latest = -1;
    /** Whether the refusal is a credential's taken out of rotation (OpenAI's insufficient_quota). */
    let outAnswer = false;
    for (const c of credentials) {
      if (c.out !== null && c.outSince > latest) {
        latest = c.outSince;
        refusal = c.outAnswer ?? UNAUTHENTICATED;
        outAnswer = true;
      }
      if (c.restUntil > now && c.restSince > latest) {
        latest = c.restSince;
        refusal = UNREACHABLE;
        outAnswer = false;
      }
      const rest = model === null ? undefined : c.modelRests.get(model);
      if (rest !== undefined && rest.until > now && rest.since > latest) {
        latest = rest.since;
        refusal = rest.answer;
        outAnswer = false;
      }
    }
    if (typeof refusal !== 'object' || model === null) return refusal;
    // A provider's 429 answered again: when the call could next be sent, as the provider would
    // have said in the `retry-after` the client never sees (its headers are not passed on): the
    // soonest end of the rests. A credential out of rotation has no end (a probe may bring it
    // back within the minute, for one call); when every one is out, no retry can help.
    let soonest = Infinity;
    for (const c of credentials) {
      if (c.out !== null) continue;
      soonest = Math.min(soonest, Math.max(c.restUntil, c.modelRests.get(model)?.until ?? 0));
    }
    if (soonest !== Infinity) return { ...refusal, retryAfter: Math.max(1, Math.ceil((soonest - now) / 1000)) };
    return outAnswer ? { ...refusal, final: true } : refusal;
  }

  /** Every credential not in rotation now, and why (appended to `into`). */
  notInRotation(into: NotInRotation[]): void {
    const now = this.now();
    for (const c of this.credentials) {
      if (c.out !== null) into.push({ provider: c.provider, credential: c.name, reason: c.out, since: c.outSince, until: null });
      if (c.restUntil > now) into.push({ provider: c.provider, credential: c.name, reason: 'unreachable', since: c.restSince, until: c.restUntil });
      for (const [model, rest] of c.modelRests) {
        if (rest.until > now) into.push({ provider: c.provider, credential: c.name, reason: 'rate_limited', model, since: rest.since, until: rest.until });
      }
    }
  }
}

/** OpenAI's 429 when the organisation has no credit left (its error `code` and `type`). */
const INSUFFICIENT_QUOTA = Buffer.from('"insufficient_quota"');

// ── hashing: non-allocating, over the strings' UTF-16 code units ─────────

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
/** Between the account and the model, so that ("ab", "c") and ("a", "bc") differ. */
const SEPARATOR = 0x1f;

/** 32-bit FNV-1a of `s`, continued from `hash`. */
function stringHash(hash: number, s: string): number {
  let h = hash;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), FNV_PRIME);
  return h >>> 0;
}

/** MurmurHash3's 32-bit finaliser: every input bit moves every output bit. */
function mix(x: number): number {
  let h = x;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
