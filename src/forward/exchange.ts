import type { ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import type { Model } from '../config/types.js';
import type { FormatAdapter, Usage } from '../formats/types.js';
import { sendError } from '../http/errors.js';
import { clientResponseHeaders, pickUpstreamHeaders } from '../http/headers.js';
import { chargeFor } from '../meter/charge.js';
import { estimateUsage } from '../meter/estimate.js';
import { UsageTap } from '../meter/tap.js';
import type { Store } from '../store/lmdb.js';
import type { KeyRecord, UsageRecord } from '../store/types.js';
import { log } from '../log.js';

/** What a metered call needs besides the response: who pays, for what, at which price. */
export interface Metering {
  store: Store;
  key: KeyRecord;
  model: Model;
  format: FormatAdapter;
  requestBytes: number;
  requestedStream: boolean;
  /** How long to keep reading a provider's answer after the client left (then abort and estimate). */
  clientGoneGraceMs: number;
}

const kExchange = Symbol('tollgate.exchange');
type TrackedResponse = ServerResponse & { [kExchange]?: Exchange };

// Shared listeners: one function for every response instead of two closures per request.
function onResponseClose(this: TrackedResponse): void {
  this[kExchange]?.clientClosed();
}
function onResponseDrain(this: TrackedResponse): void {
  this[kExchange]?.resume();
}

/**
 * One forwarded call, as an undici dispatch handler: the provider's bytes are written to the
 * client as they arrive and shown to the usage tap on the way. This is the handler undici's own
 * `stream()` builds around a Writable (lib/api/api-stream.js), minus the Writable: measured in
 * architecture.md, `stream()` serves 15.1k req/s against 10.4k for `request()`+`pipeline`.
 *
 * Back-pressure: `res.write() === false` pauses the provider (onData returns false) until the
 * client's 'drain'. Completion: the charge and the usage record are committed before the
 * response is ended, so a response that reached the client in full is always billed.
 */
export class Exchange implements Dispatcher.DispatchHandler {
  private abortUpstream: ((err?: Error) => void) | null = null;
  private resumeUpstream: (() => void) | null = null;
  private tap: UsageTap | null = null;
  private status = 0;
  private streamed = false;
  private upstreamRequestId: string | undefined;
  private headersSent = false;
  private settled = false;
  private clientGone = false;
  private graceExpired = false;
  private graceTimer: NodeJS.Timeout | null = null;
  private readonly startedAt = Date.now();

  constructor(
    private readonly res: ServerResponse,
    private readonly requestId: string,
    /** null for calls that are neither billed nor listed (GET /models). */
    private readonly metering: Metering | null,
  ) {
    (res as TrackedResponse)[kExchange] = this;
    res.on('close', onResponseClose);
    res.on('drain', onResponseDrain);
  }

  // ── undici handler ──────────────────────────────────────────────────────

  onConnect(abort: (err?: Error) => void): void {
    this.abortUpstream = abort;
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void): boolean {
    if (statusCode < 200) return true;
    this.resumeUpstream = resume;
    this.status = statusCode;
    const picked = pickUpstreamHeaders(rawHeaders);
    this.upstreamRequestId = picked.requestId;
    this.streamed = picked.contentType !== undefined && picked.contentType.startsWith('text/event-stream');
    if (this.metering !== null && statusCode < 300) this.tap = new UsageTap(this.metering.format, this.streamed);
    this.headersSent = true;
    if (this.clientGone) return true;
    this.res.writeHead(statusCode, clientResponseHeaders(picked, this.requestId, this.streamed));
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.tap !== null) this.tap.write(chunk);
    if (this.clientGone) return true;
    return this.res.write(chunk);
  }

  onComplete(): void {
    if (this.settled) return;
    this.settled = true;
    this.clearGrace();
    const m = this.metering;
    if (m === null) {
      this.endResponse();
      return;
    }
    let usage: Usage | undefined;
    let error: string | null = null;
    let estimated = false;
    if (this.status >= 300) {
      error = `upstream_status_${this.status}`;
    } else if (this.tap !== null) {
      this.tap.end();
      if (this.tap.failure !== null) error = this.tap.failure;
      else if ((usage = this.tap.usage) === undefined) {
        usage = estimateUsage(m.requestBytes, this.tap.bytesSeen);
        estimated = true;
      }
    }
    // An error reported inside a stream: the client's connection is destroyed, never ended
    // cleanly, so no client mistakes the partial answer for a complete one.
    const complete = error === null || !this.streamed;
    this.commit(m, usage, error, estimated).then(
      () => (complete ? this.endResponse() : this.res.destroy()),
      (err: unknown) => {
        log('error', 'usage_record_failed', { requestId: this.recordId(), error: String(err) });
        this.res.destroy();
      },
    );
  }

  onError(err: Error): void {
    if (this.settled) return;
    this.settled = true;
    this.clearGrace();
    const m = this.metering;
    if (this.graceExpired && m !== null) {
      // We stopped the provider ourselves, long after the client left: bill what we saw.
      const usage = this.tap?.usage ?? estimateUsage(m.requestBytes, this.tap?.bytesSeen ?? 0);
      void this.commit(m, usage, null, this.tap?.usage === undefined).catch(logRecordFailure);
      return;
    }
    if (!this.headersSent) {
      // Nothing came back: the provider could not be reached (or never answered).
      log('warn', 'upstream_unavailable', { requestId: this.requestId, error: err.message });
      if (!this.clientGone) sendError(this.res, 'upstream_unavailable', this.requestId);
      if (m !== null) void this.commit(m, undefined, 'upstream_unavailable', false).catch(logRecordFailure);
      return;
    }
    // The provider cut the body: never end the client's response as though it were complete.
    this.res.destroy();
    if (m !== null) void this.commit(m, undefined, 'upstream_cut', false).catch(logRecordFailure);
  }

  // ── client side ─────────────────────────────────────────────────────────

  resume(): void {
    this.resumeUpstream?.();
  }

  /** The client's connection closed. Before completion, that means the client left. */
  clientClosed(): void {
    if (this.res.writableFinished || this.settled) return;
    this.clientGone = true;
    // Keep reading the provider's answer so the call can be billed from the usage it reports;
    // give up after the grace period and bill an estimate instead.
    this.resumeUpstream?.();
    if (this.metering === null) {
      this.abortUpstream?.();
      return;
    }
    this.graceTimer = setTimeout(() => {
      this.graceExpired = true;
      this.abortUpstream?.(new Error('client gone; grace period over'));
    }, this.metering.clientGoneGraceMs);
    this.graceTimer.unref();
  }

  // ── helpers ─────────────────────────────────────────────────────────────

  private clearGrace(): void {
    if (this.graceTimer !== null) clearTimeout(this.graceTimer);
  }

  private endResponse(): void {
    if (!this.clientGone) this.res.end();
  }

  private recordId(): string {
    return this.upstreamRequestId ?? this.requestId;
  }

  private commit(m: Metering, usage: Usage | undefined, error: string | null, estimated: boolean): Promise<void> {
    const u = error === null && usage !== undefined ? usage : undefined;
    const charge = u === undefined ? { nano: 0, tokens: 0 } : chargeFor(u, m.model.price, m.key.mode);
    const record: UsageRecord = {
      at: this.startedAt,
      requestId: this.recordId(),
      endpoint: m.format.endpoint,
      model: m.model.id,
      stream: this.headersSent ? this.streamed : m.requestedStream,
      status: this.headersSent ? this.status : 502,
      inputTokens: u?.input ?? 0,
      outputTokens: u?.output ?? 0,
      cachedInputTokens: u?.cachedInput ?? 0,
      cacheWriteTokens: u?.cacheWrite ?? 0,
      reasoningTokens: u?.reasoning ?? 0,
      costNano: m.key.mode === 'credit' ? charge.nano : null,
      tokensCharged: u === undefined ? 0 : u.input + u.output,
      error,
      estimated: u !== undefined && estimated,
      clientGone: this.clientGone,
    };
    return m.store.record(m.key, record, charge);
  }
}

function logRecordFailure(err: unknown): void {
  log('error', 'usage_record_failed', { error: String(err) });
}
