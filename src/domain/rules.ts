import type { Account, KeyMode, KeyRecord, Refusal } from './types.js';

/**
 * Whether a known key may call this surface now: steps 4 and 5 of the spec's order of checks
 * (status, then expiry, then surface).
 */
export function keyRefusal(key: KeyRecord, surface: KeyMode, now: number): Refusal | null {
  if (key.status !== 'active') return 'key_suspended';
  // "Past its expiry": the expiry instant itself is the key's last working moment.
  if (key.expiresAt !== null && now > key.expiresAt) return 'key_expired';
  if (key.mode !== surface) return 'invalid_api_key';
  return null;
}

/**
 * Step 6: a credit key with no balance left, or a token key with its budget used up, once
 * the holds of its calls in flight are counted as spent. Placing a hold (store/lmdb.ts) checks
 * the same rule again, atomically, so of the calls that pass here at once only those that find
 * funds left are forwarded.
 */
export function fundsRefusal(account: Account | undefined): 'insufficient_credit' | 'token_budget_exhausted' | null {
  if (account === undefined) return null;
  if (account.mode === 'credit') return account.balanceNano - account.held <= 0 ? 'insufficient_credit' : null;
  return account.usedTokens + account.held >= account.budgetTokens ? 'token_budget_exhausted' : null;
}

/** Step 9: the model must be on the key's allowlist when it has one. */
export function modelAllowed(key: KeyRecord, model: string): boolean {
  return key.models === null || key.models.length === 0 || key.models.includes(model);
}
