import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Model } from './config/types.js';
import type { RequestLevers } from './formats/levers.js';
import type { RequestFacts } from './formats/model.js';
import type { TopLevelScanner } from './formats/top-level-scanner.js';
import type { FormatAdapter } from './formats/types.js';
import type { Upstream } from './forward/pools.js';
import type { RequestBody, REFUSED } from './http/body.js';
import type { Route } from './http/routes.js';
import type { KeyRecord, UsageRecord } from './domain/types.js';
import type { Observer } from './observe/call.js';
import { ENDPOINT_OTHER, SURFACE_NONE } from './observe/metrics.js';

/** What a call does when it has to end because of a fault of the gateway's own (see server.ts `failed`). */
export interface CallEnding {
  /** Ends the call on a throw inside the gateway: answered 500 or cut, its hold settled, logged once. */
  fail(call: Call, err: unknown): void;
}

/**
 * One request, from its head to its last byte: what each stage of the pipeline learns about
 * it, in one object of fixed shape created once per request (every field is set by the
 * constructor, so V8 keeps one hidden class for all of them). The stages take the call, not
 * a list of positional arguments; its metrics and access-log line are read from it when it is
 * observed (observe/call.ts).
 *
 * The response holds a reference back to its call (`CALL` below) for what is given only the
 * response: the listeners shared by every request, and the error answers (http/errors.ts).
 */
export class Call {
  // ── the request ──────────────────────────────────────────────────────────
  /** The path's route (step 1), once it resolved. */
  route: Route | null = null;
  /** The key's record (step 3) once the store knew it; its prefix is all that is ever shown. */
  key: KeyRecord | null = null;
  /**
   * Step 7 took something for the call (a rate count, a concurrency slot) or its hold is
   * placed, and nothing has settled or released it yet: a call that fails releases it.
   */
  admitted = false;
  /** The body, when it came with the request's head and was read before the admission (bodyAtHand). */
  early: RequestBody | typeof REFUSED | null = null;
  /** The request body's scanner (inference calls). */
  scanner: TopLevelScanner | null = null;
  /** What the checks read from the body (its model, stream flag, members). */
  facts: RequestFacts | null = null;
  /** Step 10: the model the catalogue serves it with, its provider, its format and the levers it pulls. */
  model: Model | null = null;
  upstream: Upstream | null = null;
  format: FormatAdapter | null = null;
  levers: RequestLevers | null = null;
  /** When its hold was computed (the usage record's time). */
  heldAt = 0;
  /** The forwarded call (forward/exchange.ts), once it was forwarded; it settles the call from then on. */
  exchange: CallExchange | null = null;
  /** A fault of the gateway's own ended the call (it is ended once). */
  faulted = false;

  // ── what is observed (observe/call.ts) ───────────────────────────────────
  readonly startedAt = performance.now();
  readonly time = Date.now();
  surface = SURFACE_NONE;
  endpoint = ENDPOINT_OTHER;
  keyPrefix: string | null = null;
  /** The model the client named (an alias as itself). */
  modelName: string | null = null;
  /** The gateway's own error code, when it answered with one. */
  code: string | null = null;
  provider: string | null = null;
  /** The provider credential of its last send, by name. */
  credential: string | null = null;
  /** Sends to the provider. */
  attempts = 0;
  dispatchedAt = 0;
  record: UsageRecord | null = null;
  /** A metered call: observed only once its usage record exists as well. */
  expectsRecord = false;
  /** Events still to come before the call is observed: the response's close, and a record. */
  waiting = 1;

  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    readonly requestId: string,
    /** The query string, with its `?` (empty when there is none). */
    readonly query: string,
    readonly observer: Observer,
    /** How the gateway ends a call that fails (server.ts). */
    readonly ending: CallEnding,
  ) {
    (res as CalledResponse)[CALL] = this;
  }

  /** Ends the call because of a throw inside the gateway (see CallEnding). */
  fail(err: unknown): void {
    this.ending.fail(this, err);
  }
}

/** What a call needs of its forwarded exchange: to be ended by a fault of the gateway's own. */
export interface CallExchange {
  /** Ends the exchange on a throw: the provider's request stopped, the call recorded and answered 500 or cut. */
  fault(err: unknown): void;
  clientClosed(): void;
  resume(): void;
  /** The request id the client was given (the provider's, once the provider's head went out). */
  shownRequestId(): string;
}

/** The response's reference back to its call. */
export const CALL = Symbol('tollgate.call');
export type CalledResponse = ServerResponse & { [CALL]?: Call };

/** The call a response answers (undefined for responses of other servers, such as the admin listener). */
export function callOf(res: ServerResponse): Call | undefined {
  return (res as CalledResponse)[CALL];
}
