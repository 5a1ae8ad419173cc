import type { IncomingMessage } from 'node:http';

export const TOO_LARGE = Symbol('too large');
/** The inspector refused the body before its end (the rest is discarded as it arrives). */
export const REFUSED = Symbol('refused');

/** Sees each chunk of a body as it arrives; false refuses the body from that chunk on. */
export interface BodyInspector {
  write(chunk: Buffer): boolean;
}

/**
 * Above this size a body that arrived in several chunks is handed to undici as its chunk list
 * rather than joined: joining 30 MB is one copy of 30 MB on the event loop (3–20 ms measured
 * here), joining 1 MiB about 0.1 ms.
 */
const JOIN_LIMIT = 1024 * 1024;

/**
 * A request body as received: the socket's chunks, kept as they came (no copy), forwarded as
 * the same bytes. Spans are absolute byte offsets.
 */
export class RequestBody {
  constructor(readonly chunks: readonly Buffer[], readonly length: number) {}

  static of(bytes: Buffer): RequestBody {
    return new RequestBody([bytes], bytes.length);
  }

  /** Bytes [start, end): a view when they lie in one chunk, else a copy of just those bytes. */
  slice(start: number, end: number): Buffer {
    let at = 0;
    for (let i = 0; i < this.chunks.length; i++) {
      const chunk = this.chunks[i]!;
      const next = at + chunk.length;
      if (start < next) {
        if (end <= next) return chunk.subarray(start - at, end - at);
        const parts = [chunk.subarray(start - at)];
        let copied = next - start;
        for (let j = i + 1; copied < end - start; j++) {
          const part = this.chunks[j]!.subarray(0, end - start - copied);
          parts.push(part);
          copied += part.length;
        }
        return Buffer.concat(parts, end - start);
      }
      at = next;
    }
    return Buffer.alloc(0);
  }

  /** The offset of the first `byte` in the body, or -1. */
  indexOf(byte: number): number {
    let at = 0;
    for (const chunk of this.chunks) {
      const i = chunk.indexOf(byte);
      if (i !== -1) return at + i;
      at += chunk.length;
    }
    return -1;
  }

  /** Whether `bytes` occur in the body, also across the boundary of two chunks. */
  includes(bytes: Buffer): boolean {
    const keep = bytes.length - 1;
    let tail: Buffer = Buffer.alloc(0); // the last `keep` bytes before the current chunk
    for (const chunk of this.chunks) {
      if (chunk.includes(bytes)) return true;
      if (keep === 0) continue;
      if (tail.length > 0 && Buffer.concat([tail, chunk.subarray(0, keep)]).includes(bytes)) return true;
      tail = chunk.length >= keep ? chunk.subarray(chunk.length - keep) : Buffer.concat([tail, chunk]).subarray(-keep);
    }
    return false;
  }

  /** Bytes [start, end) decoded as UTF-8 (the whole body by default). */
  text(start = 0, end = this.length): string {
    return this.slice(start, end).toString('utf8');
  }

  /** The body with bytes [start, end) replaced by `insert`; every other byte is shared, not copied. */
  splice(start: number, end: number, insert: Buffer): RequestBody {
    const chunks: Buffer[] = [];
    let at = 0;
    let inserted = false;
    for (const chunk of this.chunks) {
      const next = at + chunk.length;
      if (next <= start || at >= end) {
        if (at >= end && !inserted) {
          chunks.push(insert);
          inserted = true;
        }
        chunks.push(chunk);
      } else {
        if (at < start) chunks.push(chunk.subarray(0, start - at));
        if (!inserted) {
          chunks.push(insert);
          inserted = true;
        }
        if (next > end) chunks.push(chunk.subarray(end - at));
      }
      at = next;
    }
    if (!inserted) chunks.push(insert);
    return new RequestBody(chunks.filter((c) => c.length > 0), this.length - (end - start) + insert.length);
  }

