import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Refusal } from '../domain/types.js';
import { noteCode } from '../observe/call.js';
import { CORS_RESPONSE_HEADERS, withRequestId } from './headers.js';

/**
 * The gateway's own errors: the spec's twelve, plus those of our own design where the spec
 * leaves the matter open: `request_too_large` (maximum size), `concurrency_limit_exceeded`
 * (per-key concurrency, interface.md), `store_unavailable` (the store failed: fail closed),
 * `internal_error` (a fault inside the gateway: a 500 of its own, so that a bug is never
 * reported as the provider's `upstream_unavailable`), `unpriced_option` (a request using a
 * priced option the model's price cannot price), `unsupported_option` (a reference to an object
 * stored on the provider's account, which every key shares, or `background: true`),
 * `previous_response_not_found` and
 * `response_not_found` (a stored response of another account, or of none: the same answer either
 * way), and for requests refused before any route is known, by Node's HTTP parser or by the
 * gateway's own checks of the head: `malformed_request`, `headers_too_large`, `request_timeout`
 * (see http/client-error.ts, http/request-head.ts).
 *
 * Each entry: status, type, message, and the request member the error is about (`param`) where
 * there is one; `param` is null otherwise.
 */
export const GATEWAY_ERRORS = {
  missing_api_key: [401, 'invalid_request_error', 'No API key was provided. Send it as "Authorization: Bearer <key>" or in the "x-api-key" header.'],
  invalid_api_key: [401, 'invalid_request_error', 'The API key is not valid for this endpoint.'],
  key_suspended: [403, 'permission_error', 'This API key has been suspended by its issuer.'],
  key_expired: [403, 'permission_error', 'This API key has expired.'],
  model_not_allowed: [403, 'permission_error', 'This API key is not allowed to use the requested model.'],
  model_not_available: [403, 'permission_error', 'The requested model is not available on this endpoint.'],
  model_required: [400, 'invalid_request_error', 'The request body must be a JSON object with one top-level string field "model".'],
  insufficient_credit: [402, 'insufficient_quota', 'This API key has no credit left. Ask its issuer for a top-up.'],
  token_budget_exhausted: [402, 'insufficient_quota', 'This API key has used up its token budget. Ask its issuer to renew it.'],
  rate_limit_exceeded: [429, 'rate_limit_error', 'This API key is over its requests-per-minute limit. Retry after the number of seconds in the retry-after header.'],
  unknown_endpoint: [404, 'invalid_request_error', 'Unknown endpoint. Use POST /chat/completions, /responses or /messages, or GET /models under /v1 (credit) or /token/v1 (token).'],
  upstream_unavailable: [502, 'api_error', 'The model provider could not be reached. Nothing was billed.'],
  request_too_large: [413, 'invalid_request_error', 'The request body is larger than this gateway accepts.'],
  concurrency_limit_exceeded: [429, 'rate_limit_error', 'This API key has as many calls in flight as it may have at once. Retry when one of them has finished.'],
  store_unavailable: [503, 'api_error', 'The gateway cannot reach its store right now, so it cannot check or bill this call. Nothing was forwarded or billed. Retry shortly.'],
  internal_error: [500, 'api_error', 'The gateway failed while handling this request. Nothing was billed; quote the x-request-id when reporting it.'],
  unpriced_option: [400, 'invalid_request_error', 'This request uses an option that changes what the provider charges, and this gateway has no price for it on this model. Leave the option out, or ask the gateway\'s operator to price it.'],
  unsupported_option: [400, 'invalid_request_error', 'This request refers to an object stored on the provider\'s account, or asks for a background response; this gateway forwards neither.'],
  malformed_request: [400, 'invalid_request_error', 'The request is not valid HTTP/1.1 (bad request line, header or body framing). A key pasted with a line break is a common cause.'],
  headers_too_large: [431, 'invalid_request_error', 'The request headers are larger, or more numerous, than this gateway accepts.'],
  request_timeout: [408, 'invalid_request_error', 'The request did not arrive in time.'],
  previous_response_not_found: [400, 'invalid_request_error', 'previous_response_id does not name a response made with this API key (or another key of its account) through this gateway, or that response is older than the gateway keeps it. Send the conversation in full instead.', 'previous_response_id'],
  response_not_found: [404, 'invalid_request_error', 'No response with this id was made with this API key (or another key of its account) through this gateway.'],
} as const;

