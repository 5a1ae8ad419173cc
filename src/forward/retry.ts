/**
 * When a call is sent again, as pure rules (the exchange applies them, forward/exchange.ts).
 *
 * A provider bills the work it did: a call is sent again only when the provider cannot have
 * done any — the connection failed before the request was written whole, or the provider
 * refused it in its head with a status both official SDKs retry themselves (408, 409, 429, 500,
 * 502, 503, 504, 529) — and only while nothing of the answer has reached the client. Never after
 * a 2xx head, never once a stream has begun, never after a time-out once the request was written.
 */

/** The statuses the official SDKs retry (openai-node and anthropic-sdk-typescript `shouldRetry`). */
export function retriedStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || (status >= 500 && status <= 504 && status !== 501) || status === 529;
}

/**
 * How long a 429 asks to wait, in ms, from its raw head (undici's name, value, … Buffers):
 * `retry-after-ms` (OpenAI's, milliseconds), else `retry-after` (seconds, or an HTTP date read
 * against `now`); -1 when it says nothing readable. Read only for 429s, never on the way of a
 * 2xx.
 */
export function retryAfterMs(raw: readonly Buffer[], now: number): number {
  let seconds: string | undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length !== 14 && name.length !== 11) continue;
    const lower = name.toString('latin1').toLowerCase();
    if (lower === 'retry-after-ms') {
      const ms = Number(raw[i + 1]!.toString('latin1').trim());
      if (Number.isFinite(ms) && ms >= 0) return Math.ceil(ms);
    } else if (lower === 'retry-after') seconds = raw[i + 1]!.toString('latin1').trim();
  }
  if (seconds === undefined || seconds === '') return -1;
  if (/^\d+(\.\d+)?$/.test(seconds)) return Math.ceil(Number(seconds) * 1000);
  // An HTTP date names its weekday and month. Anything else (a negative number, which
  // Date.parse would read as a year) says nothing readable: the rest is then the gateway's own.
  if (!/[a-z]/i.test(seconds)) return -1;
  const date = Date.parse(seconds);
  return Number.isNaN(date) ? -1 : Math.max(0, date - now);
}