  /**
   * What undici is given: one Buffer, or for a large body in several chunks the chunk list
   * itself (undici writes an iterable body chunk by chunk; the caller sends `content-length`).
   */
  forUpstream(): Buffer | readonly Buffer[] {
    if (this.chunks.length === 1) return this.chunks[0]!;
    if (this.length <= JOIN_LIMIT) return Buffer.concat(this.chunks as Buffer[], this.length);
    return this.chunks;
  }
}

/** The inspector threw (a fault of the gateway's own): the body's call ends with it (server.ts). */
export class InspectorFault {
  constructor(readonly error: unknown) {}
}

/**
 * How reading a body ended: the body, TOO_LARGE, REFUSED, an InspectorFault, or undefined when
 * the client went away first.
 */
export type BodyOutcome = RequestBody | typeof TOO_LARGE | typeof REFUSED | InspectorFault | undefined;

/** Told once how a body's reading ended, with the owner the read was started for. */
export type BodyDone<T> = (owner: T, outcome: BodyOutcome) => void;

/**
 * Bytes of request bodies shown to inspectors per turn of the event loop, across all requests.
 * libuv reads up to 32 × 64 KiB from each ready socket in one poll phase: ten large bodies
 * arriving at once put 20 MB before the next timer, ≈ 60 ms of scanning in one turn, and every
 * other caller waited that long (bench/hostile-body.ts). Past this budget a chunk waits for the
 * next turn (setImmediate, after the other callers' I/O); a small body is scanned at once.
 */
const TURN_BUDGET = 256 * 1024;

/** The scanning work of the current turn, shared by every body being read. */
const turn = {
  spent: 0,
  /** Bodies with chunks waiting for budget, served in turn, one chunk at a time. */
  waiting: [] as BodyRead[],
  scheduled: false,
};

/** The next turn resets the budget and serves the bodies waiting for it. */
function schedule(): void {
  if (!turn.scheduled) {
    turn.scheduled = true;
    setImmediate(nextTurn);
  }
}

function nextTurn(): void {
  turn.scheduled = false;
  turn.spent = 0;
  const waiting = turn.waiting;
  while (waiting.length > 0 && turn.spent < TURN_BUDGET) {
    const read = waiting.shift()!;
    if (read.scanNext() && read.unscanned.length > 0) waiting.push(read);
  }
  if (waiting.length > 0 || turn.spent > 0) schedule();
}

/** One body being read: every chunk kept, each shown to the inspector in order. */
class BodyRead {
  readonly chunks: Buffer[] = [];
  size = 0;
  /** Chunks kept but not yet shown to the inspector (waiting for a turn with budget left). */
  readonly unscanned: Buffer[] = [];
  private ended = false;
  private done = false;

  constructor(
    private readonly req: IncomingMessage,
    private readonly max: number,
    private readonly inspector: BodyInspector,
    private readonly owner: unknown,
    private readonly tell: BodyDone<unknown>,
  ) {}

  /**
   * Shows a chunk to the inspector; false when it refused the body or threw, and the read is
   * over. A throw is caught here: it comes from an event listener or the turn's setImmediate,
   * where it would end the process.
   */
  private inspect(chunk: Buffer): boolean {
    let accepted: boolean;
    try {
      accepted = this.inspector.write(chunk);
    } catch (err) {
      this.stop(new InspectorFault(err));
      return false;
    }
    if (!accepted) this.stop(REFUSED);
    return accepted;
  }

  data(chunk: Buffer): void {
    if (this.done) return;
    this.size += chunk.length;
    if (this.size > this.max) return this.stop(TOO_LARGE);
    this.chunks.push(chunk);
    schedule();
    if (this.unscanned.length === 0 && turn.spent < TURN_BUDGET) {
      turn.spent += chunk.length;
      this.inspect(chunk);
      return;
    }
    this.unscanned.push(chunk);
    if (this.unscanned.length === 1) turn.waiting.push(this);
  }

