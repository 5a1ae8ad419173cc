/** The three wire formats the gateway serves. */
export type Endpoint = 'chat' | 'responses' | 'messages';
export const ENDPOINTS: readonly Endpoint[] = ['chat', 'responses', 'messages'];

export type ProviderAuth = 'bearer' | 'x-api-key';

export interface RawProvider {
  baseUrl: string;
  auth: ProviderAuth;
  /** The one credential's variable (a pool of one named `default`); or `credentials`, never both. */
  apiKeyEnv?: string;
  credentials?: RawCredential[];
  retry?: { attempts?: number; budgetMs?: number };
  /**
   * The data-residency region the provider processes calls in (OpenAI's regional processing,
   * chosen by the host: `eu.api.openai.com` is `eu`). Defaults to `R` for a base URL on
   * `R.api.openai.com`; `"global"` says the host is not regional. Models served through a
   * regional provider are priced with their `regionalProcessing` multiplier.
   */
  region?: string;
}
/** One key of a provider's credential pool. */
export interface RawCredential { name: string; apiKeyEnv: string; baseUrl?: string; weight?: number }
/** Rates in USD per million tokens, as configured. */
export interface RawRates {
  input: number;
  output: number;
  cachedInput?: number;
  /** Cache writes (Anthropic's 5-minute cache). */
  cacheWrite?: number;
  /** Writes to the 1-hour cache. */
  cacheWrite1h?: number;
  /**
   * Cache writes of a call that asks for extended prompt-cache retention (OpenAI's
   * `prompt_cache_retention` other than in-memory: the 12-hour cache write of the model pages).
   */
  cacheWriteExtended?: number;
  audioInput?: number;
  audioOutput?: number;
  imageInput?: number;
  imageOutput?: number;
}
/**
 * The rates of a lever that replaces the standard table (a service tier, a speed), with its own
 * long-context rates when the provider publishes them (the threshold is the price's).
 */
export type RawLeverRates = RawRates & { longContext?: RawRates };
/** A model's price: base rates plus the optional levers (see README, "Prices"). */
export interface RawPrice extends RawRates {
  /** Rates per OpenAI service tier other than the standard one (`flex`, `fast` or its other name `priority`, `ultrafast`). */
  tiers?: Record<string, RawLeverRates>;
  /** Rates per Anthropic `speed` other than the standard one (`fast`), over the whole context window. */
  speed?: Record<string, RawLeverRates>;
  /** Rates for every token of a call (of each part of a call reported in parts) whose prompt exceeds `threshold` tokens. */
  longContext?: RawRates & { threshold: number };
  /** Multiplier on every token rate per Anthropic `inference_geo` other than `global` (`us`: 1.1). */
  inferenceGeo?: Record<string, number>;
  /** Multiplier on every token rate when the model's provider processes in a region (its `region`). */
  regionalProcessing?: number;
  /** USD per 1,000 calls of a server-side tool, by fee name (`web_search`, `file_search`). */
  toolCalls?: Record<string, number>;
}
export interface RawModel {
  provider: string;
  /** Other ids served, priced, held and billed as this entry (published snapshot ids). */
  aliases?: string[];
  endpoints: Endpoint[];
  price: RawPrice;
  contextWindow?: number;
  /** Output tokens a call may produce when its body sets no cap (what its hold assumes). */
  maxOutputTokens?: number;
  capabilities?: string[];
  enabled?: boolean;
}

