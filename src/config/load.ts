import { lstatSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { validateHeaderValue } from 'node:http';
import { resolve } from 'node:path';
import { feePerCallNano, multiplierPermille, multiplyUp, pricePerTokenNano } from '../money.js';
import { STANDARD_GEOS, STANDARD_SPEEDS, STANDARD_TIERS, TIER_SYNONYMS } from '../formats/levers.js';
import { MAX_MODEL_BYTES } from '../formats/model.js';
import { DEFAULT_CONFIG } from './defaults.js';
import { ENDPOINTS, ONE, RATE_KINDS, type Config, type Endpoint, type LeverRates, type Limits, type Model, type Permille, type PriceNano, type Provider, type ProviderCredential, type RateKind, type Rates, type RawConfig } from './types.js';

/** A configuration that cannot be used; the message names the offending field's path. */
export class ConfigError extends Error {
  constructor(readonly path: string, problem: string) {
    super(`config: ${path}: ${problem}`);
  }
}

export const DEFAULT_LIMITS: Limits = {
  maxRequestBytes: 32 * 1024 * 1024,
  upstreamHeadersTimeoutMs: 600_000,
  upstreamBodyTimeoutMs: 600_000,
  // Streams hold a connection for their whole length (seconds to minutes): 1,000 concurrent
  // 4-second streams through a pool of 256 queued in four waves (first byte p50 5.5 s, p99 14 s),
  // where 1,024 let all run at once (bench/README.md, provider connections). One process here
  // runs out of CPU near that many streams, so a larger pool would only hold idle sockets.
  upstreamConnections: 1024,
  clientGoneGraceMs: 300_000,
  clientStallMs: 30_000,
  maxJsonDepth: 128,
  maxHeaderBytes: 16 * 1024,
  // Real clients send a dozen or two; Node's own default, 2,000, and its silent dropping of
  // what is past it (Node 20), are replaced by this exact limit (http/request-head.ts).
  maxHeaderCount: 200,
  clientHeadersTimeoutMs: 20_000,
  clientRequestTimeoutMs: 300_000,
  maxConnections: 10_000,
};

/** The output cap assumed for a model that has neither `maxOutputTokens` nor `contextWindow`. */
export const DEFAULT_MAX_OUTPUT_TOKENS = 32_768;
/**
 * The largest output cap counted for one call, from a body or the catalogue: no model writes
 * more, and it keeps every hold's arithmetic exact (cap × the largest price stays far below
 * Number.MAX_SAFE_INTEGER nUSD).
 */
export const MAX_OUTPUT_CAP = 100_000_000;

/** The largest `limits.maxRequestBytes` accepted. */
const MAX_REQUEST_BYTES = 1024 ** 3;
/**
 * The most input tokens one call is counted for: the largest body the configuration accepts
 * read as a token per byte, as a hold counts it (more than any context window the configuration
 * accepts, and than any call's passes add up to). A provider reporting more is not believed
 * (formats/usage-read.ts), nor is one reporting more output than MAX_OUTPUT_CAP.
 */
export const MAX_INPUT_TOKENS = MAX_REQUEST_BYTES;
/** The most tokens one call is counted for: input and output together. */
export const MAX_CALL_TOKENS = MAX_INPUT_TOKENS + MAX_OUTPUT_CAP;
/** The most calls of one server-side tool a usage object is believed to report for one call. */
export const MAX_TOOL_CALLS = 1_000_000;
/**
 * The most a token may cost, USD per million tokens, multipliers included. A charge is
 * tokens × rate summed over kinds (meter/charge.ts), so a call of MAX_CALL_TOKENS at this rate
 * comes to 5.87e15 nUSD, below Number.MAX_SAFE_INTEGER (9.007e15): every charge and hold stays
 * an exact integer, with room left for tool fees. It is 16× the dearest rate published today; a
 * price above it is a typo.
 */
export const MAX_PRICE_USD_PER_MILLION = 5000;
const MAX_RATE_NANO = MAX_PRICE_USD_PER_MILLION * 1000;
/**
 * The most a server-side tool call may cost, USD per 1,000 calls ($1 a call, 40× the dearest
 * published): what a charge has left below Number.MAX_SAFE_INTEGER after MAX_CALL_TOKENS at the
 * highest rate pays for three million such calls.
 */
export const MAX_TOOL_FEE_USD_PER_THOUSAND = 1000;

type Json = unknown;

function isObject(v: Json): v is Record<string, Json> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function onlyFields(obj: Record<string, Json>, path: string, allowed: readonly string[]): void {
  for (const name of Object.keys(obj)) {
    if (!allowed.includes(name)) throw new ConfigError(path ? `${path}.${name}` : name, 'unknown field');
  }
}

function object(v: Json, path: string): Record<string, Json> {
  if (!isObject(v)) throw new ConfigError(path, 'must be an object');
  return v;
}

function string(v: Json, path: string): string {
  if (typeof v !== 'string' || v.length === 0) throw new ConfigError(path, 'must be a non-empty string');
  return v;
}

function integer(v: Json, path: string, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw new ConfigError(path, `must be an integer from ${min} to ${max}`);
  }
  return v;
}

