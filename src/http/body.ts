import type { IncomingMessage } from 'node:http';

export const TOO_LARGE = Symbol('too large');

/**
 * Reads the request body once, whole, up to `max` bytes. The same bytes are later forwarded
 * unchanged. Resolves to undefined when the client goes away first.
 */
export function readBody(req: IncomingMessage, max: number): Promise<Buffer | typeof TOO_LARGE | undefined> {
  return new Promise((resolve) => {
    const declared = Number(req.headers['content-length']);
    if (declared > max) {
      req.resume();
      resolve(TOO_LARGE);
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > max) {
        req.off('data', onData);
        req.resume();
        resolve(TOO_LARGE);
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)));
    req.once('error', () => resolve(undefined));
    req.once('aborted', () => resolve(undefined));
  });
}