/** Limits of our own design (the spec leaves them open); all optional in the file. */
export interface RawLimits {
  /** Largest request body accepted, in bytes. */
  maxRequestBytes?: number;
  /** How long to wait for a provider's response headers. */
  upstreamHeadersTimeoutMs?: number;
  /** Longest silence allowed between two chunks of a provider's body. */
  upstreamBodyTimeoutMs?: number;
  /** Connections kept per provider. */
  upstreamConnections?: number;
  /** How long to keep reading a provider's answer after the client left, to bill exact usage. */
  clientGoneGraceMs?: number;
  /**
   * How long a client may accept no bytes of an answer (its connection not draining) before it
   * is treated as gone; the provider is never paused longer than this for it.
   */
  clientStallMs?: number;
  /** Deepest nesting of arrays and objects read in a request body (the top-level object is 1). */
  maxJsonDepth?: number;
  /** Largest request head (request line and headers), in bytes. */
  maxHeaderBytes?: number;
  /** Most header fields a request may carry (more: 431 headers_too_large). */
  maxHeaderCount?: number;
  /** From a request's first byte until its headers are complete. */
  clientHeadersTimeoutMs?: number;
  /** From a request's first byte until its whole body has arrived. */
  clientRequestTimeoutMs?: number;
  /** Open client connections per process; more are closed as they arrive. */
  maxConnections?: number;
}

/** When the store's commits reach the disk (see store/lmdb/open.ts FsyncMode). */
export interface RawStorage {
  /** `lmdb` (default: the environment in dataDir) or `redis` (storage.redisUrl). */
  backend?: 'lmdb' | 'redis';
  redisUrl?: string;
  fsync?: 'interval' | 'commit';
  fsyncIntervalMs?: number;
  /** Usage records older than this many days are deleted (daily totals are kept). */
  retentionDays?: number;
  /**
   * How long the gateway remembers which account made a response (Responses' stored
   * responses): after this many days, `previous_response_id` and GET /responses/{id} no longer
   * reach it.
   */
  responseRetentionDays?: number;
}

/** The operators' listener (interface.md, "The admin listener"). */
export interface RawAdmin { host?: string; port?: number; tokenEnv?: string }

/** The configuration file as written (see interface.md). */
export interface RawConfig {
  server?: { host?: string; port?: number };
  dataDir?: string;
  providers: Record<string, RawProvider>;
  catalogProvider: { openai: string; anthropic: string };
  /** Whether `models` adds to the built-in catalogue (true, the default) or starts from an empty one. */
  builtInModels?: boolean;
  models: Record<string, RawModel>;
  limits?: RawLimits;
  storage?: RawStorage;
  admin?: RawAdmin;
  log?: { access?: boolean };
}

/**
 * Rates compiled to integer nUSD per token (see money.ts). `cachedInput` defaults to `input`
 * (cache reads never cost more); a kind left out is not priced by this table, and tokens of it
 * are charged at the price's highest rate (meter/charge.ts).
 */
export type Rates = RawRates & { cachedInput: number };

export const RATE_KINDS = ['input', 'output', 'cachedInput', 'cacheWrite', 'cacheWrite1h', 'cacheWriteExtended', 'audioInput', 'audioOutput', 'imageInput', 'imageOutput'] as const;
export type RateKind = (typeof RATE_KINDS)[number];

/** A lever's table of rates, with its own long-context rates when it has them. */
export type LeverRates = Rates & { longContext?: Rates };

/**
 * A multiplier on token rates in thousandths (1.1 → 1100), so that applying it is integer
 * arithmetic (money.ts multiplyUp).
 */
export type Permille = number;

/** The multiplier of the standard geography and of a model served outside a region: 1×. */
export const ONE: Permille = 1000;

/** A model's compiled price: base rates and levers. */
export interface PriceNano extends Rates {
  /** Rates by service tier other than the standard one; `fast` and `priority` are one entry under both names. */
  tiers: ReadonlyMap<string, LeverRates>;
  /** Rates by Anthropic speed other than the standard one. */
  speed: ReadonlyMap<string, LeverRates>;
  /** Rates for every token of a call whose prompt exceeds `threshold`; null when not configured. */
  longContext: (Rates & { threshold: number }) | null;
  /** Multipliers by inference geography other than the standard ones. */
  inferenceGeo: ReadonlyMap<string, Permille>;
  /**
   * Regional processing of the model's provider: its region and the multiplier the price has for
   * it (null: unpriced, so every call through that provider is refused); null when the provider
   * is not regional.
   */
  region: { name: string; multiplier: Permille | null } | null;
  /** nUSD per call of a fee-bearing server tool, by fee name. */
  toolCalls: ReadonlyMap<string, number>;
  /**
   * The highest per-token rate this price can charge anywhere (any table, times the largest
   * multiplier): what an unpriced kind, or every token of an answer reporting an unpriced lever, costs.
   */
  maxRate: number;
  /**
   * What a call of a tool this price has no fee for costs: the highest per-call fee configured
   * for any model or in the built-in catalogue (set once the whole catalogue is compiled).
   */
  fallbackToolFee: number;
}

