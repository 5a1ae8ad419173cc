import type { IncomingHttpHeaders } from 'node:http';
import type { RequestFacts } from './model.js';
import { isObject } from './types.js';

/**
 * Which request fields of a format change what the provider charges, as data:
 *
 * - `tierField`: a top-level string naming the service tier (`service_tier`); values in
 *   `baseTiers` ask for the standard price.
 * - `toolTypes`: `tools[].type` prefixes of server-side tools that carry a fee per call.
 * - `toolOptions`: top-level fields that make one fee-bearing call per answer by themselves
 *   (Chat Completions' `web_search_options` on the search models).
 * - `speedField`: a top-level string naming the speed (Anthropic's `speed`); `standard` is the
 *   standard price.
 * - `geoField`: a top-level string naming the inference geography (Anthropic's
 *   `inference_geo`); `global` is the standard price.
 * - `cacheRetentionField`: a top-level string asking for extended prompt-cache retention
 *   (OpenAI's `prompt_cache_retention`); the in-memory values are the standard price.
 * - `cacheTtl`: `cache_control: {"ttl": "1h"}` anywhere in the body asks for 1-hour cache writes.
 * - `longContextBeta`: an `anthropic-beta` token opening a context above the standard window,
 *   whose tokens are priced at long-context rates.
 */
export interface LeverSpec {
  tierField?: string;
  baseTiers?: readonly string[];
  speedField?: string;
  geoField?: string;
  cacheRetentionField?: string;
  toolTypes?: readonly (readonly [prefix: string, fee: string])[];
  toolOptions?: readonly (readonly [field: string, fee: string])[];
  cacheTtl?: boolean;
  longContextBeta?: string;
}

/** The price levers one request pulls. */
export interface RequestLevers {
  /** A service tier other than the standard one, asked for explicitly; null otherwise. */
  serviceTier: string | null;
  /** A speed other than the standard one (Anthropic's `speed: "fast"`); null otherwise. */
  speed: string | null;
  /** An inference geography other than the standard one (`inference_geo: "us"`); null otherwise. */
  inferenceGeo: string | null;
  cacheWrite1h: boolean;
  /** Extended prompt-cache retention (OpenAI's `prompt_cache_retention` other than in-memory). */
  cacheWriteExtended: boolean;
  longContext: boolean;
  /** Fee-bearing server tools the request offers the model. */
  tools: string[];
  /** Fee-bearing calls the request makes by itself, once per answer. */
  impliedToolCalls: Record<string, number>;
}

export const NO_LEVERS: RequestLevers = Object.freeze({
  serviceTier: null, speed: null, inferenceGeo: null, cacheWrite1h: false, cacheWriteExtended: false, longContext: false, tools: [], impliedToolCalls: {},
}) as RequestLevers;

const TTL = Buffer.from('"ttl"');

/** Tiers that mean "the standard price" in what providers send and report. */
export const STANDARD_TIERS: readonly string[] = ['auto', 'default', 'standard', 'standard_only'];
/**
 * One tier under two names: OpenAI renamed priority processing to fast mode (2026-07-30) and
 * accepts and reports either. A price that lists one serves both.
 */
export const TIER_SYNONYMS: Readonly<Record<string, string>> = { fast: 'priority', priority: 'fast' };
/** Speeds that mean the standard price (Anthropic's `speed`, `usage.speed`). */
export const STANDARD_SPEEDS: readonly string[] = ['standard'];
/**
 * Inference geographies that mean the standard price: Anthropic's default, and what models
 * that cannot choose one report (`usage.inference_geo: "not_available"`).
 */
export const STANDARD_GEOS: readonly string[] = ['global', 'not_available'];
/** `prompt_cache_retention` values that ask for the standard (in-memory) retention. */
const STANDARD_RETENTION: readonly string[] = ['in_memory', 'in-memory'];

/** A top-level string member's value when it names an option other than the standard ones; else null. */
function optionNamed(facts: RequestFacts, field: string | undefined, standard: readonly string[]): string | null {
  if (field === undefined) return null;
  const v = facts.member(field);
  return typeof v === 'string' && !standard.includes(v) ? v : null;
}

/**
 * The levers a request pulls, from the top-level members it names (each parsed only when read).
 * Only a body that contains `"ttl"` at all is parsed whole and walked for a 1-hour
 * cache_control (a native byte search keeps the walk off every other request).
 */
export function requestLevers(spec: LeverSpec, facts: RequestFacts, headers: IncomingHttpHeaders): RequestLevers {
  const serviceTier = optionNamed(facts, spec.tierField, spec.baseTiers ?? STANDARD_TIERS);
  const speed = optionNamed(facts, spec.speedField, STANDARD_SPEEDS);
  const inferenceGeo = optionNamed(facts, spec.geoField, STANDARD_GEOS);
  const cacheWriteExtended = optionNamed(facts, spec.cacheRetentionField, STANDARD_RETENTION) !== null;
  // Built only when the request offers a fee-bearing tool (most calls offer none).
  let tools: string[] | null = null;
  let impliedToolCalls: Record<string, number> | null = null;
  const offered = spec.toolTypes === undefined ? undefined : facts.member('tools');
  if (spec.toolTypes !== undefined && Array.isArray(offered)) {
    for (const tool of offered) {
      const type = isObject(tool) ? tool.type : undefined;
      if (typeof type !== 'string') continue;
      const match = spec.toolTypes.find(([prefix]) => type.startsWith(prefix));
      if (match !== undefined && !(tools ??= []).includes(match[1])) tools.push(match[1]);
    }
  }
  const options = spec.toolOptions;
  for (let i = 0; options !== undefined && i < options.length; i++) {
    const [field, fee] = options[i]!;
    if (isObject(facts.member(field))) {
      (impliedToolCalls ??= {})[fee] = 1;
      if (!(tools ??= []).includes(fee)) tools.push(fee);
    }
  }
  const cacheWrite1h = spec.cacheTtl === true && facts.raw.includes(TTL) && asksForHourCache(facts.body);
  let longContext = false;
  if (spec.longContextBeta !== undefined) {
    const beta = headers['anthropic-beta'];
    const text = Array.isArray(beta) ? beta.join(',') : beta ?? '';
    longContext = text.split(',').some((token) => token.trim().startsWith(spec.longContextBeta!));
  }
  if (serviceTier === null && speed === null && inferenceGeo === null && tools === null && !cacheWrite1h && !cacheWriteExtended && !longContext) return NO_LEVERS;
  return { serviceTier, speed, inferenceGeo, cacheWrite1h, cacheWriteExtended, longContext, tools: tools ?? [], impliedToolCalls: impliedToolCalls ?? {} };
}

/** Whether any `cache_control` object in the body sets `ttl` to "1h". */
function asksForHourCache(body: unknown): boolean {
  const walk = (v: unknown): boolean => {
    if (Array.isArray(v)) return v.some(walk);
    if (!isObject(v)) return false;
    for (const [name, item] of Object.entries(v)) {
      if (name === 'cache_control' && isObject(item) && item.ttl === '1h') return true;
      if (typeof item === 'object' && item !== null && walk(item)) return true;
    }
    return false;
  };
  return walk(body);
}