/** An http(s) base URL: its origin (for a connection pool) and its path prefix, trailing slashes cut. */
function baseUrl(v: Json, path: string): { origin: string; basePath: string } {
  const text = string(v, path);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigError(path, 'must be an absolute http(s) URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(path, 'must be an http or https URL');
  if (url.search || url.hash) throw new ConfigError(path, 'must not carry a query or fragment');
  return { origin: url.origin, basePath: url.pathname.replace(/\/+$/, '') };
}

function envName(v: Json, path: string): string {
  const name = string(v, path);
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new ConfigError(path, 'must be an environment variable name');
  return name;
}

/** The name of a provider's one credential when it sets `apiKeyEnv` alone. */
export const DEFAULT_CREDENTIAL = 'default';
/** Credentials per provider: a call's tried credentials are a 32-bit set (forward/rotation.ts). */
const MAX_CREDENTIALS = 32;
const CREDENTIAL_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
export const DEFAULT_RETRY = { attempts: 2, budgetMs: 10_000 };

function compileProvider(name: string, raw: Json): Provider {
  const path = `providers.${name}`;
  const p = object(raw, path);
  onlyFields(p, path, ['baseUrl', 'auth', 'apiKeyEnv', 'credentials', 'retry', 'region']);
  const base = baseUrl(p.baseUrl, `${path}.baseUrl`);
  if (p.auth !== 'bearer' && p.auth !== 'x-api-key') throw new ConfigError(`${path}.auth`, 'must be "bearer" or "x-api-key"');
  let credentials: ProviderCredential[];
  if (p.credentials === undefined) {
    if (p.apiKeyEnv === undefined) throw new ConfigError(`${path}.apiKeyEnv`, 'is required (the variable holding the provider\'s credential), unless credentials lists several');
    credentials = [{ name: DEFAULT_CREDENTIAL, apiKeyEnv: envName(p.apiKeyEnv, `${path}.apiKeyEnv`), ...base, weight: 1 }];
  } else {
    if (p.apiKeyEnv !== undefined) throw new ConfigError(`${path}.apiKeyEnv`, `cannot be given with ${path}.credentials: a pool names each credential's variable in its entry (apiKeyEnv alone is a pool of one named "${DEFAULT_CREDENTIAL}")`);
    credentials = compileCredentials(p.credentials, `${path}.credentials`, base);
  }
  let region = REGIONAL_HOST.exec(new URL(base.origin).hostname)?.[1] ?? null;
  if (p.region !== undefined) {
    const given = string(p.region, `${path}.region`);
    if (!NAME.test(given)) throw new ConfigError(`${path}.region`, 'a region is lower-case letters, digits and _ (eu, us), or "global"');
    region = given === 'global' ? null : given;
  }
  return { name, ...base, auth: p.auth, credentials, retry: compileRetry(p.retry, `${path}.retry`), region };
}

function compileCredentials(raw: Json, path: string, base: { origin: string; basePath: string }): ProviderCredential[] {
  if (!Array.isArray(raw) || raw.length === 0 || raw.length > MAX_CREDENTIALS) throw new ConfigError(path, `must be a list of 1 to ${MAX_CREDENTIALS} credentials ({ "name", "apiKeyEnv", "baseUrl"?, "weight"? })`);
  const names = new Set<string>();
  return raw.map((entry, i) => {
    const at = `${path}[${i}]`;
    const c = object(entry, at);
    onlyFields(c, at, ['name', 'apiKeyEnv', 'baseUrl', 'weight']);
    const name = string(c.name, `${at}.name`);
    if (!CREDENTIAL_NAME.test(name)) throw new ConfigError(`${at}.name`, 'must be 1 to 63 lower-case letters, digits, - and _, beginning with a letter or digit (it is shown in logs, metrics and records)');
    if (names.has(name)) throw new ConfigError(`${at}.name`, `"${name}" names another credential of this provider already`);
    names.add(name);
    return {
      name,
      apiKeyEnv: envName(c.apiKeyEnv, `${at}.apiKeyEnv`),
      ...(c.baseUrl === undefined ? base : baseUrl(c.baseUrl, `${at}.baseUrl`)),
      weight: c.weight === undefined ? 1 : integer(c.weight, `${at}.weight`, 1, 1_000_000),
    };
  });
}

function compileRetry(raw: Json, path: string): Provider['retry'] {
  if (raw === undefined) return DEFAULT_RETRY;
  const r = object(raw, path);
  onlyFields(r, path, ['attempts', 'budgetMs']);
  return {
    attempts: r.attempts === undefined ? DEFAULT_RETRY.attempts : integer(r.attempts, `${path}.attempts`, 1, 10),
    budgetMs: r.budgetMs === undefined ? DEFAULT_RETRY.budgetMs : integer(r.budgetMs, `${path}.budgetMs`, 0, 600_000),
  };
}

/**
 * A provider credential as read from its variable, surrounding whitespace cut ('' when unset): a
 * secret never has any, and one taken from a file (`$(cat key)`, a mounted secret) often ends in
 * a newline, which no header can carry.
 */
export function credentialValue(env: NodeJS.ProcessEnv, name: string): string {
  return (env[name] ?? '').trim();
}

/** Whether a header can carry `value`: Node's own check (no control character but tab, nothing beyond Latin-1), which undici makes too. */
function headerCanCarry(value: string): boolean {
  try {
    validateHeaderValue('authorization', value);
    return true;
  } catch {
    return false;
  }
}

/**
 * The variables of the configuration's provider credentials whose value, once trimmed, still
 * holds a character no header can carry: every call with it would fail before reaching the
 * provider. Named for a refusal at start-up; the value never is.
 */
export function unsendableCredentials(config: Config, env: NodeJS.ProcessEnv): string[] {
  const names = new Set<string>();
  for (const provider of config.providers.values()) {
    for (const c of provider.credentials) if (!headerCanCarry(credentialValue(env, c.apiKeyEnv))) names.add(c.apiKeyEnv);
  }
  return [...names];
}

/**
 * Pairs of a provider's credentials that hold the same key for the same base URL (two entries
 * naming one variable, or two variables set to one value), as `[first, second]` names: such a
 * pool sends a call refused by one of them to the same key again, and weighs that key twice.
 * Refused at start-up; the value is never named.
 */
export function repeatedCredentials(config: Config, env: NodeJS.ProcessEnv): Array<{ provider: string; first: ProviderCredential; second: ProviderCredential }> {
  const repeated: Array<{ provider: string; first: ProviderCredential; second: ProviderCredential }> = [];
  for (const provider of config.providers.values()) {
    const seen = new Map<string, ProviderCredential>();
    for (const c of provider.credentials) {
      const value = credentialValue(env, c.apiKeyEnv);
      if (value === '') continue;
      const id = `${c.origin}${c.basePath}\n${value}`;
      const first = seen.get(id);
      if (first === undefined) seen.set(id, c);
      else repeated.push({ provider: provider.name, first, second: c });
    }
  }
  return repeated;
}

/** The credentials of `provider` whose variable is unset or empty, whitespace aside: left out of its pool, never sent. */
export function missingCredentials(provider: Provider, env: NodeJS.ProcessEnv): ProviderCredential[] {
  return provider.credentials.filter((c) => credentialValue(env, c.apiKeyEnv).length === 0);
}

/** Whether any credential of `provider` has its variable set, whitespace aside (a provider without one is never called). */
export function hasCredential(provider: Provider, env: NodeJS.ProcessEnv): boolean {
  return missingCredentials(provider, env).length < provider.credentials.length;
}

/** OpenAI's regional hosts (`eu.api.openai.com`): the region is the first label. */
const REGIONAL_HOST = /^([a-z]{2,})\.api\.openai\.com$/;

function price(v: Json, path: string, required: boolean): number | undefined {
  if (v === undefined && !required) return undefined;
  if (typeof v === 'number' && v > MAX_PRICE_USD_PER_MILLION) throw new ConfigError(path, `must be at most ${MAX_PRICE_USD_PER_MILLION} (USD per million tokens), the most a token may cost: beyond it a large call's charge would not be exact`);
  const nano = typeof v === 'number' ? pricePerTokenNano(v) : undefined;
  if (nano === undefined) throw new ConfigError(path, 'must be a number ≥ 0 (USD per million tokens) with at most 3 decimals');
  return nano;
}

function multiplier(v: Json, path: string): Permille {
  const permille = typeof v === 'number' ? multiplierPermille(v) : undefined;
  if (permille === undefined) throw new ConfigError(path, 'must be a multiplier above 0 (1.1 for +10%) with at most 3 decimals');
  return permille;
}

/** A table of per-token rates: `input` and `output` required, the other kinds optional. */
function compileRates(p: Record<string, Json>, path: string, extra: readonly string[]): Rates {
  onlyFields(p, path, [...RATE_KINDS, ...extra]);
  const rates: Partial<Record<RateKind, number>> = {};
  for (const kind of RATE_KINDS) {
    const nano = price(p[kind], `${path}.${kind}`, kind === 'input' || kind === 'output');
    if (nano !== undefined) rates[kind] = nano;
  }
  // Cache reads never cost more than fresh input: without their own rate they cost as much.
  rates.cachedInput ??= rates.input;
  return rates as Rates;
}

const NAME = /^[a-z][a-z0-9_]*$/;

/**
 * The tables of a lever that replaces the standard rates (`tiers`, `speed`), by the name the
 * provider gives the option; each may carry its own `longContext` rates, above the price's own
 * threshold. `standard` names mean the standard price and cannot be priced apart; `synonyms`
 * pairs two names of one option, priced once and served under both.
 */
function compileLeverTables(raw: Json, path: string, what: string, standard: readonly string[], synonyms: Readonly<Record<string, string>>, hasThreshold: boolean): Map<string, LeverRates> {
  const tables = new Map<string, LeverRates>();
  if (raw === undefined) return tables;
  for (const [name, t] of Object.entries(object(raw, path))) {
    const at = `${path}.${name}`;
    if (!NAME.test(name)) throw new ConfigError(at, 'an option name is lower-case letters, digits and _, as the provider spells it (flex, fast)');
    if (standard.includes(name)) throw new ConfigError(at, `"${name}" is the standard ${what}: its rates are the price's own`);
    const other = synonyms[name];
    if (other !== undefined && tables.has(other)) throw new ConfigError(at, `"${name}" and "${other}" are one option under two names: price it once`);
    const table = object(t, at);
    const rates = compileRates(table, at, ['longContext']);
    const lever: LeverRates = rates;
    if (table.longContext !== undefined) {
      if (!hasThreshold) throw new ConfigError(`${at}.longContext`, 'needs the price\'s own longContext (its threshold and standard long-context rates)');
      lever.longContext = compileRates(object(table.longContext, `${at}.longContext`), `${at}.longContext`, []);
    }
    tables.set(name, lever);
    if (other !== undefined) tables.set(other, tables.get(name)!);
  }
  return tables;
}

/**
 * A model's price: base rates, then the optional levers (`tiers`, `speed`, `longContext`,
 * `inferenceGeo`, `regionalProcessing`, `toolCalls`), each validated with its path. `provider`
 * says whether calls are processed in a region. The highest per-token rate the price can charge
 * is what an unpriced kind or lever costs.
 */
function compilePrice(raw: Json, path: string, provider: Provider): PriceNano {
  const p = object(raw, path);
  const base = compileRates(p, path, ['tiers', 'speed', 'longContext', 'inferenceGeo', 'regionalProcessing', 'toolCalls']);
  let longContext: PriceNano['longContext'] = null;
  if (p.longContext !== undefined) {
    const lc = object(p.longContext, `${path}.longContext`);
    const threshold = integer(lc.threshold, `${path}.longContext.threshold`, 1, 1e9);
    longContext = { ...compileRates(lc, `${path}.longContext`, ['threshold']), threshold };
  }
  const tiers = compileLeverTables(p.tiers, `${path}.tiers`, 'tier', STANDARD_TIERS, TIER_SYNONYMS, longContext !== null);
  const speed = compileLeverTables(p.speed, `${path}.speed`, 'speed', STANDARD_SPEEDS, {}, longContext !== null);
  const inferenceGeo = new Map<string, Permille>();
  if (p.inferenceGeo !== undefined) {
    for (const [geo, m] of Object.entries(object(p.inferenceGeo, `${path}.inferenceGeo`))) {
      if (!NAME.test(geo)) throw new ConfigError(`${path}.inferenceGeo.${geo}`, 'a geography is lower-case letters, digits and _, as the provider spells it (us)');
      if (STANDARD_GEOS.includes(geo)) throw new ConfigError(`${path}.inferenceGeo.${geo}`, `"${geo}" is the standard geography: its rates are the price's own`);
      inferenceGeo.set(geo, multiplier(m, `${path}.inferenceGeo.${geo}`));
    }
  }
  const regional = p.regionalProcessing === undefined ? null : multiplier(p.regionalProcessing, `${path}.regionalProcessing`);
  const region = provider.region === null ? null : { name: provider.region, multiplier: regional };
  const toolCalls = new Map<string, number>();
  if (p.toolCalls !== undefined) {
    for (const [name, fee] of Object.entries(object(p.toolCalls, `${path}.toolCalls`))) {
      if (!NAME.test(name)) throw new ConfigError(`${path}.toolCalls.${name}`, 'a tool name is lower-case letters, digits and _ (web_search, file_search)');
      if (typeof fee === 'number' && fee > MAX_TOOL_FEE_USD_PER_THOUSAND) throw new ConfigError(`${path}.toolCalls.${name}`, `must be at most ${MAX_TOOL_FEE_USD_PER_THOUSAND} (USD per 1,000 calls), the most a tool call may cost: beyond it a large call's charge would not be exact`);
      const nano = typeof fee === 'number' ? feePerCallNano(fee) : undefined;
      if (nano === undefined) throw new ConfigError(`${path}.toolCalls.${name}`, 'must be a number ≥ 0 (USD per 1,000 calls) with at most 6 decimals');
      toolCalls.set(name, nano);
    }
  }
  let highest = 0;
  const tables: Rates[] = [base];
  if (longContext !== null) tables.push(longContext);
  for (const t of [...tiers.values(), ...speed.values()]) tables.push(t, ...(t.longContext === undefined ? [] : [t.longContext]));
  for (const table of tables) for (const kind of RATE_KINDS) highest = Math.max(highest, table[kind] ?? 0);
  // The dearest a token can be: the highest rate with the largest geography multiplier and then
  // the region's, as a call's token cost is multiplied (meter/charge.ts), so a hold at it covers
  // any answer. Each rate is within the bound; the multipliers must not take it past.
  const [geoName, geo] = [...inferenceGeo].reduce((a, b) => (b[1] > a[1] ? b : a), ['', ONE] as [string, Permille]);
  const dearest = multiplyUp(multiplyUp(highest, geo), region?.multiplier ?? ONE);
  if (dearest > MAX_RATE_NANO) {
    const field = geo > ONE ? `${path}.inferenceGeo.${geoName}` : `${path}.regionalProcessing`;
    throw new ConfigError(field, `takes a token's rate to ${dearest / 1000} USD per million tokens (the price's highest rate, ${highest / 1000}, multiplied), above the most a token may cost, ${MAX_PRICE_USD_PER_MILLION}`);
  }
  return { ...base, tiers, speed, longContext, inferenceGeo, region, toolCalls, maxRate: dearest, fallbackToolFee: 0 };
}

/**
 * What is wrong with a model id or alias, or null. A request names its model in `model`, read
 * only when it is a non-empty string of at most MAX_MODEL_BYTES as sent (formats/model.ts): an
 * id outside that could never be called.
 */
function modelIdProblem(id: string): string | null {
  if (id.length === 0) return 'is empty: no request can name it';
  // As a client sends it: JSON-escaped, in UTF-8.
  const bytes = Buffer.byteLength(JSON.stringify(id)) - 2;
  if (bytes > MAX_MODEL_BYTES) return `is ${bytes} bytes long: a request's model is at most ${MAX_MODEL_BYTES} bytes, so no request can name it`;
  return null;
}

/** `models.ID` for a message, an empty id shown as "" and a long one shortened. */
function modelPath(id: string): string {
  return `models.${id.length === 0 ? '""' : id.length > 60 ? `${id.slice(0, 40)}…` : id}`;
}

function compileModel(id: string, raw: Json, providers: ReadonlyMap<string, Provider>): Model {
  const path = modelPath(id);
  const idProblem = modelIdProblem(id);
  if (idProblem !== null) throw new ConfigError(path, `the model id ${idProblem}`);
  const m = object(raw, path);
  onlyFields(m, path, ['provider', 'aliases', 'endpoints', 'price', 'contextWindow', 'maxOutputTokens', 'capabilities', 'enabled']);
  const providerName = string(m.provider, `${path}.provider`);
  const provider = providers.get(providerName);
  if (!provider) throw new ConfigError(`${path}.provider`, `names no provider in "providers" ("${providerName}")`);
  if (!Array.isArray(m.endpoints) || m.endpoints.length === 0) throw new ConfigError(`${path}.endpoints`, `must be a non-empty list of ${ENDPOINTS.join(', ')}`);
  const endpoints = new Set<Endpoint>();
  m.endpoints.forEach((e, i) => {
    if (!ENDPOINTS.includes(e as Endpoint)) throw new ConfigError(`${path}.endpoints[${i}]`, `must be one of ${ENDPOINTS.join(', ')}`);
    if (endpoints.has(e as Endpoint)) throw new ConfigError(`${path}.endpoints[${i}]`, `"${e as string}" is named twice`);
    endpoints.add(e as Endpoint);
  });
  const aliases: string[] = [];
  if (m.aliases !== undefined) {
    if (!Array.isArray(m.aliases)) throw new ConfigError(`${path}.aliases`, 'must be a list of model ids');
    m.aliases.forEach((a, i) => {
      if (typeof a === 'string') {
        const problem = modelIdProblem(a);
        if (problem !== null) throw new ConfigError(`${path}.aliases[${i}]`, `the alias ${problem}`);
      }
      const alias = string(a, `${path}.aliases[${i}]`);
      if (alias === id || aliases.includes(alias)) throw new ConfigError(`${path}.aliases[${i}]`, `"${alias}" is named twice`);
      aliases.push(alias);
    });
  }
  const price = compilePrice(m.price, `${path}.price`, provider);
  const contextWindow = m.contextWindow === undefined ? null : integer(m.contextWindow, `${path}.contextWindow`, 1, 1e9);
  // A call whose body sets no output cap may produce up to this many tokens: what its hold
  // assumes. Unset, the context window bounds it (no answer is longer), else a default.
  const maxOutputTokens = m.maxOutputTokens === undefined
    ? contextWindow ?? DEFAULT_MAX_OUTPUT_TOKENS
    : integer(m.maxOutputTokens, `${path}.maxOutputTokens`, 1, MAX_OUTPUT_CAP);
  let capabilities: string[] = [];
  if (m.capabilities !== undefined) {
    if (!Array.isArray(m.capabilities)) throw new ConfigError(`${path}.capabilities`, 'must be a list of strings');
    capabilities = m.capabilities.map((c, i) => string(c, `${path}.capabilities[${i}]`));
  }
  if (m.enabled !== undefined && typeof m.enabled !== 'boolean') throw new ConfigError(`${path}.enabled`, 'must be true or false');
  return {
    id,
    aliases,
    provider,
    endpoints,
    price,
    rawPrice: m.price as unknown as Model['rawPrice'],
    contextWindow,
    maxOutputTokens,
    capabilities,
    enabledByDefault: m.enabled !== false,
  };
}

/**
 * The catalogue served: the built-in one's entries whose provider the configuration has (none
 * with `"builtInModels": false`), then the file's `models`, an entry of the same id replacing
 * the built-in one (its aliases with it). Every id a request may name maps to one entry: an
 * alias that is another entry's id or alias is refused, naming both.
 */
function compileCatalogue(c: Record<string, Json>, given: Record<string, Json>, providers: ReadonlyMap<string, Provider>): Pick<Config, 'models' | 'modelsByName'> {
  if (c.builtInModels !== undefined && typeof c.builtInModels !== 'boolean') throw new ConfigError('builtInModels', 'must be true or false');
  const raw: Record<string, Json> = {};
  if (c.builtInModels !== false) {
    for (const [id, m] of Object.entries(DEFAULT_CONFIG.models)) if (providers.has(m.provider)) raw[id] = m;
  }
  if (given.models !== undefined) Object.assign(raw, object(given.models, 'models'));
  const models = new Map<string, Model>();
  for (const [id, m] of Object.entries(raw)) models.set(id, compileModel(id, m, providers));
  const modelsByName = new Map(models);
  for (const model of models.values()) {
    model.aliases.forEach((alias, i) => {
      const other = modelsByName.get(alias);
      if (other !== undefined) {
        const what = other.id === alias ? `the id of models.${other.id}` : `already an alias of models.${other.id}`;
        throw new ConfigError(`models.${model.id}.aliases[${i}]`, `"${alias}" is ${what}: each id names one entry`);
      }
      modelsByName.set(alias, model);
    });
  }
  return { models, modelsByName };
}

/** The highest per-call tool fee of the built-in catalogue, nUSD. */
function builtInMaxToolFee(): number {
  let max = 0;
  for (const m of Object.values(DEFAULT_CONFIG.models)) {
    for (const fee of Object.values(m.price.toolCalls ?? {})) max = Math.max(max, feePerCallNano(fee) ?? 0);
  }
  return max;
}

function compileLimits(raw: Json): Limits {
  if (raw === undefined) return DEFAULT_LIMITS;
  const l = object(raw, 'limits');
  onlyFields(l, 'limits', Object.keys(DEFAULT_LIMITS));
  const limits = { ...DEFAULT_LIMITS };
  if (l.maxRequestBytes !== undefined) limits.maxRequestBytes = integer(l.maxRequestBytes, 'limits.maxRequestBytes', 1024, MAX_REQUEST_BYTES);
  if (l.upstreamHeadersTimeoutMs !== undefined) limits.upstreamHeadersTimeoutMs = integer(l.upstreamHeadersTimeoutMs, 'limits.upstreamHeadersTimeoutMs', 1, 3_600_000);
  if (l.upstreamBodyTimeoutMs !== undefined) limits.upstreamBodyTimeoutMs = integer(l.upstreamBodyTimeoutMs, 'limits.upstreamBodyTimeoutMs', 1, 3_600_000);
  if (l.clientGoneGraceMs !== undefined) limits.clientGoneGraceMs = integer(l.clientGoneGraceMs, 'limits.clientGoneGraceMs', 0, 3_600_000);
  if (l.clientStallMs !== undefined) limits.clientStallMs = integer(l.clientStallMs, 'limits.clientStallMs', 100, 3_600_000);
  if (l.upstreamConnections !== undefined) limits.upstreamConnections = integer(l.upstreamConnections, 'limits.upstreamConnections', 1, 65_536);
  if (l.maxJsonDepth !== undefined) limits.maxJsonDepth = integer(l.maxJsonDepth, 'limits.maxJsonDepth', 2, 4096);
  if (l.maxHeaderBytes !== undefined) limits.maxHeaderBytes = integer(l.maxHeaderBytes, 'limits.maxHeaderBytes', 1024, 1024 * 1024);
  if (l.maxHeaderCount !== undefined) limits.maxHeaderCount = integer(l.maxHeaderCount, 'limits.maxHeaderCount', 1, 100_000);
  if (l.clientHeadersTimeoutMs !== undefined) limits.clientHeadersTimeoutMs = integer(l.clientHeadersTimeoutMs, 'limits.clientHeadersTimeoutMs', 100, 3_600_000);
  if (l.clientRequestTimeoutMs !== undefined) limits.clientRequestTimeoutMs = integer(l.clientRequestTimeoutMs, 'limits.clientRequestTimeoutMs', 100, 3_600_000);
  if (l.maxConnections !== undefined) limits.maxConnections = integer(l.maxConnections, 'limits.maxConnections', 1, 1_000_000);
  // Node refuses a server whose headers may take longer than the whole request. The message
  // names the field the file set against the other's value, saying when that is the default.
  if (limits.clientHeadersTimeoutMs > limits.clientRequestTimeoutMs) {
    const setting = (name: 'clientHeadersTimeoutMs' | 'clientRequestTimeoutMs'): string =>
      `limits.${name} (${limits[name]}${l[name] === undefined ? ', its default' : ''})`;
    if (l.clientHeadersTimeoutMs === undefined) throw new ConfigError('limits.clientRequestTimeoutMs', `must be at least ${setting('clientHeadersTimeoutMs')}`);
    throw new ConfigError('limits.clientHeadersTimeoutMs', `must not exceed ${setting('clientRequestTimeoutMs')}`);
  }
  return limits;
}

/**
 * What is wrong with a Redis URL (`redis://[user:password@]host:port[/db]`, or `rediss://` for
 * TLS), or null. Shared by storage.redisUrl, TOLLGATE_REDIS_URL and --redis.
 */
export function redisUrlProblem(v: unknown): string | null {
  const shape = 'must be redis://[user:password@]host:port[/db]';
  if (typeof v !== 'string' || v.length === 0) return shape;
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    return shape;
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') return `${shape} (the scheme must be redis: or rediss:)`;
  if (url.hostname === '') return `${shape} (no host)`;
  if (url.port === '') return `${shape} (no port)`;
  if (url.pathname !== '' && url.pathname !== '/' && !/^\/\d{1,2}$/.test(url.pathname)) return `${shape} (the path must be a database number)`;
  if (url.search !== '' || url.hash !== '') return `${shape} (no query or fragment)`;
  return null;
}

/** storage.responseRetentionDays when the file sets none (OpenAI keeps a stored response 30 days). */
export const DEFAULT_RESPONSE_RETENTION_DAYS = 30;

function compileStorage(raw: Json): Config['storage'] {
  const storage: Config['storage'] = {
    backend: 'lmdb', redisUrl: null, fsync: 'interval', fsyncIntervalMs: 100, retentionDays: 400, responseRetentionDays: DEFAULT_RESPONSE_RETENTION_DAYS,
  };
  if (raw === undefined) return storage;
  const st = object(raw, 'storage');
  onlyFields(st, 'storage', ['backend', 'redisUrl', 'fsync', 'fsyncIntervalMs', 'retentionDays', 'responseRetentionDays']);
  if (st.retentionDays !== undefined) storage.retentionDays = integer(st.retentionDays, 'storage.retentionDays', 1, 36_500);
  if (st.responseRetentionDays !== undefined) storage.responseRetentionDays = integer(st.responseRetentionDays, 'storage.responseRetentionDays', 1, 36_500);
  if (st.fsync !== undefined) {
    if (st.fsync !== 'interval' && st.fsync !== 'commit') throw new ConfigError('storage.fsync', 'must be "interval" or "commit"');
    storage.fsync = st.fsync;
  }
  if (st.fsyncIntervalMs !== undefined) storage.fsyncIntervalMs = integer(st.fsyncIntervalMs, 'storage.fsyncIntervalMs', 1, 60_000);
  if (st.backend !== undefined) {
    if (st.backend !== 'lmdb' && st.backend !== 'redis') throw new ConfigError('storage.backend', 'must be "lmdb" or "redis"');
    storage.backend = st.backend;
  }
  if (st.redisUrl !== undefined) {
    const problem = redisUrlProblem(st.redisUrl);
    if (problem !== null) throw new ConfigError('storage.redisUrl', problem);
    if (storage.backend !== 'redis') throw new ConfigError('storage.redisUrl', 'is used only with storage.backend "redis"');
    storage.redisUrl = st.redisUrl as string;
  }
  if (storage.backend === 'redis' && storage.redisUrl === null) throw new ConfigError('storage.redisUrl', 'is required when storage.backend is "redis" (redis://[user:password@]host:port[/db])');
  return storage;
}

function compileAdmin(raw: Json): Config['admin'] {
  const admin: Config['admin'] = { host: '127.0.0.1', port: 8081, tokenEnv: 'TOLLGATE_ADMIN_TOKEN', portGiven: false };
  if (raw === undefined) return admin;
  const a = object(raw, 'admin');
  onlyFields(a, 'admin', ['host', 'port', 'tokenEnv']);
  if (a.host !== undefined) admin.host = string(a.host, 'admin.host');
  if (a.port !== undefined) {
    admin.port = integer(a.port, 'admin.port', 0, 65535);
    admin.portGiven = true;
  }
  if (a.tokenEnv !== undefined) {
    admin.tokenEnv = string(a.tokenEnv, 'admin.tokenEnv');
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(admin.tokenEnv)) throw new ConfigError('admin.tokenEnv', 'must be an environment variable name');
  }
  return admin;
}

