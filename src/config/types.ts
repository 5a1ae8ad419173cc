/** The three wire formats the gateway serves. */
export type Endpoint = 'chat' | 'responses' | 'messages';
export const ENDPOINTS: readonly Endpoint[] = ['chat', 'responses', 'messages'];

export type ProviderAuth = 'bearer' | 'x-api-key';

export interface RawProvider { baseUrl: string; auth: ProviderAuth; apiKeyEnv: string }
export interface RawPrice { input: number; output: number; cachedInput?: number; cacheWrite?: number }
export interface RawModel {
  provider: string;
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
}

/** When the store's commits reach the disk (see store/lmdb.ts FsyncMode). */
export interface RawStorage {
  fsync?: 'interval' | 'commit';
  fsyncIntervalMs?: number;
  /** Usage records older than this many days are deleted (daily totals are kept). */
  retentionDays?: number;
}

/** The operators' listener (interface.md, "The admin listener"). */
export interface RawAdmin { host?: string; port?: number; tokenEnv?: string }

/** The configuration file as written (see interface.md). */
export interface RawConfig {
  server?: { host?: string; port?: number };
  dataDir?: string;
  providers: Record<string, RawProvider>;
  catalogProvider: { openai: string; anthropic: string };
  models: Record<string, RawModel>;
  limits?: RawLimits;
  storage?: RawStorage;
  admin?: RawAdmin;
  log?: { access?: boolean };
}

/** Prices compiled to integer nUSD per token (see money.ts). */
export interface PriceNano { input: number; output: number; cachedInput: number; cacheWrite: number }

export interface Provider {
  name: string;
  /** scheme://host:port of the provider, for the connection pool. */
  origin: string;
  /** Path prefix of the provider's API ("/v1"), prepended to the client's path after the surface. */
  basePath: string;
  auth: ProviderAuth;
  apiKeyEnv: string;
}

export interface Model {
  id: string;
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
}

export interface Config {
  /** The file the configuration came from, or null for the built-in defaults. */
  file: string | null;
  host: string;
  port: number;
  dataDir: string;
  providers: ReadonlyMap<string, Provider>;
  catalogProvider: { openai: Provider; anthropic: Provider };
  models: ReadonlyMap<string, Model>;
  limits: Limits;
  storage: { fsync: 'interval' | 'commit'; fsyncIntervalMs: number; retentionDays: number };
  /** `portGiven`: the file set admin.port, which opens the listener even without a token. */
  admin: { host: string; port: number; tokenEnv: string; portGiven: boolean };
  log: { access: boolean };
}
