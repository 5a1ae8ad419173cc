import type { IncomingHttpHeaders } from 'node:http';

/**
 * Header rules, as pure functions and tables built once. Only what is listed crosses the
 * gateway; everything else is dropped in both directions.
 */

/** Added to every response: scripts on any origin may call the gateway and read x-request-id. */
export const CORS_RESPONSE_HEADERS: readonly string[] = [
  'access-control-allow-origin', '*',
  'access-control-expose-headers', 'x-request-id',
];

/** The request headers a preflight may announce (the spec's list, with the real vendor names). */
export const PREFLIGHT_ALLOWED_HEADERS = [
  'authorization', 'content-type', 'x-api-key',
  'anthropic-version', 'anthropic-beta', 'openai-beta', 'openai-organization', 'x-request-id',
];

/** A prepared header list plus this response's request id (every response carries one). */
export function withRequestId(headers: readonly string[], requestId: string): string[] {
  return [...headers, 'x-request-id', requestId];
}

export const PREFLIGHT_RESPONSE_HEADERS: readonly string[] = [
  ...CORS_RESPONSE_HEADERS,
  'access-control-allow-methods', 'GET, POST, DELETE, OPTIONS',
  'access-control-allow-headers', PREFLIGHT_ALLOWED_HEADERS.join(', '),
  'access-control-max-age', '86400',
  'content-length', '0',
];

/**
 * Client request headers forwarded upstream. The client's credential headers are absent by
 * construction (the provider's own credential is added instead). `accept-encoding` is absent
 * on purpose: the usage tap reads the provider's bytes, and `content-encoding` is not among the
 * response headers passed back. `openai-organization`/`openai-project` name the client's own
 * OpenAI account, not the gateway's, so they are not forwarded either.
 */
export const FORWARDED_REQUEST_HEADERS: readonly string[] = [
  'content-type', 'accept', 'anthropic-version', 'anthropic-beta', 'openai-beta', 'idempotency-key',
];

/** The request headers for the provider: the allowlisted client headers plus the provider's credential. */
export function upstreamRequestHeaders(
  client: IncomingHttpHeaders,
  credential: readonly [string, string],
  defaults: readonly [string, string][],
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of FORWARDED_REQUEST_HEADERS) {
    const value = client[name];
    if (typeof value === 'string') out[name] = value;
  }
  for (const [name, value] of defaults) if (out[name] === undefined) out[name] = value;
  out[credential[0]] = credential[1];
  return out;
}

export interface UpstreamResponseHeaders {
  contentType: string | undefined;
  requestId: string | undefined;
}

/**
 * Picks the two provider headers that are passed back (content-type, x-request-id) out of
 * undici's raw header list (name, value, name, value … as Buffers), without building a
 * headers object for the dozens of headers that are dropped.
 */
export function pickUpstreamHeaders(raw: Buffer[]): UpstreamResponseHeaders {
  let contentType: string | undefined;
  let requestId: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === 12) {
      const lower = name.toString('latin1').toLowerCase();
      if (lower === 'content-type') contentType = raw[i + 1]!.toString('latin1');
      else if (lower === 'x-request-id') requestId = raw[i + 1]!.toString('latin1');
    }
  }
  return { contentType, requestId };
}

/** The response headers sent to the client for a forwarded call. */
export function clientResponseHeaders(picked: UpstreamResponseHeaders, requestId: string, stream: boolean): string[] {
  const headers = picked.contentType === undefined ? [] : ['content-type', picked.contentType];
  headers.push('x-request-id', picked.requestId ?? requestId, ...CORS_RESPONSE_HEADERS);
  if (stream) headers.push('cache-control', 'no-cache, no-transform');
  return headers;
}
