import { RATE_KINDS, type PriceNano, type Rates } from '../config/types.js';
import { STANDARD_TIERS } from '../formats/levers.js';
import type { Usage } from '../formats/types.js';
import type { KeyMode, UsageRecord } from '../domain/types.js';

/** A call's price in nUSD, why any part of it was charged at the worst-case rate (null when none was), and whether long-context rates applied. */
export interface Cost {
  nano: number;
  worstCase: string | null;
  longContext: boolean;
}

/**
 * The rates that apply to a call: the service tier's (the standard ones for none), replaced by
 * the long-context rates when the input exceeds their threshold. Levers the price cannot price
 * are charged at the most expensive rate it has, and named:
 * - a tier the provider reports that the price has no rates for: every token at `maxRate`;
 * - a tier and long context together (the providers price neither combination): each kind at
 *   the higher of the two tables;
 * - a kind a table leaves out (1-hour cache writes, audio, …): its tokens at `maxRate`.
 */
function ratesFor(usage: Usage, price: PriceNano, notes: string[]): Rates {
  const tier = usage.serviceTier === null || STANDARD_TIERS.includes(usage.serviceTier) ? null : usage.serviceTier;
  let rates: Rates | undefined = tier === null ? price : price.tiers.get(tier);
  if (rates === undefined) {
    notes.push(`service_tier:${tier}`);
    return worstRates(price);
  }
  const long = price.longContext;
  if (long !== null && usage.input > long.threshold) {
    if (tier === null) rates = long;
    else {
      notes.push(`service_tier:${tier}+long_context`);
      rates = higherOf(rates, long, price.maxRate);
    }
  }
  return rates;
}

function worstRates(price: PriceNano): Rates {
  const m = price.maxRate;
  return { input: m, output: m, cachedInput: m, cacheWrite: m, cacheWrite1h: m, audioInput: m, audioOutput: m, imageInput: m, imageOutput: m };
}

function higherOf(a: Rates, b: Rates, maxRate: number): Rates {
  const out: Partial<Record<keyof Rates, number>> = {};
  for (const kind of RATE_KINDS) out[kind] = Math.max(a[kind] ?? maxRate, b[kind] ?? maxRate);
  return out as Rates;
}

/**
 * The price of a call in nUSD (exact integer arithmetic, see money.ts): fresh text input at the
 * input rate, cache reads at `cachedInput`, 5-minute and 1-hour cache writes, audio and image
 * tokens at their own rates, text output (reasoning included) at the output rate, and each call
 * of a fee-bearing server tool at its fee.
 */
export function costOf(usage: Usage, price: PriceNano): Cost {
  const notes: string[] = [];
  const rates = ratesFor(usage, price, notes);
  const rate = (kind: keyof Rates, tokens: number): number => {
    if (tokens === 0) return 0;
    const r = rates[kind];
    if (r !== undefined) return tokens * r;
    notes.push(kind);
    return tokens * price.maxRate;
  };
  const cacheWrite1h = Math.min(usage.cacheWrite1h, usage.cacheWrite);
  const freshText = Math.max(0, usage.input - usage.cachedInput - usage.cacheWrite - usage.audioInput - usage.imageInput);
  const textOutput = Math.max(0, usage.output - usage.audioOutput - usage.imageOutput);
  let nano = rate('input', freshText) + rate('cachedInput', usage.cachedInput)
    + rate('cacheWrite', usage.cacheWrite - cacheWrite1h) + rate('cacheWrite1h', cacheWrite1h)
    + rate('audioInput', usage.audioInput) + rate('imageInput', usage.imageInput)
    + rate('output', textOutput) + rate('audioOutput', usage.audioOutput) + rate('imageOutput', usage.imageOutput);
  for (const [tool, calls] of Object.entries(usage.toolCalls)) {
    if (calls === 0) continue;
    const fee = price.toolCalls.get(tool);
    if (fee === undefined) notes.push(`tool:${tool}`);
    nano += calls * (fee ?? price.fallbackToolFee);
  }
  return { nano, worstCase: notes.length === 0 ? null : notes.join(','), longContext: price.longContext !== null && usage.input > price.longContext.threshold };
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
export interface CallCharge { nano: number; tokens: number; worstCase: string | null; longContext: boolean }

export function chargeFor(usage: Usage, price: PriceNano, mode: KeyMode): CallCharge {
  if (mode !== 'credit') return { nano: 0, tokens: tokensCharged(usage), worstCase: null, longContext: false };
  const cost = costOf(usage, price);
  return { nano: cost.nano, tokens: 0, worstCase: cost.worstCase, longContext: cost.longContext };
}

/** The record fields that say what kinds of tokens a call used and how they were read and priced. */
export function usageDetail(usage: Usage | undefined, estimateReason: string | null, charge: CallCharge): Pick<UsageRecord,
  'cacheWrite1hTokens' | 'audioInputTokens' | 'imageInputTokens' | 'audioOutputTokens' | 'imageOutputTokens' | 'toolCalls' | 'serviceTier' | 'estimateReason' | 'worstCase' | 'longContext'> {
  const tools = usage === undefined ? [] : Object.entries(usage.toolCalls).filter(([, n]) => n > 0);
  return {
    cacheWrite1hTokens: usage?.cacheWrite1h ?? 0,
    audioInputTokens: usage?.audioInput ?? 0,
    imageInputTokens: usage?.imageInput ?? 0,
    audioOutputTokens: usage?.audioOutput ?? 0,
    imageOutputTokens: usage?.imageOutput ?? 0,
    toolCalls: tools.length === 0 ? null : Object.fromEntries(tools),
    serviceTier: usage?.serviceTier ?? null,
    estimateReason: usage === undefined ? null : estimateReason,
    worstCase: charge.worstCase,
    longContext: charge.longContext,
  };
}

/**
 * The dearest an input token and an output token of a call can cost under this price, for a
 * hold placed before the call (its worst case): over the standard rates, every service tier and
 * the long-context rates, and over fresh input, cache reads and 5-minute and 1-hour cache
 * writes. Whatever tier, context length or cache duration the answer turns out to use, its text
 * tokens cost no more than `input × these.input + output × these.output`.
 * Not covered: audio and image tokens, tool fees, and levers only an answer reveals that the
 * price has no rate for (charged at `maxRate`, see costOf).
 */
export function holdRates(price: PriceNano): { input: number; output: number } {
  let input = 0;
  let output = 0;
  for (const t of [price, ...price.tiers.values(), ...(price.longContext === null ? [] : [price.longContext])]) {
    input = Math.max(input, t.input, t.cachedInput, t.cacheWrite ?? 0, t.cacheWrite1h ?? 0);
    output = Math.max(output, t.output);
  }
  return { input, output };
}