function compileLog(raw: Json): Config['log'] {
  if (raw === undefined) return { access: true };
  const l = object(raw, 'log');
  onlyFields(l, 'log', ['access']);
  if (l.access !== undefined && typeof l.access !== 'boolean') throw new ConfigError('log.access', 'must be true or false');
  return { access: l.access !== false };
}

/**
 * The catalogue providers: the file's catalogProvider, each entry it leaves out taking its
 * default, as a section left out does: the provider of that name (`openai`, `anthropic`), else
 * the first provider (a file with only `providers.myoai` is a whole configuration).
 */
function catalogProviderEntries(given: Json, providers: ReadonlyMap<string, Provider>): Record<string, Json> {
  const names = [...providers.keys()];
  const pick = (preferred: string): string => (providers.has(preferred) ? preferred : names[0]!);
  const defaults = { openai: pick('openai'), anthropic: pick('anthropic') };
  return given === undefined ? defaults : { ...defaults, ...object(given, 'catalogProvider') };
}

/**
 * The built-in catalogue's providers that name no provider of the configuration, and how many
 * of its entries are left out for it (none with `"builtInModels": false`).
 */
function builtInLeftOut(builtIn: boolean, providers: ReadonlyMap<string, Provider>): Config['builtInLeftOut'] {
  if (!builtIn) return [];
  const left = new Map<string, number>();
  for (const m of Object.values(DEFAULT_CONFIG.models)) if (!providers.has(m.provider)) left.set(m.provider, (left.get(m.provider) ?? 0) + 1);
  return [...left].map(([provider, models]) => ({ provider, models }));
}

