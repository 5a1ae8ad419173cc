import { request } from 'node:http';

/**
 * Sends a POST and leaves: after `afterBytes` bytes of the response body have arrived (0:
 * before the response starts, once the request is sent), the socket is destroyed, as a client
 * that crashed or gave up would. Resolves when the client is gone.
 */
export function postAndLeave(url: string, key: string, body: unknown, afterBytes: number, leaveAfterMs = 0): Promise<number> {
  return new Promise((resolve, reject) => {
    const payload = Buffer.from(JSON.stringify(body));
    const req = request(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': payload.length },
    });
    let received = 0;
    const leave = (): void => {
      req.destroy();
      resolve(received);
    };
    req.on('error', () => resolve(received));
    req.on('response', (res) => {
      if (afterBytes === 0) return leave();
      res.on('data', (d: Buffer) => {
        received += d.length;
        if (received >= afterBytes) leave();
      });
      res.on('end', () => reject(new Error('the response ended before the client left')));
    });
    req.end(payload);
    if (afterBytes === 0 && leaveAfterMs > 0) setTimeout(leave, leaveAfterMs);
  });
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
