import type { IncomingMessage } from 'node:http';
import type { GatewayErrorCode } from './errors.js';

/**
 * What the gateway refuses in a request head that Node's HTTP parser lets through, before any
 * route is known (answered like the parser's own refusals, http/client-error.ts: the envelope,
 * then the connection closed):
 *
 * - more header fields than `limits.maxHeaderCount`: 431 `headers_too_large`. Node's own limit
 *   (`server.maxHeadersCount`) is turned off (server.ts) because it is not exact on Node 20,
 *   which keeps header lines in batches and silently drops those past the limit (an
 *   `Authorization` among them would answer `missing_api_key`), where Node 24 refuses the
 *   request; counted here, the limit is the same on both;
 * - a request line without an HTTP version, which Node reads as HTTP/0.9: 400 `malformed_request`;
 * - an HTTP/1.1 request without `Host`, or any with more than one (RFC 9112 §3.2): 400
 *   `malformed_request` (Node keeps the first `Host` of several and drops the others silently).
 */
export function headRefusal(req: IncomingMessage, maxHeaderCount: number): GatewayErrorCode | null {
  const raw = req.rawHeaders;
  if (raw.length > maxHeaderCount * 2) return 'headers_too_large';
  if (req.httpVersionMajor !== 1) return 'malformed_request';
  let hosts = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === 4 && name.toLowerCase() === 'host') hosts++;
  }
  if (hosts > 1 || (hosts === 0 && req.httpVersionMinor === 1)) return 'malformed_request';
  return null;
}