/** Validates a parsed configuration object and compiles it into the tables the server uses. */
export function compileConfig(raw: Json, file: string | null): Config {
  // A section the file leaves out is the built-in default's: a file that only sets the port
  // keeps the default providers and catalogue.
  const given = object(raw, '(top level)');
  const c: Record<string, Json> = { ...DEFAULT_CONFIG, ...given };
  onlyFields(c, '', ['server', 'dataDir', 'providers', 'catalogProvider', 'builtInModels', 'models', 'limits', 'storage', 'admin', 'log']);
  let host = '127.0.0.1';
  let port = 8080;
  if (c.server !== undefined) {
    const s = object(c.server, 'server');
    onlyFields(s, 'server', ['host', 'port']);
    if (s.host !== undefined) host = string(s.host, 'server.host');
    if (s.port !== undefined) port = integer(s.port, 'server.port', 0, 65535);
  }
  // Relative to the working directory, like every other path the CLI takes, so that the
  // default and the documented `"dataDir": "./data"` are the same directory.
  const dataDir = resolve(c.dataDir === undefined ? './data' : string(c.dataDir, 'dataDir'));

  const providers = new Map<string, Provider>();
  for (const [name, p] of Object.entries(object(c.providers, 'providers'))) providers.set(name, compileProvider(name, p));
  if (providers.size === 0) throw new ConfigError('providers', 'must name at least one provider');

  const cp = catalogProviderEntries(given.catalogProvider, providers);
  onlyFields(cp, 'catalogProvider', ['openai', 'anthropic']);
  const catalogFor = (which: 'openai' | 'anthropic'): Provider => {
    const name = string(cp[which], `catalogProvider.${which}`);
    const provider = providers.get(name);
    if (!provider) throw new ConfigError(`catalogProvider.${which}`, `names no provider in "providers" ("${name}")`);
    return provider;
  };
  const catalogProvider = { openai: catalogFor('openai'), anthropic: catalogFor('anthropic') };

  const { models, modelsByName } = compileCatalogue(c, given, providers);
  // A call of a tool a model has no fee for costs the highest fee known anywhere, the built-in
  // catalogue's included (meter/charge.ts).
  let fallbackToolFee = builtInMaxToolFee();
  for (const m of models.values()) for (const fee of m.price.toolCalls.values()) fallbackToolFee = Math.max(fallbackToolFee, fee);
  for (const m of models.values()) (m.price as { fallbackToolFee: number }).fallbackToolFee = fallbackToolFee;

  return {
    file, host, port, dataDir, providers, catalogProvider, models, modelsByName, builtInLeftOut: builtInLeftOut(c.builtInModels !== false, providers),
    limits: compileLimits(c.limits), storage: compileStorage(c.storage), admin: compileAdmin(c.admin), log: compileLog(c.log),
  };
}

