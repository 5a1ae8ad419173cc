import type { ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Route } from '../http/routes.js';
import { leverOf } from '../meter/charge.js';
import { formatUsd } from '../money.js';
import type { KeyRecord, UsageRecord } from '../domain/types.js';
import { CALL, callOf, type Call, type CalledResponse } from '../call.js';
import { errorText, log } from '../log.js';
import { isoTime, type AccessLog } from './access-log.js';
import { ENDPOINT_LABELS, ENDPOINT_OTHER, SURFACE_NONE, SURFACES, type Metrics } from './metrics.js';

const ENDPOINT_INDEX = new Map<string, number>(ENDPOINT_LABELS.map((e, i) => [e, i]));
/** The `endpoint` label of routes that are not inference calls. */
const ROUTE_KIND_ENDPOINT: Record<Route['kind'], string> = { inference: 'other', models: 'models', 'stored-response': 'responses', 'usage-page': 'usage', 'usage-api': 'usage', healthz: 'other', readyz: 'other' };

/** The response closed (a listener shared by every response). */
function onClose(this: CalledResponse): void {
  const call = this[CALL]!;
  if (--call.waiting === 0) call.observer.finish(call);
}

export class Observer {
  constructor(
    readonly metrics: Metrics | null,
    private readonly accessLog: AccessLog | null,
  ) {}

  /** A request arrived: observed when its response closes. */
  begin(call: Call): void {
    this.metrics?.enter(SURFACE_NONE);
    call.res.on('close', onClose);
  }

  /**
   * The call's metrics and access-log line. Run from the response's 'close' (or the record's
   * commit): a throw here cannot end a call that has ended, so it is logged, once per call,
   * and the call's observation is what is lost.
   */
  finish(call: Call): void {
    try {
      this.observe(call);
    } catch (err) {
      log('error', 'internal_error', { requestId: call.record?.requestId ?? call.requestId, keyPrefix: call.keyPrefix, stage: 'observe', error: errorText(err) });
    }
  }

  private observe(call: Call): void {
    const res = call.res;
    const r = call.record;
    const status = res.headersSent ? res.statusCode : r?.status ?? CLIENT_CLOSED_REQUEST;
    const code = call.code ?? codeOfRecord(r) ?? codeOfStatus(status, call.provider !== null);
    const durationSeconds = (performance.now() - call.startedAt) / 1000;
    const costNano = r?.costNano ?? 0;
    const stream = r?.stream ?? false;
    const m = this.metrics;
    if (m !== null) {
      m.leave(call.surface);
      m.finished({
        surface: call.surface, endpoint: call.endpoint, status, code, stream, durationSeconds, costNano,
        tokens: r === null ? null : [r.inputTokens, r.outputTokens, r.cachedInputTokens, r.cacheWriteTokens, r.reasoningTokens],
        estimateReason: r !== null && r.estimated ? r.estimateReason ?? 'unknown' : null,
      });
      // Rare (an answer reporting a lever its price cannot price), so the note is split here.
      if (r?.worstCase != null && call.provider !== null) {
        for (const note of r.worstCase.split(',')) m.unpricedLever(call.provider, leverOf(note));
      }
    }
    this.accessLog?.write({
      time: isoTime(call.time),
      requestId: r?.requestId ?? call.requestId,
      keyPrefix: call.keyPrefix,
      surface: SURFACES[call.surface]!,
      endpoint: ENDPOINT_LABELS[call.endpoint]!,
      model: r?.model ?? call.modelName,
      status,
      code,
      stream,
      inputTokens: r?.inputTokens ?? 0,
      outputTokens: r?.outputTokens ?? 0,
      costUsd: r === null || r.costNano === null ? null : formatUsd(r.costNano),
      tokensCharged: r?.tokensCharged ?? 0,
      durationMs: Math.round(durationSeconds * 1e6) / 1e3,
      clientGone: r !== null ? r.clientGone : !res.writableFinished && call.code === null,
      estimated: r?.estimated ?? false,
      estimateReason: r !== null && r.estimated ? r.estimateReason : null,
      attempts: r?.attempts ?? call.attempts,
      credential: r === null ? call.credential : r.credential,
    });
  }