export type GatewayErrorCode = keyof typeof GATEWAY_ERRORS;

/** Every refusal of the store is one of these codes (a compile-time check, nothing at run time). */
export type RefusalsAreCodes = Refusal extends GatewayErrorCode ? true : never;
const refusalsAreCodes: RefusalsAreCodes = true;
void refusalsAreCodes;

/** One entry of GATEWAY_ERRORS: status, type, message and, for some, the member the error is about. */
type ErrorEntry = readonly [status: number, type: string, message: string, param?: string];

function entryOf(code: GatewayErrorCode): ErrorEntry {
  return GATEWAY_ERRORS[code];
}

interface PreparedError { status: number; body: Buffer; headers: string[] }

/** Bodies are built once at start-up: an error costs one write, no JSON.stringify. */
const PREPARED = new Map<GatewayErrorCode, PreparedError>(
  (Object.keys(GATEWAY_ERRORS) as GatewayErrorCode[]).map((code) => {
    const [status, type, message, param] = entryOf(code);
    const body = Buffer.from(JSON.stringify({ error: { message, type, code, param: param ?? null } }));
    return [code, {
      status,
      body,
      // no-store: a refusal is about this key at this moment, never something to cache.
      headers: ['content-type', 'application/json', 'content-length', String(body.length), 'cache-control', 'no-store', ...CORS_RESPONSE_HEADERS],
    }];
  }),
);

export function errorBody(code: GatewayErrorCode): Buffer {
  return PREPARED.get(code)!.body;
}

/**
 * Sends one of the gateway's errors with a message naming what was wrong (built per call: only
 * for rare refusals whose message says which option of the request caused them).
 */
export function sendErrorSaying(res: ServerResponse, code: GatewayErrorCode, requestId: string, message: string): void {
  const [status, type, , param] = entryOf(code);
  noteCode(res, code);
  const body = Buffer.from(JSON.stringify({ error: { message, type, code, param: param ?? null } }));
  res.writeHead(status, withRequestId(['content-type', 'application/json', 'content-length', String(body.length), 'cache-control', 'no-store', ...CORS_RESPONSE_HEADERS], requestId));
  res.end(body);
}

/** Sends one of the gateway's errors; `retryAfter` (seconds) goes with `rate_limit_exceeded`. */
export function sendError(res: ServerResponse, code: GatewayErrorCode, requestId: string, retryAfter?: number): void {
  const e = PREPARED.get(code)!;
  noteCode(res, code);
  const headers = retryAfter === undefined
    ? withRequestId(e.headers, requestId)
    : [...e.headers, 'x-request-id', requestId, 'retry-after', String(retryAfter)];
  res.writeHead(e.status, headers);
  res.end(e.body);
}

/**
 * One of the gateway's errors that a retry would meet again: `x-should-retry: false` tells both
 * official SDKs not to retry it, whatever its status.
 */
export function sendErrorNotToRetry(res: ServerResponse, code: GatewayErrorCode, requestId: string): void {
  const e = PREPARED.get(code)!;
  noteCode(res, code);
  res.writeHead(e.status, [...e.headers, 'x-request-id', requestId, 'x-should-retry', 'false']);
  res.end(e.body);
}

/**
 * One of the gateway's errors as a whole HTTP/1.1 message, for the few places that answer on the
 * bare socket because Node has no response object to give (its parser refused the request). The
 * connection is closed after it: the stream of requests on it can no longer be trusted.
 */
export function rawErrorResponse(code: GatewayErrorCode, requestId: string, extraHeader?: readonly [string, string]): string {
  const e = PREPARED.get(code)!;
  let head = `HTTP/1.1 ${e.status} ${STATUS_CODES[e.status]}\r\n`;
  for (let i = 0; i < e.headers.length; i += 2) head += `${e.headers[i]}: ${e.headers[i + 1]}\r\n`;
  if (extraHeader !== undefined) head += `${extraHeader[0]}: ${extraHeader[1]}\r\n`;
  return `${head}x-request-id: ${requestId}\r\nconnection: close\r\n\r\n${e.body.toString('latin1')}`;
}
