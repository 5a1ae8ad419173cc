import type { Endpoint } from '../config/types.js';

/**
 * The domain's records: what the pipeline, the issuer, the usage views and the store all speak
 * of. The ground floor: it imports nothing of the project but the endpoint names.
 */

export type KeyMode = 'credit' | 'token';

/**
 * Why the store refuses a call (steps 3–10 of the order of checks, and a store that failed):
 * each one of the gateway's error codes (http/errors.ts, which checks that it is).
 */
export type Refusal =
  | 'invalid_api_key' | 'key_suspended' | 'key_expired' | 'insufficient_credit' | 'token_budget_exhausted' | 'rate_limit_exceeded'
  | 'concurrency_limit_exceeded' | 'model_not_allowed' | 'model_not_available' | 'previous_response_not_found' | 'store_unavailable';
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
  /** The speed the provider reported (Anthropic's `usage.speed`), or null. */
  speed: string | null;
  /** Where the call was processed: the geography the provider reported (`usage.inference_geo`), else the provider's region; null for neither. */
  inferenceGeo: string | null;
  /** Why the tokens were estimated (usage-read.ts markers, or `client_gone`); null when they were read. */
  estimateReason: string | null;
  /** What was charged at the price's highest rate because the price has no rate for it (charge.ts); null when nothing was. */
  worstCase: string | null;
  /** Priced at the model's long-context rates. */
  longContext: boolean;
  // ── kept since providers have credential pools (older records: 1 / null) ──
  /** Sends to the provider for this call, retries included (0: answered without a send). */
  attempts: number;
  /** The name (never the value) of the provider credential whose answer the client got, else of the last one sent to; null when none was. */
  credential: string | null;
}

/** The token-kind and pricing fields of a record that used none of the special kinds. */
export const PLAIN_USAGE_DETAIL = Object.freeze({
  cacheWrite1hTokens: 0, audioInputTokens: 0, imageInputTokens: 0, audioOutputTokens: 0, imageOutputTokens: 0,
  toolCalls: null, serviceTier: null, speed: null, inferenceGeo: null, estimateReason: null, worstCase: null, longContext: false,
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

/** A key to create: its record's issuer-set fields, and its opening amount. */
export type NewKey = Pick<KeyRecord, 'hash' | 'prefix' | 'name' | 'mode' | 'models' | 'rpm' | 'expiresAt' | 'concurrency'> & {
  /** Opening balance (nUSD) for credit keys, budget (tokens) for token keys. */
  amount: number;
};

/** The charge a finished request makes on its key's account. */
export interface Charge { nano: number; tokens: number }

/**
 * What a call holds against its account before it is forwarded (see meter/hold.ts), and what
 * it is charged should its process die before the call is settled.
 */
export interface Hold {
  /** The call's worst-case cost, in the account's unit (nUSD for credit, tokens for token). */
  amount: number;
  /** The charge of an interrupted call, in the account's unit. */
  interruptedCharge: number;
  /** The input tokens that charge stands for (estimated from the request's size). */
  interruptedInputTokens: number;
  endpoint: string;
  model: string;
  /** The model's `enabled` in the config file: what step 10 obeys when no run-time switch is set. */
  enabledByDefault: boolean;
  stream: boolean;
  at: number;
  /**
   * The stored responses the call continues (Responses' `previous_response_id`: every value the
   * body names), each of which the key's account must have made, or the hold is refused with
   * `previous_response_not_found`; '' stands for a value that cannot be a response id (made by
   * nobody). Null when the call names none.
   */
  previousResponses: readonly string[] | null;
}

/**
 * A response the provider made for a call (the id its answer carries) and where it was made:
 * recorded as the account's with the call's settlement (`Ledger.record`).
 */
export interface MadeResponse {
  id: string;
  provider: string;
  credential: string;
}

/**
 * The hold of a call computed before its admission (its body came whole with its head), in both
 * units: which one applies is known only once the key is read.
 */
export interface HoldEitherWay {
  /** The hold should the key be a credit key (nUSD). */
  credit: Hold;
  /** The hold should the key be a token key (tokens); the same call, endpoint, model and time. */
  token: Hold;
}

/** One issuer change: when, what, which key, by whom (never a secret). */
export interface AuditEntry {
  at: number;
  /** `key.create`, `key.suspend`, `key.resume`, `key.topup`, `key.extend`, `key.set`, `key.rotate`, `model.enable`, `model.disable` */
  action: string;
  keyId: string | null;
  /** `cli@HOSTNAME`, or `admin-api` */
  actor: string;
  /** The admin API caller's address; null for the local command line. */
  address: string | null;
  detail: Record<string, unknown>;
}

/** Where a retention sweep of owner records goes on from: [account id, response id]. */
export type ResponseCursor = readonly [string, string];
