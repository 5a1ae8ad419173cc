import type { IncomingHttpHeaders } from 'node:http';

/**
 * The client's key, from one of the two carriers:
 * `Authorization: Bearer <key>` wins; `x-api-key` is read only when Authorization is absent or
 * is not a Bearer value. Returns undefined when there is no credential at all.
 * The scheme is matched case-insensitively and may be followed by one or more spaces (RFC 9110
 * §11.4: `auth-scheme 1*SP token68`); the value itself is returned exactly as sent, so a key
 * with whitespace inside (a wrapped or padded key) fails the format check as an unknown key.
 */
export function credentialOf(headers: IncomingHttpHeaders): string | undefined {
  const bearer = bearerToken(headers.authorization);
  if (bearer !== undefined) return bearer;
  const apiKey = headers['x-api-key'];
  if (typeof apiKey === 'string' && apiKey.length > 0) return apiKey;
  return undefined;
}

/** The token of an `Authorization: Bearer <token>` value (the scheme in any case, then one or more spaces), else undefined. */
export function bearerToken(authorization: string | undefined): string | undefined {
  if (authorization === undefined || authorization.length <= 7 || !isBearerScheme(authorization)) return undefined;
  let start = 7;
  while (authorization.charCodeAt(start) === 32) start++;
  // Node trims a header value's trailing whitespace, so spaces alone never reach this point.
  return authorization.slice(start);
}

/** "Bearer " with the scheme matched case-insensitively (RFC 9110 §11.1). */
function isBearerScheme(value: string): boolean {
  return value.charCodeAt(6) === 32 && value.slice(0, 6).toLowerCase() === 'bearer';
}
