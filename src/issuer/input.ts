import type { Config } from '../config/types.js';
import { formatUsdExact, parseUsd } from '../money.js';
import { MAX_ACCOUNT_AMOUNT } from '../domain/rules.js';
import type { KeyMode } from '../domain/types.js';
import { fieldError, IssuerError } from './errors.js';
import { parseExpiry } from '../issuer/expiry.js';

/**
 * The issuer's input rules, shared by `tollgate keys …` (values are the flags' text) and the
 * admin API (values are JSON: numbers may come as numbers, lists as arrays).
 */

/** A whole number within bounds, from text (or a JSON integer); undefined when it is not one. */
export function parseWhole(value: unknown, min: number, max = Number.MAX_SAFE_INTEGER): number | undefined {
  const text = typeof value === 'number' && Number.isSafeInteger(value) ? String(value) : value;
  if (typeof text !== 'string' || !/^\d+$/.test(text)) return undefined;
  const n = Number(text);
  return n >= min && n <= max ? n : undefined;
}

export function wholeField(value: unknown, field: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'string' && typeof value !== 'number') throw fieldError('invalid_field', field, 'needs a whole number');
  const n = parseWhole(value, min, max);
  if (n !== undefined) return n;
  if (wholeValue(value) === undefined) throw fieldError('invalid_field', field, `needs a whole number, got '${String(value)}'`);
  throw fieldError('invalid_field', field, `must be from ${min} to ${max}`);
}

/**
 * A whole number as written, whatever its size (digits, or a JSON integer), else undefined: one
 * too large to be exact is still well formed, and is refused as too large, not as malformed.
 */
function wholeValue(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isInteger(value) && value >= 0 ? value : undefined;
  return typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : undefined;
}

/** A budget or a top-up in tokens: a whole number, at most what a key can hold. */
function tokensField(value: unknown, field: string, min: number): number {
  const n = wholeValue(value);
  if (n !== undefined && n > MAX_ACCOUNT_AMOUNT) throw tooLarge(field, String(value), `${MAX_ACCOUNT_AMOUNT} tokens`);
  return wholeField(value, field, min);
}

/** Decimal USD, exactly, as nUSD: "5", "12.50", up to 9 decimals, at most what a key can hold. */
export function usdField(value: unknown, field: string, positive: boolean): number {
  const text = typeof value === 'number' && Number.isFinite(value) ? String(value) : value;
  if (typeof text !== 'string') throw fieldError('invalid_field', field, 'needs an amount in USD like 5 or 12.50');
  if (/^\s*\d+\.\d{10,}\s*$/.test(text)) throw fieldError('invalid_field', field, `has more than 9 decimals ('${text}'): amounts are exact to the nano-dollar, 0.000000001 USD`);
  const nano = parseUsd(text);
  // Well formed but past the exact range (parseUsd gives up on it): said as such.
  if (nano === undefined && /^\d+(?:\.\d{1,9})?$/.test(text.trim())) throw tooLarge(field, text, `${formatUsdExact(MAX_ACCOUNT_AMOUNT)} USD`);
  if (nano === undefined || (positive && nano === 0)) throw fieldError('invalid_field', field, `must be ${positive ? 'a positive' : 'an'} amount in USD like 5 or 12.50, got '${text}'`);
  return nano;
}

function tooLarge(field: string, text: string, most: string): IssuerError {
  return fieldError('invalid_field', field, `is too large: a key can hold at most ${most}, got '${text}'`);
}

/**
 * A model allowlist: a comma-separated list (command line) or an array (API); every id in the
 * catalogue. An alias stands for its entry and is kept as the entry's id (the allowlist covers
 * the entry and all its aliases).
 */
export function modelsField(value: unknown, config: Config | null, field = 'models'): string[] {
  let ids: string[];
  if (typeof value === 'string') ids = value.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
  else if (Array.isArray(value) && value.every((v) => typeof v === 'string')) ids = value.map((s) => s.trim()).filter((s) => s.length > 0);
  else throw fieldError('invalid_field', field, 'needs a list of model ids');
  if (ids.length === 0) throw fieldError('invalid_field', field, 'needs at least one model id');
  if (config !== null) {
    ids = ids.map((id) => {
      const model = config.modelsByName.get(id);
      if (model === undefined) throw new IssuerError('unknown_model', field, () => `unknown model '${id}' (see: tollgate models list)`);
      return model.id;
    });
  }
  return [...new Set(ids)];
}

export function rpmField(value: unknown): number {
  return wholeField(value, 'rpm', 1, 1_000_000);
}

/** Calls of the key in flight at once. */
export function concurrencyField(value: unknown): number {
  return wholeField(value, 'concurrency', 1, 1_000_000);
}

export function expiresField(value: unknown, allowNever: boolean): number | null {
  if (typeof value !== 'string') throw fieldError('invalid_field', 'expires', `needs an ISO-8601 date or date-time${allowNever ? ' or never' : ''}`);
  if (allowNever && value === 'never') return null;
  return parseExpiry(value);
}

