import { connect, type Socket } from 'node:net';

/**
 * A client that sends a POST and later leaves, at a point the test chooses, over a bare socket.
 *
 * Leaving is a half-close: the client closes its side and waits until the gateway closes its own,
 * which Node's server does when it sees the client's end — the moment the gateway's response
 * 'close' fires and the call becomes a client-gone call. So when `leave()` resolves, the gateway
 * has seen the client go, and a test that then lets the mock provider go on knows the order of
 * the two events instead of racing them.
 */
export interface LeavingClient {
  /** Resolves once the response head and `count` whole server-sent events have arrived. */
  events(count: number): Promise<void>;
  /** Leaves; resolves once the gateway has closed the connection. */
  leave(): Promise<void>;
}

export function startCall(url: string, key: string, body: unknown): Promise<LeavingClient> {
  const { hostname, port, pathname } = new URL(url);
  const payload = Buffer.from(JSON.stringify(body));
  const head = [
    `POST ${pathname} HTTP/1.1`, `host: ${hostname}`, 'content-type: application/json',
    `content-length: ${payload.length}`, `authorization: Bearer ${key}`, '', '',
  ].join('\r\n');
  return new Promise((resolve, reject) => {
    const socket: Socket = connect(Number(port), hostname, () => {
      socket.write(Buffer.concat([Buffer.from(head), payload]));
      resolve(client);
    });
    socket.once('error', reject);
    let received = Buffer.alloc(0);
    let waiting: { count: number; resolve: () => void } | null = null;
    const isClosed = new Promise<void>((resolveClosed) => socket.once('close', () => resolveClosed()));
    const check = (): void => {
      if (waiting !== null && eventsIn(received) >= waiting.count) {
        const w = waiting;
        waiting = null;
        w.resolve();
      }
    };
    socket.on('data', (d: Buffer) => {
      received = Buffer.concat([received, d]);
      check();
    });
    const client: LeavingClient = {
      events(count) {
        return new Promise((resolveEvents, rejectEvents) => {
          waiting = { count, resolve: resolveEvents };
          check();
          void isClosed.then(() => rejectEvents(new Error(`closed before ${count} events: ${received.toString('latin1').slice(0, 300)}`)));
        });
      },
      leave() {
        socket.end();
        return isClosed;
      },
    };
  });
}

/** Whole server-sent events in a response received so far (head, then a chunked body). */
function eventsIn(data: Buffer): number {
  const headEnd = data.indexOf('\r\n\r\n');
  if (headEnd === -1) return 0;
  let body = '';
  let at = headEnd + 4;
  for (;;) {
    const lineEnd = data.indexOf('\r\n', at);
    if (lineEnd === -1) break;
    const size = parseInt(data.subarray(at, lineEnd).toString('latin1'), 16);
    if (Number.isNaN(size) || size === 0 || data.length < lineEnd + 2 + size) break;
    body += data.subarray(lineEnd + 2, lineEnd + 2 + size).toString('utf8');
    at = lineEnd + 2 + size + 2;
  }
  return body.split('\n\n').length - 1;
}

/** Polls until `check` returns a value other than undefined (or throws after `ms`). */
export async function eventually<T>(check: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}
