import { ONE, RATE_KINDS, type LeverRates, type Permille, type PriceNano, type Rates } from '../config/types.js';
import { STANDARD_GEOS, STANDARD_SPEEDS, STANDARD_TIERS, type RequestLevers } from '../formats/levers.js';
import type { TokenCounts, Usage } from '../formats/types.js';
import { multiplyUp } from '../money.js';
import type { KeyMode, UsageRecord } from '../domain/types.js';

/**
 * A call's price in nUSD; what was charged at the price's highest rate because the price has
 * no rate for it (null when nothing was); whether long-context rates applied; and the same as
 * levers the price cannot price (`name:value`, a kind of token as `token:KIND`; see costOf).
 */
export interface Cost {
  nano: number;
  worstCase: string | null;
  longContext: boolean;
  unpricedLevers: readonly string[];
}

/** The option a reported value names, or null when it is a standard one (or none). */
function option(value: string | null, standard: readonly string[]): string | null {
  return value === null || standard.includes(value) ? null : value;
}

/** The rates and multiplier a call's levers select, or the levers the price cannot price. */
interface Selection {
  /** The table replacing the standard rates (a tier's, a speed's), or the price itself. */
  table: LeverRates | PriceNano;
  /** How the table is named in a note (`service_tier:fast`), or null for the standard rates. */
  name: string | null;
  /** Multipliers on the token cost, in thousandths: geography, then regional processing. */
  geo: Permille;
  region: Permille;
  /** Whether a lever reported has no rate in the price (named in NOTES). */
  unpriced: boolean;
}

/**
 * What was charged at the price's highest rate, for the call being priced: costOf runs to its
 * end synchronously, so one list serves every call and a call that uses no such rate (nearly
 * all of them) allocates none.
 */
const NOTES: string[] = [];
const NO_NOTES: readonly string[] = Object.freeze([]);

function note(text: string): void {
  if (!NOTES.includes(text)) NOTES.push(text);
}

/** A lever the answer reports that the price has no rate for: the whole call at the highest rate. */
function unpriced(s: Selection, lever: string): void {
  note(lever);
  s.unpriced = true;
}

/**
 * What the levers an answer reports select: a service tier or a speed (each a table of its own;
 * no price combines the two), an inference geography and the provider's regional processing
 * (multipliers); null when the answer reports none and the provider is not regional (the
 * standard rates). A lever the price has no rate for is noted as `lever:value`.
 */
function select(usage: Usage, price: PriceNano): Selection | null {
  const tier = option(usage.serviceTier, STANDARD_TIERS);
  const speed = option(usage.speed, STANDARD_SPEEDS);
  const geoName = option(usage.inferenceGeo, STANDARD_GEOS);
  if (tier === null && speed === null && geoName === null && price.region === null) return null;
  const s: Selection = { table: price, name: null, geo: ONE, region: ONE, unpriced: false };
  if (tier !== null && speed !== null) unpriced(s, `service_tier:${tier}+speed:${speed}`);
  else if (tier !== null || speed !== null) {
    s.name = tier !== null ? `service_tier:${tier}` : `speed:${speed}`;
    const found = tier !== null ? price.tiers.get(tier) : price.speed.get(speed!);
    if (found === undefined) unpriced(s, s.name);
    else s.table = found;
  }
  if (geoName !== null) {
    const m = price.inferenceGeo.get(geoName);
    if (m === undefined) unpriced(s, `inference_geo:${geoName}`);
    else s.geo = m;
  }
  if (price.region !== null) {
    if (price.region.multiplier === null) unpriced(s, `region:${price.region.name}`);
    else s.region = price.region.multiplier;
  }
  return s;
}

/**
 * The rates of one pass of a call: the table's (`name` null for the standard table), replaced
 * by long-context rates when its prompt (every input token: fresh, cache reads, cache writes, as
 * both providers count it) exceeds the price's threshold: the table's own long-context rates,
 * the price's for the standard table, and for a lever table without its own (a combination no
 * page prices) each kind at the higher of the two tables, noted. Long-context rates are in use
 * exactly when the rates returned are not `table`.
 */
