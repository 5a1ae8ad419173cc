/**
 * HTTP/1.1 over a bare socket, for tests that must send what no HTTP client would (broken
 * framing, folded headers, half-sent requests) or watch a connection's life (when the server
 * closes it).
 */
import { connect, type Socket } from 'node:net';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** The port of an http://host:port base URL. */
export function portOf(base: string): number {
  return Number(new URL(base).port);
}

/**
 * Opens a connection; resolves once connected. A reset later shows as the connection's close
 * (tests watch for that), not as an error.
 */
export function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.off('error', reject);
      socket.on('error', () => {});
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

/**
 * Parses as many complete HTTP/1.1 responses as `data` holds (bodies framed by content-length
 * or chunked encoding; no body for `noBody` methods such as HEAD). `rest` is what is left over:
 * an incomplete or unparseable tail.
 */
export function parseResponses(data: Buffer, noBody = false): { responses: RawResponse[]; rest: Buffer } {
  const responses: RawResponse[] = [];
  let at = 0;
  for (;;) {
    const end = data.indexOf('\r\n\r\n', at);
    if (end === -1) break;
    const lines = data.subarray(at, end).toString('latin1').split('\r\n');
    const m = /^HTTP\/1\.[01] (\d{3})(?: .*)?$/.exec(lines[0]!);
    if (m === null) break;
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      if (colon <= 0) return { responses, rest: data.subarray(at) };
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    let bodyStart = end + 4;
    const status = Number(m[1]);
    let body: Buffer;
    if (noBody || status === 204 || status === 304) {
      body = Buffer.alloc(0);
    } else if (headers['content-length'] !== undefined) {
      const length = Number(headers['content-length']);
      if (data.length < bodyStart + length) break;
      body = data.subarray(bodyStart, bodyStart + length);
      bodyStart += length;
    } else if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
      const parts: Buffer[] = [];
      let p = bodyStart;
      let complete = false;
      for (;;) {
        const lineEnd = data.indexOf('\r\n', p);
        if (lineEnd === -1) break;
        const size = parseInt(data.subarray(p, lineEnd).toString('latin1'), 16);
        if (Number.isNaN(size)) break;
        if (size === 0) {
          const trailerEnd = data.indexOf('\r\n\r\n', lineEnd);
          if (trailerEnd === -1) break;
          p = trailerEnd + 4;
          complete = true;
          break;
        }
        if (data.length < lineEnd + 2 + size + 2) break;
        parts.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
        p = lineEnd + 2 + size + 2;
      }
      if (!complete) break;
      body = Buffer.concat(parts);
      bodyStart = p;
    } else {
      // Delimited by the close of the connection.
      body = data.subarray(bodyStart);
      bodyStart = data.length;
    }
    responses.push({ status, headers, body });
    at = bodyStart;
  }
  return { responses, rest: data.subarray(at) };
}

/**
 * Sends `bytes` on a new connection, half-closes it, and collects everything the server sends
 * until it closes the connection. `reset` is true when the connection ended with an error
 * (a reset) rather than a clean close.
 */
export function exchange(port: number, bytes: Buffer | string): Promise<{ data: Buffer; reset: boolean }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let reset = false;
    const socket = connect(port, '127.0.0.1', () => {
      socket.end(bytes);
    });
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ECONNREFUSED') reject(err);
      reset = true;
    });
    socket.on('close', () => resolve({ data: Buffer.concat(chunks), reset }));
  });
}

/**
 * Reads from `socket` until `done(received)` says the awaited part has arrived; resolves with
 * everything received so far. Rejects if the connection closes first.
 */
export function readUntil(socket: Socket, done: (received: Buffer) => boolean): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let received = Buffer.alloc(0);
    const onData = (d: Buffer): void => {
      received = Buffer.concat([received, d]);
      if (done(received)) {
        cleanup();
        resolve(received);
      }
    };
    const onClose = (): void => {
      cleanup();
      reject(new Error(`connection closed after ${received.length} bytes: ${received.toString('latin1').slice(0, 300)}`));
    };
    const cleanup = (): void => {
      socket.off('data', onData);
      socket.off('close', onClose);
    };
    socket.on('data', onData);
    socket.on('close', onClose);
  });
}

/** The next whole response on `socket` (see readUntil: rejects if the connection closes first). */
export async function nextResponse(socket: Socket): Promise<RawResponse> {
  return parseResponses(await readUntil(socket, (d) => parseResponses(d).responses.length === 1)).responses[0]!;
}

/** The stem of the gateway's own request id (`req_` + 12 hex): the same for every call a process serves. */
export function processStem(response: RawResponse): string {
  return response.headers['x-request-id']!.slice(0, 16);
}

/**
 * Resolves when the server closes `socket` (a close of either kind). The socket is set reading,
 * so that the server's end is seen behind whatever data comes first.
 */
export function closed(socket: Socket): Promise<void> {
  return new Promise((resolve) => {
    if (socket.destroyed) return resolve();
    socket.once('close', () => resolve());
    socket.resume();
  });
}

/** The bytes of a POST with a JSON body and a bearer key, as a client would send them. */
export function postBytes(path: string, key: string | null, body: string | Buffer, extra: string[] = []): Buffer {
  const payload = typeof body === 'string' ? Buffer.from(body) : body;
  const head = [
    `POST ${path} HTTP/1.1`,
    'host: 127.0.0.1',
    'content-type: application/json',
    `content-length: ${payload.length}`,
    ...(key === null ? [] : [`authorization: Bearer ${key}`]),
    ...extra,
  ].join('\r\n');
  return Buffer.concat([Buffer.from(`${head}\r\n\r\n`), payload]);
}
