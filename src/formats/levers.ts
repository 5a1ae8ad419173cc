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
 * - `cacheTtl`: `cache_control: {"ttl": "1h"}` anywhere in the body asks for 1-hour cache writes.
 * - `longContextBeta`: an `anthropic-beta` token opening a context above the standard window,
 *   whose tokens are priced at long-context rates.
 */
export interface LeverSpec {
  tierField?: string;
  baseTiers?: readonly string[];
  toolTypes?: readonly (readonly [prefix: string, fee: string])[];
  toolOptions?: readonly (readonly [field: string, fee: string])[];
  cacheTtl?: boolean;
  longContextBeta?: string;
}

/** The price levers one request pulls. */
export interface RequestLevers {
  /** A service tier other than the standard one, asked for explicitly; null otherwise. */
  serviceTier: string | null;
  cacheWrite1h: boolean;
  longContext: boolean;
  /** Fee-bearing server tools the request offers the model. */
  tools: string[];
  /** Fee-bearing calls the request makes by itself, once per answer. */
  impliedToolCalls: Record<string, number>;
}

export const NO_LEVERS: RequestLevers = Object.freeze({ serviceTier: null, cacheWrite1h: false, longContext: false, tools: [], impliedToolCalls: {} }) as RequestLevers;

const TTL = Buffer.from('"ttl"');

/** Tiers that mean "the standard price" in what providers send and report. */
export const STANDARD_TIERS: readonly string[] = ['auto', 'default', 'standard', 'standard_only'];

/**
 * The levers a request pulls, from the top-level members it names (each parsed only when read).
 * Only a body that contains `"ttl"` at all is parsed whole and walked for a 1-hour
 * cache_control (a native byte search keeps the walk off every other request).
 */
export function requestLevers(spec: LeverSpec, facts: RequestFacts, headers: IncomingHttpHeaders): RequestLevers {
  let serviceTier: string | null = null;
  if (spec.tierField !== undefined) {
    const tier = facts.member(spec.tierField);
    if (typeof tier === 'string' && !(spec.baseTiers ?? STANDARD_TIERS).includes(tier)) serviceTier = tier;
  }
  const tools: string[] = [];
  const offered = spec.toolTypes === undefined ? undefined : facts.member('tools');
  if (spec.toolTypes !== undefined && Array.isArray(offered)) {
    for (const tool of offered) {
      const type = isObject(tool) ? tool.type : undefined;
      if (typeof type !== 'string') continue;
      const match = spec.toolTypes.find(([prefix]) => type.startsWith(prefix));
      if (match !== undefined && !tools.includes(match[1])) tools.push(match[1]);
    }
  }
  const impliedToolCalls: Record<string, number> = {};
  for (const [field, fee] of spec.toolOptions ?? []) {
    if (isObject(facts.member(field))) {
      impliedToolCalls[fee] = 1;
      if (!tools.includes(fee)) tools.push(fee);
    }
  }
  const cacheWrite1h = spec.cacheTtl === true && facts.raw.includes(TTL) && asksForHourCache(facts.body);
  let longContext = false;
  if (spec.longContextBeta !== undefined) {
    const beta = headers['anthropic-beta'];
    const text = Array.isArray(beta) ? beta.join(',') : beta ?? '';
    longContext = text.split(',').some((token) => token.trim().startsWith(spec.longContextBeta!));
  }
  if (serviceTier === null && tools.length === 0 && !cacheWrite1h && !longContext) return NO_LEVERS;
  return { serviceTier, cacheWrite1h, longContext, tools, impliedToolCalls };
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
