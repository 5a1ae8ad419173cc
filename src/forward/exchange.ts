import type { ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import type { Model } from '../config/types.js';
import type { FormatAdapter, Usage } from '../formats/types.js';
import { UsageChunkFilter } from '../formats/usage-chunk-filter.js';
import { sendError } from '../http/errors.js';
import { clientResponseHeaders, pickUpstreamHeaders } from '../http/headers.js';
import { log } from '../log.js';
import { chargeFor } from '../meter/charge.js';
import { estimateUsage } from '../meter/estimate.js';
import { UsageTap } from '../meter/tap.js';
import type { Store } from '../store/lmdb.js';
import type { KeyRecord, UsageRecord } from '../store/types.js';

/** What a metered call needs besides the response: who pays, for what, at which price. */
export interface Metering {
  store: Store;
  key: KeyRecord;
  model: Model;
  format: FormatAdapter;
  /** The parsed request body, for an input estimate should usage never arrive. */
  requestBody: Record<string, unknown>;
  requestedStream: boolean;
  /** The gateway asked for stream usage the client did not ask for: hide the usage-only chunk. */
  stripUsageChunk: boolean;
  /** How long to keep reading a provider's answer after the client left (then abort and estimate). */
  clientGoneGraceMs: number;
}

/** How a call ended, for its usage record. */
interface Outcome {
  usage: Usage | undefined;
  error: string | null;
  estimated: boolean;
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
 * Every path ends in exactly one usage record: complete, provider error, cut, unreachable, or
 * client gone (billed from the provider's usage, or estimated when the grace period ran out).
 */
export class Exchange implements Dispatcher.DispatchHandler {
  private abortUpstream: ((err?: Error) => void) | null = null;
  private resumeUpstream: (() => void) | null = null;
  private tap: UsageTap | null = null;
  private filter: UsageChunkFilter | null = null;
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
    const m = this.metering;
    if (m !== null && statusCode < 300) {
      this.tap = new UsageTap(m.format, this.streamed);
      if (this.streamed && m.stripUsageChunk) this.filter = new UsageChunkFilter();
    }
    this.headersSent = true;
    if (this.clientGone) return true;
    this.res.writeHead(statusCode, clientResponseHeaders(picked, this.requestId, this.streamed));
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.tap !== null) this.tap.write(chunk);
    if (this.clientGone) return true;
    if (this.filter === null) return this.res.write(chunk);
    const out = this.filter.filter(chunk);
    return out === undefined ? true : this.res.write(out);
  }

  onComplete(): void {
    if (this.settled) return;
    this.settled = true;
    this.clearGrace();
    if (this.filter !== null && !this.clientGone) {
      const rest = this.filter.end();
      if (rest !== undefined) this.res.write(rest);
    }
    const m = this.metering;
    if (m === null) {
      this.endResponse();
      return;
    }
    const tap = this.tap;
    let outcome: Outcome | Promise<Outcome>;
    if (this.status >= 300 || tap === null) {
      outcome = { usage: undefined, error: `upstream_status_${this.status}`, estimated: false };
    } else {
      tap.end();
      if (tap.failure !== null) outcome = { usage: undefined, error: tap.failure, estimated: false };
      else if (tap.usage !== undefined) outcome = { usage: tap.usage, error: null, estimated: false };
      else outcome = this.estimate(m);
    }
    // An error reported inside a stream: the client's connection is destroyed, never ended
    // cleanly, so no client mistakes the partial answer for a complete one.
    Promise.resolve(outcome)
      .then((o) => this.commit(m, o).then(() => (o.error !== null && this.streamed ? this.res.destroy() : this.endResponse())))
      .catch((err: unknown) => {
        log('error', 'usage_record_failed', { requestId: this.recordId(), error: String(err) });
        this.res.destroy();
      });
  }

  onError(err: Error): void {
    if (this.settled) return;
    this.settled = true;
    this.clearGrace();
    const m = this.metering;
    let outcome: Outcome | Promise<Outcome>;
    let answer: () => void;
    if (this.graceExpired) {
      // We stopped the provider ourselves, long after the client left: bill what we saw
      // (a Messages stream's input usage is already final; its output is not).
      outcome = m === null ? NOTHING : this.estimate(m);
      answer = noop;
    } else if (!this.headersSent) {
      // Nothing came back: the provider could not be reached (or never answered).
      log('warn', 'upstream_unavailable', { requestId: this.requestId, error: err.message });
      outcome = { usage: undefined, error: 'upstream_unavailable', estimated: false };
      answer = () => {
        if (!this.clientGone) sendError(this.res, 'upstream_unavailable', this.requestId);
      };
    } else {
      // The provider cut the body: never end the client's response as though it were complete.
      outcome = { usage: undefined, error: 'upstream_cut', estimated: false };
      answer = () => this.res.destroy();
    }
    if (m === null) return answer();
    // As on success, the record is committed before the client hears the outcome.
    Promise.resolve(outcome)
      .then((o) => this.commit(m, o))
      .catch(logRecordFailure)
      .finally(answer);
  }

  // ── client side ─────────────────────────────────────────────────────────

  resume(): void {
    this.resumeUpstream?.();
  }

  /** The client's connection closed. Before completion, that means the client left. */
  clientClosed(): void {
    if (this.res.writableFinished || this.settled) return;
    this.clientGone = true;
    if (this.metering === null) {
      this.abortUpstream?.();
      return;
    }
    // Keep reading the provider's answer so the call is billed from the usage it reports;
    // after the grace period, stop the provider and bill an estimate instead.
    this.resumeUpstream?.();
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

  private async estimate(m: Metering): Promise<Outcome> {
    const tap = this.tap;
    const usage = await estimateUsage(tap?.usage, m.requestBody, { stream: tap?.stream ?? m.requestedStream, text: tap?.outputText ?? '', chars: tap?.outputChars ?? 0, bytesSeen: tap?.bytesSeen ?? 0 });
    return { usage, error: null, estimated: true };
  }

  private commit(m: Metering, o: Outcome): Promise<void> {
    const u = o.error === null ? o.usage : undefined;
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
      error: o.error,
      estimated: u !== undefined && o.estimated,
      clientGone: this.clientGone,
    };
    return m.store.record(m.key, record, charge);
  }
}

const NOTHING: Outcome = { usage: undefined, error: null, estimated: false };

function noop(): void {}

function logRecordFailure(err: unknown): void {
  log('error', 'usage_record_failed', { error: String(err) });
}
