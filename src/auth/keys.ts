import { hash as oneShotHash, randomBytes } from 'node:crypto';

export const KEY_PREFIX = 'gw_live_';
/** `gw_live_` + 32 lowercase hex: anything else (truncated, wrapped, re-cased, padded) is simply unknown. */
export const KEY_FORMAT = /^gw_live_[0-9a-f]{32}$/;
/** How much of a key is ever shown: `gw_live_` + 4 hex. */
export const DISPLAY_PREFIX_LENGTH = 12;

export function isWellFormedKey(candidate: string): boolean {
  return candidate.length === 40 && KEY_FORMAT.test(candidate);
}

/** A new secret from the CSPRNG: 128 bits of entropy. */
export function generateKey(): string {
  return KEY_PREFIX + randomBytes(16).toString('hex');
}

/**
 * How keys are stored: SHA-256, hex. A key carries 128 random bits, so a fast hash is enough
 * (a slow password hash protects low-entropy secrets; it would only cost latency here).
 * `crypto.hash` is the one-shot form, cheaper than createHash().update().digest().
 */
export function hashKey(key: string): string {
  return oneShotHash('sha256', key, 'hex');
}

export function displayPrefix(key: string): string {
  return key.slice(0, DISPLAY_PREFIX_LENGTH);
}