/**
 * Characters a key's name may not hold: C0 and C1 controls, DEL, the line and paragraph
 * separators, and the text-direction controls (the marks U+061C, U+200E, U+200F, the embeddings
 * and overrides U+202A–U+202E, the isolates U+2066–U+2069). The first break a line, move the
 * cursor or recolour a terminal, so a name holding one could make `keys list` or `audit` print a
 * row of its own making; the last reorder how the rest of the row reads. Joiners (U+200C, U+200D)
 * stay: scripts and emoji need them.
 */
export const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

function nameField(value: unknown): string {
  if (typeof value !== 'string') throw fieldError('invalid_field', 'name', 'needs a text');
  const bad = CONTROL_CHARACTERS.exec(value);
  if (bad !== null) throw fieldError('invalid_field', 'name', `must not contain control characters, line breaks or text-direction controls (U+${bad[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')} at character ${bad.index + 1})`);
  return value;
}

export interface CreateInput { mode?: unknown; balance?: unknown; budget?: unknown; models?: unknown; rpm?: unknown; concurrency?: unknown; expires?: unknown; name?: unknown }

export interface CreatePlan {
  mode: KeyMode;
  /** Opening balance (nUSD) or budget (tokens). */
  amount: number;
  models: string[] | null;
  rpm: number | null;
  concurrency: number | null;
  expiresAt: number | null;
  name: string | null;
}

/** `keys create`: everything checked before anything is written. `config` null skips the catalogue check (the remote CLI leaves it to the server). */
export function createPlan(input: CreateInput, config: Config | null): CreatePlan {
  const mode = input.mode;
  if (mode === undefined) throw new IssuerError('missing_field', 'mode', (n) => `${n('mode')} is needed: credit or token`);
  if (mode !== 'credit' && mode !== 'token') throw fieldError('invalid_field', 'mode', `must be credit or token, got '${String(mode)}'`);
  let amount: number;
  if (mode === 'credit') {
    if (input.budget !== undefined) throw new IssuerError('conflicting_fields', 'budget', (n) => `${n('budget')} is for token keys; credit keys take ${n('balance')} USD`);
    if (input.balance === undefined) throw new IssuerError('missing_field', 'balance', (n) => `a credit key needs ${n('balance')} USD`);
    amount = usdField(input.balance, 'balance', false);
  } else {
    if (input.balance !== undefined) throw new IssuerError('conflicting_fields', 'balance', (n) => `${n('balance')} is for credit keys; token keys take ${n('budget')} TOKENS`);
    if (input.budget === undefined) throw new IssuerError('missing_field', 'budget', (n) => `a token key needs ${n('budget')} TOKENS`);
    amount = tokensField(input.budget, 'budget', 0);
  }
  return {
    mode,
    amount,
    models: input.models === undefined || input.models === null ? null : modelsField(input.models, config),
    rpm: input.rpm === undefined || input.rpm === null ? null : rpmField(input.rpm),
    concurrency: input.concurrency === undefined || input.concurrency === null ? null : concurrencyField(input.concurrency),
    expiresAt: input.expires === undefined || input.expires === null ? null : expiresField(input.expires, false),
    name: input.name === undefined || input.name === null ? null : nameField(input.name),
  };
}

/** `keys set`: `undefined` leaves a setting as it is; `null` clears it (all models, no rpm or concurrency limit). */
export interface SettingsPlan { models?: string[] | null; rpm?: number | null; concurrency?: number | null; name?: string }

export interface SettingsInput { models?: unknown; rpm?: unknown; concurrency?: unknown; name?: unknown }

export function settingsPlan(input: SettingsInput, config: Config | null): SettingsPlan {
  const plan: SettingsPlan = {};
  if (input.models !== undefined) plan.models = input.models === null ? null : modelsField(input.models, config);
  if (input.rpm !== undefined) plan.rpm = input.rpm === null ? null : rpmField(input.rpm);
  if (input.concurrency !== undefined) plan.concurrency = input.concurrency === null ? null : concurrencyField(input.concurrency);
  if (input.name !== undefined) plan.name = nameField(input.name);
  return plan;
}

/** `keys topup`: exactly one of usd (credit keys) and tokens (token keys). */
export interface TopUpPlan { usdNano: number | null; tokens: number | null }

export function topUpPlan(input: { usd?: unknown; tokens?: unknown }): TopUpPlan {
  if ((input.usd === undefined) === (input.tokens === undefined)) {
    throw new IssuerError(input.usd === undefined ? 'missing_field' : 'conflicting_fields', input.usd === undefined ? 'usd' : 'tokens',
      (n) => `a top-up needs exactly one of ${n('usd')} AMOUNT or ${n('tokens')} N`);
  }
  return {
    usdNano: input.usd === undefined ? null : usdField(input.usd, 'usd', true),
    tokens: input.tokens === undefined ? null : tokensField(input.tokens, 'tokens', 1),
  };
}
