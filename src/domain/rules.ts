import { PLAIN_USAGE_DETAIL, type Account, type KeyMode, type KeyRecord, type Refusal, type UsageRecord } from './types.js';

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
 * the holds of its calls in flight are counted as spent. Placing a hold (store/lmdb/ledger.ts, the Lua script HOLD) checks
 * the same rule again, atomically, so of the calls that pass here at once only those that find
 * funds left are forwarded.
 */
export function fundsRefusal(account: Account | undefined): 'insufficient_credit' | 'token_budget_exhausted' | null {
  if (account === undefined) return null;
  if (account.mode === 'credit') return account.balanceNano - account.held <= 0 ? 'insufficient_credit' : null;
  return account.usedTokens + account.held >= account.budgetTokens ? 'token_budget_exhausted' : null;
}

/**
 * The most an account may hold: a balance in nUSD, a budget in tokens. Past it a JS number (and
 * a double in the Redis scripts) no longer holds every integer, so a sum could lose units
 * silently: a key is never created with more, and a top-up that would take it past is refused.
 */
export const MAX_ACCOUNT_AMOUNT = Number.MAX_SAFE_INTEGER;

/**
 * Whether adding `amount` to `current` (both safe integers) would pass MAX_ACCOUNT_AMOUNT,
 * worked out without the sum itself, which may not be exact.
 */
export function passesMaxAmount(current: number, amount: number): boolean {
  return current > MAX_ACCOUNT_AMOUNT - amount;
}

/** Step 9: the model must be on the key's allowlist when it has one. */
export function modelAllowed(key: KeyRecord, model: string): boolean {
  return key.models === null || key.models.length === 0 || key.models.includes(model);
}

/** The status recorded for a call settled after its process died (the client saw its connection drop). */
export const INTERRUPTED_STATUS = 500;

/** What a call in flight left when its process died: enough to settle it (both backends keep this much). */
export interface InterruptedCall {
  callId: string;
  at: number;
  endpoint: string;
  model: string;
  stream: boolean;
  /** The input tokens its charge stands for (estimated from the request's size). */
  inputTokens: number;
  /** Its charge if interrupted, in its account's unit. */
  charge: number;
}

/**
 * The record of a call whose process died with it in flight: `error: "interrupted"`, estimated,
 * charged its input estimate (the provider received the request and bills its input; what it
 * produced never reached anyone whole) and no output. `credit`: its account is a credit account
 * (the charge is nUSD), else a token account (the charge is tokens).
 */
export function interruptedRecord(call: InterruptedCall, credit: boolean): UsageRecord {
  return {
    at: call.at, callId: call.callId, requestId: call.callId, endpoint: call.endpoint as UsageRecord['endpoint'], model: call.model, stream: call.stream,
    status: INTERRUPTED_STATUS, inputTokens: call.inputTokens, outputTokens: 0, cachedInputTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0,
    costNano: credit ? call.charge : null, tokensCharged: credit ? 0 : call.charge, error: 'interrupted', estimated: true, clientGone: false,
    ...PLAIN_USAGE_DETAIL, estimateReason: 'interrupted',
    // Its process died with it: how many sends it took, and with which credential, died too.
    attempts: 1, credential: null,
  };
}

/**
 * Step 10: a model is served when its run-time switch (`tollgate models enable|disable`) says
 * so, and, without a switch entry, when the config file's `enabled` does (`byDefault`). The Lua
 * scripts restate it (`sw == '1' or (not sw and default == '1')`).
 */
export function modelSwitchedOn(switched: boolean | undefined, byDefault: boolean): boolean {
  return switched ?? byDefault;
}

/**
 * Step 7's rate window: fixed, RATE_WINDOW_MS long, starting with the first request after the
 * previous window ended. The Lua admission script restates it (`now >= start + 60000`).
 */
export const RATE_WINDOW_MS = 60_000;

/** Whether the window that started at `start` is over at `now` (this request then starts a new one). */
export function windowOver(start: number, now: number): boolean {
  return now >= start + RATE_WINDOW_MS;
}

/** The seconds a 429 of a full window carries in `retry-after`: until the window ends, at least 1. */
export function retryAfterSeconds(start: number, now: number): number {
  return Math.max(1, Math.ceil((start + RATE_WINDOW_MS - now) / 1000));
}