function passRates(counts: TokenCounts, price: PriceNano, table: LeverRates | PriceNano, name: string | null): Rates {
  const long = price.longContext;
  if (long === null || counts.input <= long.threshold) return table;
  if (name === null) return long;
  const own = (table as LeverRates).longContext;
  if (own !== undefined) return own;
  note(`${name}+long_context`);
  return higherOf(table, long);
}

/** Each kind at the higher of two tables' rates; a kind either leaves out stays out (charged at `maxRate`, see kindCost). */
function higherOf(a: Rates, b: Rates): Rates {
  const out: Partial<Record<keyof Rates, number>> = {};
  for (const kind of RATE_KINDS) {
    const ra = a[kind];
    const rb = b[kind];
    if (ra !== undefined && rb !== undefined) out[kind] = Math.max(ra, rb);
  }
  return out as Rates;
}

/**
 * What the call being priced owes at the price's highest rate for kinds of token no table
 * prices. `maxRate` already carries the dearest multipliers, so this part is added after the
 * token cost is multiplied, not multiplied again: such a token never costs more than the
 * dearest token the price knows. Reset by costOf, like NOTES.
 */
let atMaxRate = 0;

/** `tokens` of `kind` at these rates; a kind the rates leave out is noted and counted in atMaxRate instead. */
function kindCost(kind: keyof Rates, tokens: number, rates: Rates, maxRate: number): number {
  if (tokens === 0) return 0;
  const r = rates[kind];
  if (r !== undefined) return tokens * r;
  note(kind);
  atMaxRate += tokens * maxRate;
  return 0;
}

/**
 * The token cost of one pass at these rates: fresh text input at the input rate, cache reads at
 * `cachedInput`, cache writes at the 5-minute (or, for a call that asked for extended
 * retention, the extended) rate and their 1-hour part at `cacheWrite1h`, audio and image tokens
 * at their own rates, text output (reasoning included) at the output rate. A kind the rates
 * leave out is left out here, charged at `maxRate` by kindCost.
 */
function tokenCost(c: TokenCounts, rates: Rates, extendedCache: boolean, maxRate: number): number {
  const cacheWrite1h = Math.min(c.cacheWrite1h, c.cacheWrite);
  const freshText = Math.max(0, c.input - c.cachedInput - c.cacheWrite - c.audioInput - c.imageInput);
  const textOutput = Math.max(0, c.output - c.audioOutput - c.imageOutput);
  return kindCost('input', freshText, rates, maxRate) + kindCost('cachedInput', c.cachedInput, rates, maxRate)
    + kindCost(extendedCache ? 'cacheWriteExtended' : 'cacheWrite', c.cacheWrite - cacheWrite1h, rates, maxRate)
    + kindCost('cacheWrite1h', cacheWrite1h, rates, maxRate)
    + kindCost('audioInput', c.audioInput, rates, maxRate) + kindCost('imageInput', c.imageInput, rates, maxRate)
    + kindCost('output', textOutput, rates, maxRate) + kindCost('audioOutput', c.audioOutput, rates, maxRate)
    + kindCost('imageOutput', c.imageOutput, rates, maxRate);
}

/**
 * The price of a call in nUSD (exact integer arithmetic, see money.ts). The levers the answer
 * reports (service tier, speed, inference geography; the provider's region) select the rates;
 * each pass of a call reported in parts is priced on its own, its long-context band decided by
 * its own prompt; the token cost is multiplied by the geography's and the region's multipliers
 * (rounded up to the nUSD); each call of a fee-bearing server tool adds its fee, unmultiplied.
 *
 * Levers the price cannot price are charged at the most expensive rate it knows and named:
 * - an unpriced tier, speed, geography or region the answer reports: every token at `maxRate`;
 * - a tier or speed with a long prompt, when the tier has no long-context rates of its own:
 *   each kind at the higher of the two tables;
 * - a tool without a fee: the highest fee known (`fallbackToolFee`);
 * - a kind of token a table leaves out (1-hour cache writes, audio, …): its tokens at `maxRate`,
 *   which carries the dearest multipliers already and is not multiplied again.
 * Each is named in `worstCase` and, as a lever, in `unpricedLevers` (`name:value`; a kind of
 * token as `token:KIND`, see leverOf).
 */
