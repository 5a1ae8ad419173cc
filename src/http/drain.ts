import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * The calls in flight, for a shutdown that waits for them and for nothing else.
 *
 * `server.close()` stops accepting and closes the connections idle at that moment, but a
 * keep-alive connection whose call ends later stays open (measured before this module: three
 * streams ended 0.55 s after SIGTERM, the process exited only when the 30 s drain limit ran out).
 * While draining, every call in flight therefore closes its connection as it ends: a response
 * not yet begun carries `connection: close` (Node then closes the connection after it), and one
 * already under way has its connection closed once its last byte is written. When the last
 * call in flight has ended, `onIdle` runs: nothing is left to wait for.
 */
export class Drain {
  private active = false;
  /**
   * The responses in flight, each in a slot of its own (its index kept on the response), with
   * the slots freed by finished responses reused. Not a Set: a Set that every call enters and
   * leaves is rebuilt every few dozen calls, and a rebuilt table left behind in the old
   * generation keeps the responses it listed alive through young collections until the next
   * full one. Measured at c=32 (`npm run bench` load, `--trace-gc-nvp`): with a Set, 98 % of
   * what survived a young collection was promoted (about 3 MB each time, 7.4 KB per call, a
   * full collection every 0.7 s, GC 13–15 µs per call); with slots, 2–2.5 µs per call.
   */
  private readonly slots: (ServerResponse | null)[] = [];
  private readonly freeSlots: number[] = [];
  /** One listener shared by every response (no closure per request). */
  private readonly untrack: (this: ServerResponse) => void;
  private onIdle: (() => void) | null = null;

  constructor() {
    const drain = this;
    this.untrack = function untrack(this: Tracked): void {
      const slot = this[SLOT];
      // Called once per response: a pipelined one can end both by its own close and its socket's.
      if (slot === undefined) return;
      this[SLOT] = undefined;
      drain.slots[slot] = null;
      drain.freeSlots.push(slot);
      if (drain.active && drain.inFlight() === 0) drain.idle();
    };
  }

  /** Counts a call from its request until its response closes. */
  track(req: IncomingMessage, res: ServerResponse): void {
    const slot = this.freeSlots.pop() ?? this.slots.length;
    this.slots[slot] = res;
    (res as Tracked)[SLOT] = slot;
    res.on('close', this.untrack);
    // A pipelined request's response waits for the one before it and has no socket yet; should
    // the connection close first, that response never closes (measured: Node 20 emits no
    // 'close' for it), so the connection's close ends the call.
    if (res.socket === null) {
      const socket = req.socket;
      const untrack = (): void => this.untrack.call(res);
      socket.once('close', untrack);
      res.once('close', () => socket.off('close', untrack));
    }
    // A request that arrives during shutdown on a connection still open is answered, then closed.
    if (this.active) closeAfter(res);
  }

  /** Starts draining; `onIdle` runs once no call is in flight (at once if none is). */
  start(onIdle: () => void): void {
    if (this.active) return;
    this.active = true;
    this.onIdle = onIdle;
    for (const res of this.slots) if (res !== null) closeAfter(res);
    if (this.inFlight() === 0) this.idle();
  }

  /** Calls in flight: the slots taken. */
  private inFlight(): number {
    return this.slots.length - this.freeSlots.length;
  }

  private idle(): void {
    const onIdle = this.onIdle;
    this.onIdle = null;
    onIdle?.();
  }
}

const SLOT = Symbol('drain slot');

/** A response in flight, with the index of its slot. */
type Tracked = ServerResponse & { [SLOT]?: number | undefined };

/** The connection of `res` closes once `res` is complete. */
function closeAfter(res: ServerResponse): void {
  if (!res.headersSent) {
    // Merged into the header list the handler later passes to writeHead.
    res.setHeader('connection', 'close');
    return;
  }
  // Headers already sent with keep-alive: close the socket after the response's last byte.
  // (With no socket the response has finished and its connection is idle: server.close() closes it.)
  const socket = res.socket;
  if (socket !== null) res.once('finish', () => socket.destroySoon());
}