  end(): void {
    this.ended = true;
    if (this.unscanned.length === 0) this.finish(new RequestBody(this.chunks, this.size));
  }

  /** Shows the next waiting chunk to the inspector; false once this read is over. */
  scanNext(): boolean {
    if (this.done) return false;
    const chunk = this.unscanned.shift()!;
    turn.spent += chunk.length;
    if (!this.inspect(chunk)) return false;
    if (this.unscanned.length === 0 && this.ended) this.finish(new RequestBody(this.chunks, this.size));
    return true;
  }

  finish(outcome: BodyOutcome): void {
    if (this.done) return;
    this.done = true;
    this.unscanned.length = 0;
    this.tell(this.owner, outcome);
  }

  /** Refused before the end: the rest is read and dropped, so the connection stays usable. */
  private stop(verdict: typeof TOO_LARGE | typeof REFUSED | InspectorFault): void {
    this.chunks.length = 0;
    this.req.resume();
    this.finish(verdict);
  }
}

/**
 * Reads the request body once, up to `max` bytes, showing every chunk to `inspector` as it
 * arrives (within the turn's scanning budget), so that the work of reading a large body is
 * spread over the turns its chunks arrive in. Tells `done` (with `owner`) the body (the same
 * bytes are later forwarded), TOO_LARGE, REFUSED (the inspector said no), an InspectorFault,
 * or undefined when the client goes away first; TOO_LARGE is told before this returns. After
 * TOO_LARGE, REFUSED or a fault the rest of the body is read and discarded, so the client can
 * read the answer on a connection that stays usable. A callback rather than a promise: no
 * promise, and no async function suspended on it, per request.
 */
export function readBody<T>(req: IncomingMessage, max: number, inspector: BodyInspector, owner: T, done: BodyDone<T>): void {
  const declared = Number(req.headers['content-length']);
  if (declared > max) {
    req.resume();
    return done(owner, TOO_LARGE);
  }
  (req as ReadRequest)[kRead] = new BodyRead(req, max, inspector, owner, done as BodyDone<unknown>);
  // The same four functions for every request, kept with `on` (a read ignores whatever comes
  // after it finished): no closure or `once` wrapper per request.
  req.on('data', onData);
  req.on('end', onEnd);
  req.on('error', onGone);
  req.on('aborted', onGone);
}

const kRead = Symbol('tollgate.bodyRead');
type ReadRequest = IncomingMessage & { [kRead]: BodyRead };

function onData(this: ReadRequest, chunk: Buffer): void {
  this[kRead].data(chunk);
}
function onEnd(this: ReadRequest): void {
  this[kRead].end();
}
/** The client went away (or its stream failed) before the body ended. */
function onGone(this: ReadRequest): void {
  this[kRead].finish(undefined);
}

/**
 * The body of a request whose every declared byte has already arrived (with its head, in the
 * same read of the socket), taken now, synchronously, and shown to `inspector` whole; null when
 * it has not all arrived (or has no content-length, or is larger than `limit`): it is then read
 * as it arrives, with readBody. Called at the end of the I/O callback that parsed the request's
 * head (process.nextTick from the 'request' event: Node's parser pushes the body bytes of the
 * same read after that event), before anything else has read from `req`.
 */
export function bodyAtHand(req: IncomingMessage, limit: number, inspector: BodyInspector): RequestBody | typeof REFUSED | InspectorFault | null {
  const declared = Number(req.headers['content-length']);
  if (!(declared <= limit) || req.readableLength !== declared || req.readableFlowing !== null || req.destroyed) return null;
  const bytes = (req.read() as Buffer | null) ?? Buffer.alloc(0);
  // Nothing is left to read: flowing, the stream ends (its 'end') as the parser completes it.
  req.resume();
  try {
    if (bytes.length > 0 && !inspector.write(bytes)) return REFUSED;
  } catch (err) {
    return new InspectorFault(err);
  }
  return RequestBody.of(bytes);
}