export function costOf(usage: Usage, price: PriceNano): Cost {
  NOTES.length = 0;
  atMaxRate = 0;
  const s = select(usage, price);
  let nano = 0;
  let longContext = false;
  if (s !== null && s.unpriced) {
    nano = (usage.input + usage.output) * price.maxRate;
  } else {
    const table = s === null ? price : s.table;
    const name = s === null ? null : s.name;
    let tokens = 0;
    const parts = usage.parts;
    if (parts === null) {
      const rates = passRates(usage, price, table, name);
      longContext = rates !== table;
      tokens = tokenCost(usage, rates, usage.extendedCache, price.maxRate);
    } else {
      for (const part of parts) {
        const rates = passRates(part, price, table, name);
        longContext ||= rates !== table;
        tokens += tokenCost(part, rates, usage.extendedCache, price.maxRate);
      }
    }
    nano = (s === null ? tokens : multiplyUp(multiplyUp(tokens, s.geo), s.region)) + atMaxRate;
  }
  for (const tool in usage.toolCalls) {
    const calls = usage.toolCalls[tool]!;
    if (calls === 0) continue;
    const fee = price.toolCalls.get(tool);
    if (fee === undefined) note(`tool:${tool}`);
    nano += calls * (fee ?? price.fallbackToolFee);
  }
  if (NOTES.length === 0) return { nano, worstCase: null, longContext, unpricedLevers: NO_NOTES };
  return { nano, worstCase: NOTES.join(','), longContext, unpricedLevers: NOTES.map(leverOf) };
}

/**
 * A worst-case note as the lever it names, `name:value`: a lever's note is one already
 * (`service_tier:flex`, `tool:web_search`); a kind of token no table prices is named
 * `token:KIND` (`cacheWrite1h` → `token:cache_write_1h`), since the answer chose it as it chooses
 * a tier.
 */
