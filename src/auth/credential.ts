import type { IncomingHttpHeaders } from 'node:http';

/**
 * The client's key, from one of the two carriers:
 * `Authorization: Bearer <key>` wins; `x-api-key` is read only when Authorization is absent or
 * is not a Bearer value. Returns undefined when there is no credential at all.
 * The value is returned exactly as sent (no trimming inside the Bearer value), so a padded key
 * fails the format check as an unknown key.
 */
export function credentialOf(headers: IncomingHttpHeaders): string | undefined {
  const authorization = headers.authorization;
  if (authorization !== undefined && authorization.length > 7 && isBearerScheme(authorization)) {
    return authorization.slice(7);
  }
  const apiKey = headers['x-api-key'];
  if (typeof apiKey === 'string' && apiKey.length > 0) return apiKey;
  return undefined;
}

/** "Bearer " with the scheme matched case-insensitively (RFC 9110 §11.1). */
function isBearerScheme(value: string): boolean {
  return value.charCodeAt(6) === 32 && value.slice(0, 6).toLowerCase() === 'bearer';
}
