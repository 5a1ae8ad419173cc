/**
 * What a call should cost, worked out here from the usage the scripted provider reported and the
 * model's price as tollgate lists it (`tollgate models list --json`), without any of tollgate's
 * metering code: the check that its bill is right has to stand on its own.
 *
 * Prices are USD per million tokens with at most 3 decimals, so P USD/MTok is exactly P × 1000
 * nano-USD per token (README "Prices"); costs are compared in nano-USD, exactly.
 */
import type { ReportedUsage } from './scripted-provider.js';

/** A price as `models list --json` shows it (the fields these calls can use). */
export interface ListedRates { input: number; output: number; cachedInput?: number; cacheWrite?: number; cacheWrite1h?: number }
export interface ListedPrice extends ListedRates {
  tiers?: Record<string, ListedRates>;
  longContext?: ListedRates & { threshold: number };
}
export interface ListedModel { id: string; aliases?: string[]; price: ListedPrice }

/** The token counts a usage record should show for this usage. */
export interface ExpectedTokens {
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
  cacheWriteTokens: number;
  cacheWrite1hTokens: number;
  reasoningTokens: number;
}

export function expectedTokens(usage: ReportedUsage): ExpectedTokens {
  switch (usage.format) {
    case 'messages':
      return {
        // Anthropic reports fresh input beside the cache reads and writes; all three are input.
        inputTokens: usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens,
        outputTokens: usage.output_tokens,
        cachedInputTokens: usage.cache_read_input_tokens,
        cacheWriteTokens: usage.cache_creation_input_tokens,
        cacheWrite1hTokens: usage.ephemeral_1h_input_tokens,
        reasoningTokens: 0,
      };
    case 'responses':
      // OpenAI counts cache reads and writes inside the input.
      return { inputTokens: usage.input_tokens, outputTokens: usage.output_tokens, cachedInputTokens: usage.cached_tokens, cacheWriteTokens: usage.cache_write_tokens, cacheWrite1hTokens: 0, reasoningTokens: usage.reasoning_tokens };
    case 'chat':
      return { inputTokens: usage.prompt_tokens, outputTokens: usage.completion_tokens, cachedInputTokens: usage.cached_tokens, cacheWriteTokens: usage.cache_write_tokens, cacheWrite1hTokens: 0, reasoningTokens: usage.reasoning_tokens };
  }
}

/** nano-USD per token for a rate in USD per million tokens (exact for ≤ 3 decimals). */
function nanoPerToken(usdPerMillion: number): number {
  return Math.round(usdPerMillion * 1000);
}

/** The model entry serving `id` (its own id or one of its aliases). */
export function findModel(models: readonly ListedModel[], id: string): ListedModel | undefined {
  return models.find((m) => m.id === id) ?? models.find((m) => m.aliases?.includes(id) === true);
}

export interface Expected { costNanoUsd: number; tokensCharged: number; tokens: ExpectedTokens; rates: string }

/**
 * The cost in nano-USD of a call that reported `usage`, at `price`: fresh input, cache reads,
 * 5-minute and 1-hour cache writes and output, each at its rate; a call whose whole prompt (cache
 * reads and writes included) exceeds the long-context threshold at the long-context rates; the
 * service tier the answer reports, when it is not the standard one, at that tier's rates.
 * Throws when the price has no rate for tokens the call reported (tollgate would then bill them
 * at its highest rate, which is not what the provider charges).
 */
export function expectedBill(usage: ReportedUsage, price: ListedPrice): Expected {
  const tokens = expectedTokens(usage);
  const tier = usage.format === 'messages' || usage.service_tier === 'default' || usage.service_tier === 'auto' ? null : usage.service_tier;
  let rates: ListedRates = price;
  let which = 'standard';
  if (tier !== null) {
    const tierRates = price.tiers?.[tier];
    if (tierRates === undefined) throw new Error(`the price has no rates for service tier ${tier}`);
    rates = tierRates;
    which = `tier ${tier}`;
  }
  if (price.longContext !== undefined && tokens.inputTokens > price.longContext.threshold) {
    rates = price.longContext;
    which = `long context (> ${price.longContext.threshold} input tokens)`;
  }
  const fresh = tokens.inputTokens - tokens.cachedInputTokens - tokens.cacheWriteTokens;
  const fiveMinute = tokens.cacheWriteTokens - tokens.cacheWrite1hTokens;
  const rate = (name: keyof ListedRates, count: number): number => {
    if (count === 0) return 0;
    const value = rates[name];
    if (value === undefined) throw new Error(`the price (${which}) has no ${name} rate, and the call reported ${count} such tokens`);
    return nanoPerToken(value) * count;
  };
  const costNanoUsd = rate('input', fresh)
    + (tokens.cachedInputTokens === 0 ? 0 : nanoPerToken(rates.cachedInput ?? rates.input) * tokens.cachedInputTokens)
    + rate('cacheWrite', fiveMinute)
    + rate('cacheWrite1h', tokens.cacheWrite1hTokens)
    + rate('output', tokens.outputTokens);
  return { costNanoUsd, tokensCharged: tokens.inputTokens + tokens.outputTokens, tokens, rates: which };
}
