import { randomBytes } from 'node:crypto';

// A random per-process stem and a counter: unique across workers and restarts, and a counter
// increment instead of a CSPRNG call per request.
const stem = `req_${randomBytes(6).toString('hex')}`;
let counter = 0;

/** The gateway's own request id, used when the provider sends none and for gateway errors. */
export function nextRequestId(): string {
  counter = (counter + 1) | 0;
  return `${stem}${(counter >>> 0).toString(36).padStart(6, '0')}`;
}