const DEFAULT_FILE = 'tollgate.config.json';

/**
 * Whether something is at `path`, a symbolic link whose target is missing included: a file that
 * is there but cannot be read is an error, not an absence that falls back to the defaults.
 */
function present(path: string): boolean {
  try {
    return lstatSync(path, { throwIfNoEntry: false }) !== undefined;
  } catch {
    return true; // cannot be looked at (a directory without search permission): reading it says why
  }
}

/** `: a symbolic link to TARGET, which does not exist` when `path` is such a link, else ''. */
function danglingLink(path: string): string {
  try {
    if (!lstatSync(path).isSymbolicLink() || statSync(path, { throwIfNoEntry: false }) !== undefined) return '';
    return `: a symbolic link to ${readlinkSync(path)}, which does not exist`;
  } catch {
    return '';
  }
}

/**
 * Finds and loads the configuration: an explicit file (flag or TOLLGATE_CONFIG), else
 * ./tollgate.config.json when present, else the built-in defaults.
 */
export function loadConfig(explicitFile: string | undefined): Config {
  const file = explicitFile ?? (present(DEFAULT_FILE) ? DEFAULT_FILE : undefined);
  if (file === undefined) return compileConfig(structuredClone(DEFAULT_CONFIG), null);
  const path = resolve(file);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(file, `cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)}${danglingLink(path)})`);
  }
  // Editors on Windows begin a UTF-8 file with a byte order mark, which JSON.parse refuses.
  if (text.startsWith('\uFEFF')) text = text.slice(1);
  let raw: RawConfig;
  try {
    raw = JSON.parse(text) as RawConfig;
  } catch (err) {
    throw new ConfigError(file, `is not valid JSON (${(err as Error).message})`);
  }
  return compileConfig(raw, path);
}