  /**
   * An answer given where Node's parser refused the request (http/client-error.ts): there is no
   * response object to watch, so it is counted and logged here, as it is sent.
   */
  refused(requestId: string, status: number, code: string): void {
    this.metrics?.finished({ surface: SURFACE_NONE, endpoint: ENDPOINT_OTHER, status, code, stream: false, durationSeconds: 0, costNano: 0, tokens: null, estimateReason: null });
    this.accessLog?.write({
      time: isoTime(Date.now()), requestId, keyPrefix: null, surface: SURFACES[SURFACE_NONE]!, endpoint: ENDPOINT_LABELS[ENDPOINT_OTHER]!,
      model: null, status, code, stream: false, inputTokens: 0, outputTokens: 0, costUsd: null, tokensCharged: 0, durationMs: 0, clientGone: false,
      estimated: false, estimateReason: null, attempts: 0, credential: null,
    });
  }

  firstByte(call: Call): void {
    if (this.metrics !== null && call.provider !== null) this.metrics.upstreamFirstByte(call.provider, (performance.now() - call.dispatchedAt) / 1000);
  }
}

const CLIENT_CLOSED_REQUEST = 499;

/**
 * The `code` of an answer with no code of the gateway's own and no failed record: `ok` below
 * 400; `client_gone` when the client left before any answer (499); `upstream` for the
 * provider's own error status, passed on. Every refusal of the gateway notes its own code, so
 * a status of 400 or more from a call never forwarded says a route forgot to: `unlabelled`.
 */
function codeOfStatus(status: number, forwarded: boolean): string {
  if (status < 400) return 'ok';
  if (status === CLIENT_CLOSED_REQUEST) return 'client_gone';
  return forwarded ? 'upstream' : 'unlabelled';
}

/** A metered call's outcome as a `code` label: the provider's failures are `upstream`. */
function codeOfRecord(r: UsageRecord | null): string | null {
  if (r === null || r.error === null) return null;
  if (r.error === 'upstream_unavailable' || r.error === 'internal_error') return r.error;
  return 'upstream';
}

// ── what the stages note (each a property write on the call) ────────────

/** The route resolved: its surface and endpoint label the request from now on. */
export function noteRoute(call: Call, route: Route): void {
  const surface = route.surface === null ? SURFACE_NONE : route.surface === 'credit' ? 0 : 1;
  call.endpoint = ENDPOINT_INDEX.get(route.endpoint ?? ROUTE_KIND_ENDPOINT[route.kind])!;
  if (surface !== call.surface) {
    call.observer.metrics?.leave(call.surface);
    call.observer.metrics?.enter(surface);
    call.surface = surface;
  }
}

/** The key is known: its 12-character prefix (never more) goes in the log line. */
export function noteKey(call: Call, key: KeyRecord): void {
  call.key = key;
  call.keyPrefix = key.prefix;
}

/** The gateway answered with one of its own errors (`res`: a response of the gateway's, or of the admin listener's). */
export function noteCode(res: ServerResponse, code: string): void {
  const call = callOf(res);
  if (call !== undefined) call.code = code;
}

/** The call was sent to this provider, with this credential, now (again, for a retry). */
export function noteDispatch(call: Call, provider: string, credential: string): void {
  call.provider = provider;
  call.credential = credential;
  call.attempts++;
  call.dispatchedAt = performance.now();
}

/** The provider's response headers arrived. */
export function noteFirstByte(call: Call): void {
  if (call.dispatchedAt !== 0) call.observer.firstByte(call);
}

/** A metered call: it is observed only once its usage record exists, too. */
export function expectRecord(call: Call): void {
  if (call.expectsRecord) return;
  call.expectsRecord = true;
  call.waiting++;
}

/** The call's usage record (tokens, cost, status recorded). */
export function noteRecord(call: Call, record: UsageRecord): void {
  if (call.record === null) call.record = record;
  if (!call.expectsRecord) return;
  call.expectsRecord = false;
  if (--call.waiting === 0) call.observer.finish(call);
}