export interface Provider {
  name: string;
  /** scheme://host:port of the provider, for the connection pool. */
  origin: string;
  /** The region it processes in (RawProvider.region), or null when it is not regional. */
  region: string | null;
  /** Path prefix of the provider's API ("/v1"), prepended to the client's path after the surface. */
  basePath: string;
  auth: ProviderAuth;
  /** Its credential pool, in the file's order (`apiKeyEnv` alone: one credential named `default`). */
  credentials: readonly ProviderCredential[];
  /** How a refused call is sent again (forward/attempts.ts). */
  retry: RetryPolicy;
}

/** One credential of a provider: its own key, and its own base URL (another organisation or region). */
export interface ProviderCredential {
  /** Its name in logs, metrics, records and /readyz (never its value). */
  name: string;
  apiKeyEnv: string;
  /** Its base URL's origin and path: the provider's unless the credential sets its own `baseUrl`. */
  origin: string;
  basePath: string;
  /** Its share of the calls, a positive integer (default 1). */
  weight: number;
}

export interface RetryPolicy {
  /** Sends in all per call, the first included. */
  attempts: number;
  /** The time from the first send within which the others may go. */
  budgetMs: number;
}

export interface Model {
  id: string;
  /** Other ids served as this entry (RawModel.aliases). */
  aliases: readonly string[];
  provider: Provider;
  endpoints: ReadonlySet<Endpoint>;
  price: PriceNano;
  /** Prices as configured, USD per million tokens, for display. */
  rawPrice: RawPrice;
  contextWindow: number | null;
  /** The output cap of a call whose body sets none: the file's value, else see config/load.ts. */
  maxOutputTokens: number;
  capabilities: string[];
  /** The file's `enabled`; `tollgate models enable|disable` overrides it at run time. */
  enabledByDefault: boolean;
}

export interface Limits {
  maxRequestBytes: number;
  upstreamHeadersTimeoutMs: number;
  upstreamBodyTimeoutMs: number;
  upstreamConnections: number;
  clientGoneGraceMs: number;
  clientStallMs: number;
  maxJsonDepth: number;
  maxHeaderBytes: number;
  maxHeaderCount: number;
  clientHeadersTimeoutMs: number;
  clientRequestTimeoutMs: number;
  maxConnections: number;
}

export interface Config {
  /** The file the configuration came from, or null for the built-in defaults. */
  file: string | null;
  host: string;
  port: number;
  dataDir: string;
  providers: ReadonlyMap<string, Provider>;
  catalogProvider: { openai: Provider; anthropic: Provider };
  /** The catalogue's entries, by id. */
  models: ReadonlyMap<string, Model>;
  /** Every id a request may name (each entry's id and its aliases) → its entry. */
  modelsByName: ReadonlyMap<string, Model>;
  /**
   * The built-in catalogue's providers (`openai`, `anthropic`) that no provider of the
   * configuration is named after, with the number of built-in entries left out for it; empty
   * with `"builtInModels": false`. Said at start-up.
   */
  builtInLeftOut: readonly { provider: string; models: number }[];
  limits: Limits;
  storage: { backend: 'lmdb' | 'redis'; redisUrl: string | null; fsync: 'interval' | 'commit'; fsyncIntervalMs: number; retentionDays: number; responseRetentionDays: number };
  /** `portGiven`: the file set admin.port, which opens the listener even without a token. */
  admin: { host: string; port: number; tokenEnv: string; portGiven: boolean };
  log: { access: boolean };
}
