import type { Endpoint } from '../config/types.js';

export type KeyMode = 'credit' | 'token';
export type KeyStatus = 'active' | 'suspended';

/** A key as stored: the secret itself is never stored, only its SHA-256 (`hash`). */
export interface KeyRecord {
  id: string;
  hash: string;
  /** The first 12 characters of the secret (`gw_live_` + 4 hex): the only part ever shown. */
  prefix: string;
  name: string | null;
  mode: KeyMode;
  /** Model allowlist; null means every enabled model. */
  models: string[] | null;
  /** Requests per minute; null means no limit. */
  rpm: number | null;
  /** Calls of this key in flight at once (streams until their last byte); null means no limit. */
  concurrency: number | null;
  /** Epoch milliseconds after which the key is expired; null means never. */
  expiresAt: number | null;
  status: KeyStatus;
  createdAt: number;
  /** The balance or budget this key draws on; keys made by `rotate` share their original's. */
  account: string;
  rotatedFrom: string | null;
}

/** A balance (credit mode, exact nUSD, see money.ts) or a token budget (token mode). */
export interface Account {
  mode: KeyMode;
  balanceNano: number;
  budgetTokens: number;
  usedTokens: number;
  /**
   * What the calls in flight hold against the account, in its own unit (nUSD for credit,
   * tokens for token): each call's worst case, released when the call is settled.
   */
  held: number;
}

/** One forwarded request, as the usage checker lists it. */
export interface UsageRecord {
  at: number;
  /**
   * The gateway's own id for the call: the record's identity (unique per call, whatever the
   * provider sends as its request id).
   */
  callId: string;
  /** The provider's request id when it sent one, else the gateway's (what the client saw). */
  requestId: string;
  endpoint: Endpoint | 'models';
  model: string;
  stream: boolean;
  status: number;
  /** All input tokens, cached reads and cache writes included. */
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
  cacheWriteTokens: number;
  reasoningTokens: number;
  /** What the call cost in nUSD (credit keys); null for token keys. */
  costNano: number | null;
  tokensCharged: number;
  error: string | null;
  estimated: boolean;
  clientGone: boolean;
  // ── kept since usage is read completely and priced by lever (older records: 0 / null / false) ──
  /** Of cacheWriteTokens: writes to the 1-hour cache. */
  cacheWrite1hTokens: number;
  /** Of inputTokens / outputTokens: audio and image tokens. */
  audioInputTokens: number;
  imageInputTokens: number;
  audioOutputTokens: number;
  imageOutputTokens: number;
  /** Calls of fee-bearing server tools by fee name; null when there were none. */
  toolCalls: Record<string, number> | null;
  /** The service tier the provider reported, or null. */
  serviceTier: string | null;
  /** Why the tokens were estimated (usage-read.ts markers, or `client_gone`); null when they were read. */
  estimateReason: string | null;
  /** What was charged at the price's highest rate because the price has no rate for it (charge.ts); null when nothing was. */
  worstCase: string | null;
  /** Priced at the model's long-context rates. */
  longContext: boolean;
}

/** The token-kind and pricing fields of a record that used none of the special kinds. */
export const PLAIN_USAGE_DETAIL = Object.freeze({
  cacheWrite1hTokens: 0, audioInputTokens: 0, imageInputTokens: 0, audioOutputTokens: 0, imageOutputTokens: 0,
  toolCalls: null, serviceTier: null, estimateReason: null, worstCase: null, longContext: false,
}) satisfies Partial<UsageRecord>;

/**
 * The owner record of a response the provider stores (Responses), kept by (account id, response
 * id): only that account's keys may name the response again. Where it lives is kept with it, so
 * that later calls on it go where it is.
 */
export interface ResponseOwner {
  /** The provider that made it (its name in the config). */
  provider: string;
  /** The provider credential it was made with (by name, never its value; `default` for a provider's one credential). */
  credential: string;
  /** When the call that made it started (epoch ms): what retention counts from. */
  at: number;
}

/** Per key and UTC day, for the usage checker's chart. */
export interface DailyTotals {
  requests: number;
  costNano: number;
  tokens: number;
  byModel: Record<string, { requests: number; costNano: number; tokens: number }>;
}
