import type { ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import type { Model } from '../config/types.js';
import type { RequestLevers } from '../formats/levers.js';
import type { FormatAdapter, Usage } from '../formats/types.js';
import type { Reading } from '../formats/usage-read.js';
import { UsageChunkFilter } from '../formats/usage-chunk-filter.js';
import { sendError, sendErrorNotToRetry } from '../http/errors.js';
import { clientResponseHeaders, pickUpstreamHeaders } from '../http/headers.js';
import { log } from '../log.js';
import { CALL, type Call, type CalledResponse, type CallExchange } from '../call.js';
import { expectRecord, noteDispatch, noteFirstByte, noteRecord } from '../observe/call.js';
import { chargeFor, usageDetail } from '../meter/charge.js';
import { estimateUsage } from '../meter/estimate.js';
import { UsageTap } from '../meter/tap.js';
import type { CommitListener, Ledger } from '../domain/interfaces.js';
import type { KeyRecord, UsageRecord } from '../domain/types.js';
import { retriedStatus, retryAfterMs } from './retry.js';
import { UNAUTHENTICATED, UNREACHABLE, type Credential, type KeptAnswer, type Refusal, type Rotation } from './rotation.js';
import { notePassed } from './young-gc.js';

/** What a metered call needs besides the response: who pays, for what, at which price. */
export interface Metering {
  store: Ledger;
  key: KeyRecord;
  model: Model;
  format: FormatAdapter;
  /**
   * The request body, parsed on first read of `body`: only an input estimate (usage that never
   * arrived) reads it. The request's facts themselves, not a closure over the handler's scope: a
   * closure would tie the whole request (its socket objects, its body scanner) to the exchange.
   */
  request: { readonly body: Record<string, unknown>; readonly model: string };
  requestedStream: boolean;
  /** The gateway asked for stream usage the client did not ask for: hide the usage-only chunk. */
  stripUsageChunk: boolean;
  /** How long to keep reading a provider's answer after the client left (then abort and estimate). */
  clientGoneGraceMs: number;
  /** When the call was admitted and its hold placed (the record's time). */
  startedAt: number;
  /** The price levers the request pulls (tool calls it implies are part of its usage). */
  levers: RequestLevers;
}

/**
 * A call's request to the provider, as undici takes it: sent again as it is on a retry, the same
 * body bytes each time (a Buffer, or a list of Buffers undici iterates anew), with only its
 * path (the credential's base path) and the credential header set for each send.
 */
export interface UpstreamRequest {
  path: string;
  method: 'GET' | 'POST' | 'DELETE';
  headers: Record<string, string>;
  body?: Buffer;
}

/** How a call ended, for its usage record. */
interface Outcome {
  usage: Usage | undefined;
  error: string | null;
  estimated: boolean;
  /** Why the usage was estimated (see usage-read.ts), null when it was read. */
  estimateReason?: string | null;
}

/** What the client is told once the record is committed. */
const enum Finish { End, Destroy, Unavailable, CredentialRefused, Internal, Nothing }

/**
 * A plain (non-stream) answer up to this size is held and sent in one write, with a
 * content-length, once its record is committed: measured (bench/README.md), sending the
 * chunked terminator in a write of its own after the commit cost ≈ 12 % of CPU at c=32.
 * Larger answers are streamed as they arrive.
 */
const HOLD_LIMIT = 64 * 1024;

// Shared listeners: one function for every response instead of two closures per request.
function onResponseClose(this: CalledResponse): void {
  this[CALL]!.exchange?.clientClosed();
}
function onResponseDrain(this: CalledResponse): void {
  this[CALL]!.exchange?.resume();
}
function onStall(exchange: Exchange): void {
  exchange.stalled();
}

/**
 * One forwarded call, as an undici dispatch handler: the provider's bytes are passed to the
 * client and shown to the usage tap on the way. This is the handler undici's own `stream()`
 * builds around a Writable (lib/api/api-stream.js), minus the Writable: measured in
 * architecture.md, `stream()` serves 15.1k req/s against 10.4k for `request()`+`pipeline`.
 *
 * Writes: each chunk undici hands over is written to the client as it comes, then shown to the
 * tap. Node corks a response's socket on its first write of a turn and sends at the next tick,
 * so the chunks of one provider read still leave in one syscall (test/cost-counts.test.ts), and
 * nothing of the gateway's own is scheduled per read: gathering a read's chunks for a write of
 * the gateway's own at the end of the turn (a microtask) cost ≈ 1,000 more instructions per event
 * (bench/README.md, History, "2026-11-27, seventh"). The tap's look at a read comes before its
 * bytes leave: ≈ 0.4 µs for a read of one event, ≈ 10 µs for a whole stream of 10 KB in one read.
 *
 * Back-pressure: once a write returns false, the next chunk pauses the provider (onData returns
 * false) until the client's 'drain'. A client that does not drain within clientStallMs is
 * treated as gone (its connection destroyed; the call ends as a client-gone call), so a
 * provider connection is never paused longer than that for a client that stopped reading.
 *
 * Attempts: the same handler serves every send of the call (forward/retry.ts says when there is
 * another; the provider's rotation which credential). A refusal that may be retried is an error
 * status, whose answer is held like any plain answer, so nothing of it has reached the client
 * when its end decides; a retried answer is kept until another attempt answers, for the client
 * should no later attempt reach a provider.
 *
 * Completion: the charge and the usage record are committed before the response is ended (a
 * stream's last read goes with its end: complete), so a response that reached the client in full
 * is always billed.
 * Every path ends in exactly one usage record: complete, provider error, cut, unreachable, or
 * client gone (billed from the provider's usage, or estimated when the grace period ran out);
 * the record settles the call's hold in the same commit (store/store.ts `Ledger.record`).
 */
export class Exchange implements Dispatcher.DispatchHandler, CommitListener, CallExchange {
  private abortUpstream: ((err?: Error) => void) | null = null;
  private resumeUpstream: (() => void) | null = null;
  private tap: UsageTap | null = null;
  private filter: UsageChunkFilter | null = null;
  /** The status of the answer the client is to get (the latest attempt's that had a head). */
  private status = 0;
  private streamed = false;
  private contentType: string | undefined;
  private responseHeaders: string[] | null = null;
  /** A plain answer's chunks, held until its record is committed (null once streaming). */
  private held: Buffer[] | null = null;
  private heldBytes = 0;
  private upstreamRequestId: string | undefined;
  /** Some attempt's head arrived (other than a 401): its answer is the one the client may get. */
  private headersReceived = false;
  /** The provider answered this attempt 401: it refused the gateway's own credential (see onHeaders). */
  private credentialRefused = false;
  /** Some attempt was answered 401 (the client gets the gateway's 502, not to be retried, if no other answered). */
  private anyCredentialRefused = false;
  private settled = false;
  private finish = Finish.End;
  private clientGone = false;
  private graceExpired = false;
  private graceTimer: NodeJS.Timeout | null = null;
  /** Bytes for the client to have with the response's end (the filter's rest). */
  private last: Buffer | null = null;
  /** Turns in which some of the answer's bytes were written to the client (see write). */
  private writeTurns = 0;
  /**
   * A stream's last read is corked on the client's socket until its end, once the record is
   * committed (complete): the cork this gateway added, to be taken off if the connection is cut.
   */
  private lastCorked = false;
  /** The last write returned false and no 'drain' has come since. */
  private blocked = false;
  private stallTimer: NodeJS.Timeout | null = null;
  /** The usage record was queued (commit): from then on, the store's answer settles the call. */
  private recordQueued = false;
  /** The store told the record's commit (committed). */
  private recordCommitted = false;

  // ── the attempts ────────────────────────────────────────────────────────
  /** The provider's credentials; null until the call is sent. */
  private rotation: Rotation | null = null;
  /** The credential of the current attempt. */
  private credential: Credential | null = null;
  /** The credential whose answer the client is to get. */
  private answeredBy: Credential | null = null;
  private request: UpstreamRequest | null = null;
  /** The request's path after the credential's base path. */
  private path = '';
  /** Another credential may be tried (false for calls that must go where their object lives). */
  private retries = false;
  /** Sends so far; of them, probes of credentials out of rotation (not counted against retry.attempts). */
  private attempts = 0;
  private probes = 0;
  /** The credentials sent to (Credential.bit). */
  private tried = 0;
  private firstSentAt = 0;
  /** The current attempt's request was written whole (undici's onRequestSent). */
  private requestSent = false;
  /** The current attempt's head arrived. */
  private attemptAnswered = false;
  /** The current attempt's 429: its `retry-after` in ms (-1: none). */
  private retryAfter = -1;

  private readonly res: ServerResponse;
  private readonly requestId: string;

  constructor(
    private readonly call: Call,
    /** null for calls that are neither billed nor listed (GET /models). */
    private readonly metering: Metering | null,
    /**
     * How long the client may accept no bytes (its connection not draining) before it is
     * treated as gone (limits.clientStallMs). See Exchange.blocked.
     */
    private readonly clientStallMs: number,
  ) {
    const res = call.res;
    this.res = res;
    this.requestId = call.requestId;
    call.exchange = this;
    res.on('close', onResponseClose);
    res.on('drain', onResponseDrain);
    if (metering !== null) expectRecord(call);
  }

  // ── sending ─────────────────────────────────────────────────────────────

  /**
   * Sends the call with `credential` (chosen by `rotation`); `path` goes after the credential's
   * base path. With `retries`, a refused attempt may be sent again (metered calls only).
   */
  send(rotation: Rotation, credential: Credential, request: UpstreamRequest, path: string, retries: boolean): void {
    this.rotation = rotation;
    this.request = request;
    this.path = path;
    this.retries = retries && this.metering !== null;
    this.firstSentAt = rotation.now();
    this.dispatch(credential);
  }

  /**
   * Answers the call without a send: no credential may be sent to (every one rests or is out),
   * so the client gets the refusal that rested the last of them (or the gateway's 502).
   */
  unsent(refusal: Refusal): void {
    this.settled = true;
    const m = this.metering;
    if (refusal === UNAUTHENTICATED) return this.refused(m, Finish.CredentialRefused);
    if (refusal === UNREACHABLE) return this.unreachable(m);
    this.status = refusal.status;
    this.headersReceived = true;
    this.contentType = refusal.contentType;
    this.responseHeaders = clientResponseHeaders({ contentType: refusal.contentType, requestId: undefined }, this.requestId, false);
    if (refusal.retryAfter !== undefined) this.responseHeaders.push('retry-after', String(refusal.retryAfter));
    if (refusal.final === true) this.responseHeaders.push('x-should-retry', 'false');
    this.held = [refusal.body];
    this.heldBytes = refusal.body.length;
    this.ended();
  }

  /**
   * Takes over an attempt already under way, from its head on (GET /models hands over an answer
   * other than its list).
   */
  takeOver(rotation: Rotation, credential: Credential, abort: (err?: Error) => void): void {
    this.rotation = rotation;
    this.credential = credential;
    this.attempts = 1;
    this.requestSent = true;
    this.abortUpstream = abort;
  }

  private dispatch(credential: Credential): void {
    this.credential = credential;
    this.attempts++;
    if (credential.out !== null) this.probes++;
    this.tried |= credential.bit;
    this.requestSent = false;
    this.attemptAnswered = false;
    this.credentialRefused = false;
    this.abortUpstream = null;
    this.resumeUpstream = null;
    const request = this.request!;
    request.path = credential.basePath + this.path;
    request.headers[credential.header[0]] = credential.header[1];
    noteDispatch(this.call, credential.provider, credential.name);
    credential.pool.dispatch(request, this);
  }

  /**
   * After an attempt refused or not answered: sends the call again when retry.ts's rules and
   * the provider's `retry` allow, to another credential in rotation if there is one, else to the
   * same; true when it did. Only while nothing of an answer has reached the client (a refusal's
   * answer is held, never streamed) and the client is still there.
   */
  private sendAgain(): boolean {
    const m = this.metering;
    if (!this.retries || m === null || this.clientGone || this.res.destroyed || this.res.headersSent) return false;
    const rotation = this.rotation!;
    const policy = m.model.provider.retry;
    if (this.attempts - this.probes >= policy.attempts || rotation.now() - this.firstSentAt >= policy.budgetMs) return false;
    const next = rotation.pick(m.key.account, m.model.id, this.tried);
    if (next === null) return false;
    // The attempt that ended is not to be resumed or aborted any more.
    this.abortUpstream = null;
    this.resumeUpstream = null;
    // Sent from a fresh stack: this one is inside undici's handling of the attempt that ended.
    process.nextTick(dispatchAgain, this, next);
    return true;
  }

  /** For sendAgain's next tick. */
  dispatchAgainNow(credential: Credential): void {
    try {
      // The client may have left since: the call then ends with what the last attempt gave.
      if (this.clientGone || this.res.destroyed) return this.ended();
      this.dispatch(credential);
    } catch (err) {
      this.call.fail(err);
    }
  }

  // ── undici handler ──────────────────────────────────────────────────────

  onConnect(abort: (err?: Error) => void): void {
    this.abortUpstream = abort;
  }

  onRequestSent(): void {
    this.requestSent = true;
  }

  // Each handler ends the call on a throw of its own (call.fail): undici would take it for the
  // provider's failure (onError), and a throw in onError would end the process.
  onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void): boolean {
    try {
      return this.headers(statusCode, rawHeaders, resume);
    } catch (err) {
      this.call.fail(err);
      return false;
    }
  }

  onData(chunk: Buffer): boolean {
    try {
      return this.data(chunk);
    } catch (err) {
      this.call.fail(err);
      return false;
    }
  }

  onComplete(): void {
    try {
      this.complete();
    } catch (err) {
      this.call.fail(err);
    }
  }

  onError(err: Error): void {
    try {
      this.error(err);
    } catch (thrown) {
      this.call.fail(thrown);
    }
  }

  private headers(statusCode: number, rawHeaders: Buffer[], resume: () => void): boolean {
    if (statusCode < 200) return true;
    this.resumeUpstream = resume;
    this.attemptAnswered = true;
    noteFirstByte(this.call);
    const credential = this.credential!;
    // A 401 is the provider refusing the gateway's own credential, never the client's key: the
    // credential leaves the rotation, and the client never sees the provider's answer (whose
    // message may quote part of the credential): another credential's, or the gateway's 502,
    // not to be retried. Its body is read and dropped.
    if (statusCode === 401) {
      this.credentialRefused = true;
      this.anyCredentialRefused = true;
      this.rotation!.unauthenticated(credential);
      return true;
    }
    const m = this.metering;
    this.rotation!.answered(credential, m === null ? null : m.model.id, statusCode);
    if (statusCode === 429) this.retryAfter = retryAfterMs(rawHeaders, this.rotation!.now());
    this.status = statusCode;
    this.headersReceived = true;
    this.answeredBy = credential;
    const picked = pickUpstreamHeaders(rawHeaders);
    this.upstreamRequestId = picked.requestId;
    this.contentType = picked.contentType;
    this.streamed = picked.contentType !== undefined && picked.contentType.startsWith('text/event-stream');
    if (m !== null && statusCode < 300) {
      this.tap = new UsageTap(m.format, this.streamed, m.levers);
      if (this.streamed && m.stripUsageChunk) this.filter = new UsageChunkFilter();
    }
    this.responseHeaders = clientResponseHeaders(picked, this.requestId, this.streamed);
    if (this.streamed) {
      this.held = null;
      if (!this.clientGone) this.res.writeHead(statusCode, this.responseHeaders);
    } else {
      this.held = [];
      this.heldBytes = 0;
    }
    return true;
  }

  private data(chunk: Buffer): boolean {
    // Each provider read is a fresh ArrayBuffer outside the heap: see young-gc.ts.
    notePassed(chunk.length);
    if (this.credentialRefused) return true;
    if (this.clientGone) {
      this.tap?.write(chunk);
      return true;
    }
    if (this.held !== null) {
      const flowing = this.hold(chunk);
      this.tap?.write(chunk);
      return flowing;
    }
    const out = this.filter === null ? chunk : this.filter.filter(chunk);
    if (out !== undefined) this.write(out);
    this.tap?.write(chunk);
    return !this.blocked;
  }

  /**
   * Writes to the client. Node corks the socket on a response's first write of a turn and
   * uncorks it at the next tick: a socket not corked yet means this is the turn's first write.
   */
  private write(bytes: Buffer): void {
    const socket = this.res.socket;
    if (socket === null || socket.writableCorked === 0) this.writeTurns++;
    if (!this.res.write(bytes)) this.block();
  }

  /**
   * Before the connection is cut: what is kept for the end (the filter's rest), and a last read
   * corked for it, go out first.
   */
  private sendLast(): void {
    const last = this.last;
    this.last = null;
    if (last !== null && !this.clientGone && !this.res.destroyed) this.write(last);
    if (!this.lastCorked) return;
    this.lastCorked = false;
    const socket = this.res.socket;
    if (socket !== null) while (socket.writableCorked > 0) socket.uncork();
  }

  private complete(): void {
    if (this.settled) return;
    // A stream's provider is done, and earlier reads have gone out: its last read, written in this
    // turn and corked by Node until the next tick, is corked once more, so that it goes to the
    // client with the response's end once the record is committed (answer: Node uncorks fully on
    // end). The client gets the stream's last bytes and its end in one write instead of two, and
    // none of them before the bill is committed; its end of body is no later (the end already
    // waited for the commit). A stream that came whole in one read goes out at once instead, so
    // that its first byte does not wait for the commit (`npm run bench`, streamed time to first
    // byte over the bare proxy: +423 µs when it waited, +210 µs written at once; bench/README.md,
    // 2026-11-27).
    if (this.streamed && this.writeTurns > 1) this.corkLastRead();
    if (this.credentialRefused || this.refusedHeld()) {
      if (this.status === 429 && !this.credentialRefused) this.rotation!.rateLimited(this.credential!, this.metering?.model.id ?? null, this.retryAfter, this.keptAnswer());
      if (this.sendAgain()) return;
    }
    this.ended();
  }

  /** The call's last attempt is over: it ends with the answer it has. */
  private ended(): void {
    this.settled = true;
    this.clearGrace();
    if (this.filter !== null && !this.clientGone) {
      const rest = this.filter.end();
      if (rest !== undefined) this.last = this.last === null ? rest : Buffer.concat([this.last, rest]);
    }
    const m = this.metering;
    // A 401 never shows: an earlier attempt's refusal does if there was one, else the gateway's 502.
    if (!this.headersReceived) {
      if (this.anyCredentialRefused) return this.refused(m, Finish.CredentialRefused);
      return this.unreachable(m);
    }
    if (m === null) return this.answer();
    const tap = this.tap;
    if (this.status >= 300 || tap === null) {
      return this.commit(m, { usage: undefined, error: `upstream_status_${this.status}`, estimated: false }, Finish.End);
    }
    tap.end();
    // An error reported inside a stream: the client's connection is destroyed, never ended
    // cleanly, so no client mistakes the partial answer for a complete one.
    if (tap.failure !== null) return this.commit(m, { usage: undefined, error: tap.failure, estimated: false }, this.streamed ? Finish.Destroy : Finish.End);
    // Usage that cannot be read completely and unambiguously is never taken as it is: what was
    // read is kept and the rest estimated, with the reason in the record.
    const reading = tap.reading;
    if (reading.problem === null) return this.commit(m, { usage: reading.usage, error: null, estimated: false }, Finish.End);
    this.estimateAndCommit(m, Finish.End, reading, reading.problem);
  }

  /** complete(): keeps what this turn wrote on the client's socket until the response's end. */
  private corkLastRead(): void {
    const socket = this.res.socket;
    if (this.clientGone || socket === null || socket.writableCorked === 0) return;
    socket.cork();
    this.lastCorked = true;
  }

  private error(err: Error): void {
    if (this.settled) return;
    const m = this.metering;
    if (this.graceExpired) {
      this.settled = true;
      // We stopped the provider ourselves, long after the client left. A provider error is
      // never billed, however long its body took; otherwise bill what we saw (a Messages
      // stream's input usage is already final; its output is not).
      if (m === null) return;
      if (this.credentialRefused) return this.refused(m, Finish.Nothing);
      if (this.attemptAnswered && this.status >= 300) {
        this.commit(m, { usage: undefined, error: `upstream_status_${this.status}`, estimated: false }, Finish.Nothing);
      } else this.estimateAndCommit(m, Finish.Nothing, this.tap?.reading, 'client_gone');
      return;
    }
    if (!this.attemptAnswered) {
      // Stopped by ourselves: its client left (a call neither billed nor listed is not read on).
      if (this.clientGone) return this.ended();
      // Nothing came back: the provider could not be reached, or never answered. Sent again only
      // when the request was not written whole (the provider cannot have started the work).
      this.rotation!.noAnswer(this.credential!, this.requestSent);
      log('warn', 'upstream_unavailable', { requestId: this.requestId, provider: this.credential!.provider, credential: this.credential!.name, error: err.message });
      if (!this.requestSent && this.sendAgain()) return;
      return this.ended();
    }
    // A refusal whose body was cut: its head said it all (another attempt may follow).
    if (this.credentialRefused || this.refusedHeld()) {
      if (this.sendAgain()) return;
      return this.ended();
    }
    // The provider cut the body: never end the client's response as though it were complete.
    this.settled = true;
    this.clearGrace();
    if (m === null) {
      this.finish = Finish.Destroy;
      return this.answer();
    }
    // As on success, the record is committed before the client hears the outcome.
    this.commit(m, { usage: undefined, error: 'upstream_cut', estimated: false }, Finish.Destroy);
  }

  /** This attempt's answer is a refusal retry.ts allows to retry, and none of it went out yet. */
  private refusedHeld(): boolean {
    return this.attemptAnswered && this.held !== null && retriedStatus(this.status) && !this.res.headersSent;
  }

  /**
   * The held refusal, as it is answered again while its (credential, model) rests: a copy, so
   * that it does not keep the provider's whole read buffers.
   */
  private keptAnswer(): KeptAnswer {
    return { status: this.status, contentType: this.contentType, body: Buffer.concat(this.held!, this.heldBytes) };
  }

  // ── commit ──────────────────────────────────────────────────────────────

  /** From the store's group commit: the record is committed; now the client may have the end. */
  committed(error: unknown): void {
    this.recordCommitted = true;
    try {
      if (error) {
        log('error', 'usage_record_failed', { requestId: this.recordId(), error: String(error) });
        this.finish = Finish.Destroy;
      }
      this.answer();
    } catch (err) {
      this.call.fail(err);
    }
  }

  /**
   * Ends the call on a throw of the gateway's own (server.ts `failed`, which logged it): the
   * provider's request is stopped, the call recorded as `internal_error` at zero cost (which
   * settles its hold) unless its record is already queued, and the client answered 500
   * `internal_error` when nothing was sent yet, else its connection cut.
   */
  fault(_err: unknown): void {
    const finish = this.res.headersSent ? Finish.Destroy : Finish.Internal;
    // The gateway's own 500 carries the gateway's request id: so does the record.
    if (finish === Finish.Internal) this.upstreamRequestId = undefined;
    this.settled = true;
    this.clearGrace();
    this.clearStall();
    this.last = null;
    this.held = null;
    const abort = this.abortUpstream;
    this.abortUpstream = null;
    this.resumeUpstream = null;
    abort?.(new Error('internal_error'));
    const m = this.metering;
    if (this.recordCommitted || m === null) {
      this.finish = finish;
      return this.answer();
    }
    // Its record is on its way to the store: the client is answered once it is committed.
    if (this.recordQueued) {
      this.finish = finish;
      return;
    }
    try {
      this.commit(m, { usage: undefined, error: 'internal_error', estimated: false }, finish);
    } catch {
      // Not even a record could be made: the hold is released, and the client cut or answered.
      m.store.release(m.key, this.requestId);
      this.finish = finish;
      this.answer();
    }
  }

  // ── client side ─────────────────────────────────────────────────────────

  resume(): void {
    try {
      this.blocked = false;
      this.clearStall();
      this.resumeUpstream?.();
    } catch (err) {
      this.call.fail(err);
    }
  }

  /** The client's connection stopped taking bytes: it has clientStallMs to drain. */
  private block(): void {
    this.blocked = true;
    if (this.stallTimer !== null) return;
    this.stallTimer = setTimeout(onStall, this.clientStallMs, this);
    this.stallTimer.unref();
  }

  private clearStall(): void {
    if (this.stallTimer !== null) {
      clearTimeout(this.stallTimer);
      this.stallTimer = null;
    }
  }

  /**
   * The client accepted no bytes for clientStallMs: it is treated as gone. Destroying its
   * connection closes the response, and clientClosed() does the rest as for any client that
   * left: the provider is resumed and read to its end (the call billed from its usage) or, after
   * the grace period, stopped and estimated. A call already complete is billed already.
   */
  stalled(): void {
    try {
      this.stallTimer = null;
      if (!this.blocked || this.res.writableFinished) return;
      log('warn', 'client_stalled', { requestId: this.requestId });
      this.res.destroy();
    } catch (err) {
      this.call.fail(err);
    }
  }

  /** The client's connection closed. Before completion, that means the client left. */
  clientClosed(): void {
    try {
      this.closed();
    } catch (err) {
      this.call.fail(err);
    }
  }

  private closed(): void {
    this.clearStall();
    if (this.res.writableFinished || this.settled) return;
    this.clientGone = true;
    this.held = null;
    if (this.metering === null) {
      this.abortUpstream?.();
      return;
    }
    // Keep reading the provider's answer so the call is billed from the usage it reports;
    // after the grace period, stop the provider and bill an estimate instead.
    this.resumeUpstream?.();
    this.graceTimer = setTimeout(graceOver, this.metering.clientGoneGraceMs, this);
    this.graceTimer.unref();
  }

  /** For graceOver's timer. */
  graceOver(): void {
    try {
      this.graceExpired = true;
      this.abortUpstream?.(new Error('client gone; grace period over'));
    } catch (err) {
      this.call.fail(err);
    }
  }

  // ── helpers ─────────────────────────────────────────────────────────────

  /** Holds a plain answer's chunk; past HOLD_LIMIT, starts streaming what is held. */
  private hold(chunk: Buffer): boolean {
    const held = this.held!;
    held.push(chunk);
    this.heldBytes += chunk.length;
    if (this.heldBytes <= HOLD_LIMIT) return true;
    this.held = null;
    this.res.writeHead(this.status, this.responseHeaders!);
    let flowing = true;
    for (const part of held) flowing = this.res.write(part);
    if (!flowing) this.block();
    return flowing;
  }

  /** Tells the client how the call ended, once (after the commit for metered calls). */
  private answer(): void {
    const res = this.res;
    switch (this.finish) {
      case Finish.End:
        if (this.clientGone) return;
        if (this.held === null) {
          const last = this.last;
          this.last = null;
          if (last === null) res.end();
          else res.end(last);
          return;
        }
        // The whole plain answer in one write, with its length.
        this.responseHeaders!.push('content-length', String(this.heldBytes));
        res.writeHead(this.status, this.responseHeaders!);
        res.end(this.held.length === 1 ? this.held[0] : Buffer.concat(this.held, this.heldBytes));
        return;
      case Finish.Destroy:
        this.sendLast();
        res.destroy();
        return;
      case Finish.Unavailable:
        if (!this.clientGone) sendError(res, 'upstream_unavailable', this.requestId);
        return;
      case Finish.CredentialRefused:
        if (!this.clientGone) sendErrorNotToRetry(res, 'upstream_unavailable', this.requestId);
        return;
      case Finish.Internal:
        if (this.clientGone || res.destroyed) return;
        if (res.headersSent) {
          this.sendLast();
          res.destroy();
        } else sendError(res, 'internal_error', this.requestId);
        return;
      case Finish.Nothing:
        return;
    }
  }

  /**
   * A call the provider refused with its 401 (and no other credential answered): recorded
   * (metered calls) as the client saw it, a 502 `upstream_unavailable` at zero cost, then
   * answered so.
   */
  private refused(m: Metering | null, finish: Finish): void {
    this.finish = finish;
    if (m === null) return this.answer();
    this.commit(m, { usage: undefined, error: 'upstream_unavailable', estimated: false }, finish);
  }

  /** A call no provider answered (none could be reached, or none may be sent to): the gateway's 502. */
  private unreachable(m: Metering | null): void {
    this.refused(m, Finish.Unavailable);
  }

  private clearGrace(): void {
    if (this.graceTimer !== null) clearTimeout(this.graceTimer);
  }

  /** The request id the client was given: the provider's once its head went out, else the gateway's. */
  shownRequestId(): string {
    return this.res.headersSent ? this.recordId() : this.requestId;
  }

  private recordId(): string {
    return this.upstreamRequestId ?? this.requestId;
  }

  /**
   * The status recorded for a call the provider never answered: 502 when it could not be
   * reached (what the client was told); 499, "client closed request", when the client left and
   * the grace period ran out before any answer, so the provider was stopped.
   */
  private statusWithoutAnswer(o: Outcome): number {
    return this.clientGone && o.error !== 'upstream_unavailable' ? CLIENT_CLOSED_REQUEST : 502;
  }

  private estimateAndCommit(m: Metering, finish: Finish, reading: Reading | undefined, reason: string): void {
    const tap = this.tap;
    const sample = tap?.stream === true ? tap.outputSample() : { text: '', chars: 0 };
    estimateUsage(reading, m.request.body, { stream: tap?.stream ?? m.requestedStream, text: sample.text, chars: sample.chars, bytesSeen: tap?.bytesSeen ?? 0 })
      .then(
        (usage) => this.commit(m, { usage, error: null, estimated: true, estimateReason: reason }, finish),
        (err: unknown) => {
          log('error', 'estimate_failed', { requestId: this.recordId(), error: String(err) });
          this.commit(m, { usage: undefined, error: 'estimate_failed', estimated: false }, finish);
        },
      )
      .catch((err: unknown) => this.call.fail(err));
  }

  /** Queues the usage record for the store's group commit; `committed()` follows. */
  private commit(m: Metering, o: Outcome, finish: Finish): void {
    this.finish = finish;
    const u = o.error === null ? o.usage : undefined;
    const charge = u === undefined ? NO_CHARGE : chargeFor(u, m.model.price, m.key.mode);
    // An answer reporting a lever the price cannot price was billed at the price's highest rate:
    // the record says the cost is an estimate, and why.
    const unpriced = charge.unpricedLevers.length > 0;
    const record: UsageRecord = {
      at: m.startedAt,
      callId: this.requestId,
      requestId: this.recordId(),
      endpoint: m.format.endpoint,
      // The id the client sent (an alias is recorded as itself; it is priced as its entry).
      model: m.request.model,
      stream: this.headersReceived ? this.streamed : m.requestedStream,
      status: o.error === 'internal_error' ? 500 : this.headersReceived ? this.status : this.statusWithoutAnswer(o),
      inputTokens: u?.input ?? 0,
      outputTokens: u?.output ?? 0,
      cachedInputTokens: u?.cachedInput ?? 0,
      cacheWriteTokens: u?.cacheWrite ?? 0,
      reasoningTokens: u?.reasoning ?? 0,
      costNano: m.key.mode === 'credit' ? charge.nano : null,
      tokensCharged: u === undefined ? 0 : u.input + u.output,
      error: o.error,
      estimated: u !== undefined && (o.estimated || unpriced),
      clientGone: this.clientGone,
      ...usageDetail(u, o.estimateReason ?? (unpriced ? UNPRICED_LEVER : null), charge, m.model.price),
      attempts: this.attempts,
      credential: (this.answeredBy ?? this.credential)?.name ?? null,
    };
    noteRecord(this.call, record);
    // A response the provider stores becomes the account's in the same commit as the charge,
    // recorded with the credential that made it (calls on it go there: server.ts).
    const made = this.tap?.responseId ?? null;
    m.store.record(m.key, record, charge, this, true, made === null ? null : { id: made, provider: m.model.provider.name, credential: this.answeredBy!.name });
    this.recordQueued = true;
  }
}

const NO_CHARGE = { nano: 0, tokens: 0, worstCase: null, longContext: false, unpricedLevers: [] };
/** The estimate reason of a call whose answer reported a lever its price has no rate for. */
const UNPRICED_LEVER = 'unpriced_lever';

/** The grace period after the client left is over: the provider is stopped (see clientClosed). */
function graceOver(exchange: Exchange): void {
  exchange.graceOver();
}

/** sendAgain's next tick (a shared function: nothing allocated per call). */
function dispatchAgain(exchange: Exchange, credential: Credential): void {
  exchange.dispatchAgainNow(credential);
}
const CLIENT_CLOSED_REQUEST = 499;