export function leverOf(note: string): string {
  return note.includes(':') ? note : `token:${note.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`).replace(/1h$/, '_1h')}`;
}

/** The price of a call in nUSD (see costOf). */
export function costNano(usage: Usage, price: PriceNano): number {
  return costOf(usage, price).nano;
}

/** Tokens a token key is charged: every input and output token. */
export function tokensCharged(usage: Usage): number {
  return usage.input + usage.output;
}

/** What one call takes from its key's account; for a credit key, also how it was priced. */
export interface CallCharge { nano: number; tokens: number; worstCase: string | null; longContext: boolean; unpricedLevers: readonly string[] }

export function chargeFor(usage: Usage, price: PriceNano, mode: KeyMode): CallCharge {
  if (mode !== 'credit') return { nano: 0, tokens: tokensCharged(usage), worstCase: null, longContext: false, unpricedLevers: NO_NOTES };
  const cost = costOf(usage, price);
  return { nano: cost.nano, tokens: 0, worstCase: cost.worstCase, longContext: cost.longContext, unpricedLevers: cost.unpricedLevers };
}

/** The record fields that say what kinds of tokens a call used and how they were read and priced. */
export function usageDetail(usage: Usage | undefined, estimateReason: string | null, charge: CallCharge, price: PriceNano): Pick<UsageRecord,
  'cacheWrite1hTokens' | 'audioInputTokens' | 'imageInputTokens' | 'audioOutputTokens' | 'imageOutputTokens' | 'toolCalls' | 'serviceTier' | 'speed' | 'inferenceGeo' | 'estimateReason' | 'worstCase' | 'longContext'> {
  return {
    cacheWrite1hTokens: usage?.cacheWrite1h ?? 0,
    audioInputTokens: usage?.audioInput ?? 0,
    imageInputTokens: usage?.imageInput ?? 0,
    audioOutputTokens: usage?.audioOutput ?? 0,
    imageOutputTokens: usage?.imageOutput ?? 0,
    toolCalls: usage === undefined ? null : toolCallsMade(usage.toolCalls),
    serviceTier: usage?.serviceTier ?? null,
    speed: usage?.speed ?? null,
    // Where the call was processed: as the answer reports it, else the provider's region.
    inferenceGeo: usage?.inferenceGeo ?? price.region?.name ?? null,
    estimateReason: usage === undefined ? null : estimateReason,
    worstCase: charge.worstCase,
    longContext: charge.longContext,
  };
}

/** The tool calls a call made, by name, those counted zero left out; null for none (nearly every call: nothing allocated). */
function toolCallsMade(counts: Record<string, number>): Record<string, number> | null {
  let made: Record<string, number> | null = null;
  for (const tool in counts) if (counts[tool]! > 0) (made ??= {})[tool] = counts[tool]!;
  return made;
}

/**
 * The dearest an input token and an output token of a call can cost under this price with the
 * levers its request names, for the hold placed before the call: the named tier's or speed's
 * table (the standard one when none is named) and its long-context rates (the request's length
 * is not known in tokens), over fresh input, cache reads and every kind of cache write, times
 * the named geography's multiplier and the provider's regional one (each rate rounded up).
 * Whatever context length or cache duration the answer turns out to use, its text tokens at
 * those levers cost no more than `input × these.input + output × these.output`.
 * Not covered: audio and image tokens, tool fees, and levers only an answer reveals (a project's
 * default tier, a workspace's default geography): the call is billed what the answer reports.
 * A lever named that the price cannot price (only a token key's call gets this far with one)
 * holds at `maxRate`.
 */
export function holdRates(price: PriceNano, levers: Pick<RequestLevers, 'serviceTier' | 'speed' | 'inferenceGeo' | 'cacheWrite1h' | 'cacheWriteExtended'>): { input: number; output: number } {
  const table = namedTable(price, levers);
  const geo = levers.inferenceGeo === null ? ONE : price.inferenceGeo.get(levers.inferenceGeo);
  const region = price.region === null ? ONE : price.region.multiplier;
  if (table === undefined || geo === undefined || region === null) return { input: price.maxRate, output: price.maxRate };
  const long = table !== price && (table as LeverRates).longContext !== undefined ? (table as LeverRates).longContext! : price.longContext;
  let input = dearestInput(table);
  let output = table.output;
  if (long !== null) {
    input = Math.max(input, dearestInput(long));
    output = Math.max(output, long.output);
  }
  // A cache write the request names that the long-context rates leave out is charged at the
  // highest rate should the prompt be long (the table's own are checked before: unpriced_option).
  const named = (t: Rates): boolean => (levers.cacheWrite1h && t.cacheWrite1h === undefined) || (levers.cacheWriteExtended && t.cacheWriteExtended === undefined);
  if (long !== null && named(long)) return { input: price.maxRate, output: multiplyUp(multiplyUp(output, geo), region) };
  return { input: multiplyUp(multiplyUp(input, geo), region), output: multiplyUp(multiplyUp(output, geo), region) };
}

/** The table a request's named tier or speed selects, the price's own when it names neither; undefined when the price has no such table. */
export function namedTable(price: PriceNano, levers: Pick<RequestLevers, 'serviceTier' | 'speed'>): LeverRates | PriceNano | undefined {
  return levers.serviceTier !== null ? price.tiers.get(levers.serviceTier) : levers.speed !== null ? price.speed.get(levers.speed) : price;
}

/** The dearest rate an input token can be charged at in a table: fresh, cache read or any cache write. */
function dearestInput(t: Rates): number {
  return Math.max(t.input, t.cachedInput, t.cacheWrite ?? 0, t.cacheWrite1h ?? 0, t.cacheWriteExtended ?? 0);
}
