import type { Model } from '../config/types.js';
import type { RequestLevers } from '../formats/levers.js';
import { namedTable } from './charge.js';

/**
 * The context window Anthropic serves without the `context-1m` beta. A model whose own window is
 * larger (the 4.6 generation on) prices its whole window at its own rates, so the beta asks for
 * nothing the price does not cover.
 */
const STANDARD_WINDOW = 200_000;

/**
 * The first price lever a request pulls that the model's price has no rate for, in words for
 * the error message; null when the price covers every lever pulled. Such a request is refused
 * before it is forwarded (400 `unpriced_option`): a credit key is never billed at a rate the
 * gateway had to guess for an option the client asked for by name. Calls through a provider
 * that processes in a region the price has no multiplier for are refused the same way: the
 * region is the operator's choice, but the price of every call depends on it.
 */
export function unpricedLever(levers: RequestLevers, model: Model): string | null {
  const price = model.price;
  if (levers.serviceTier !== null && !price.tiers.has(levers.serviceTier)) return `service_tier "${levers.serviceTier}"`;
  if (levers.speed !== null && !price.speed.has(levers.speed)) return `speed "${levers.speed}"`;
  if (levers.inferenceGeo !== null && !price.inferenceGeo.has(levers.inferenceGeo)) return `inference_geo "${levers.inferenceGeo}"`;
  if (price.region !== null && price.region.multiplier === null) return `regional processing in "${price.region.name}" (the gateway's provider ${model.provider.name})`;
  // A cache write is priced by the table the call uses: a tier's or a speed's when one is named.
  const table = namedTable(price, levers)!;
  const by = levers.serviceTier !== null ? ` with service_tier "${levers.serviceTier}"` : levers.speed !== null ? ` with speed "${levers.speed}"` : '';
  if (levers.cacheWrite1h && table.cacheWrite1h === undefined) return `1-hour cache writes (cache_control ttl "1h")${by}`;
  if (levers.cacheWriteExtended && table.cacheWriteExtended === undefined) return `extended prompt-cache retention (prompt_cache_retention)${by}`;
  if (levers.longContext && price.longContext === null && !((model.contextWindow ?? 0) > STANDARD_WINDOW)) return 'the long context window (anthropic-beta context-1m)';
  for (const tool of levers.tools) if (!price.toolCalls.has(tool)) return `the ${tool} tool`;
  return null;
}

/** The message of the refusal of a request pulling an unpriced lever, or null when there is none. */
export function unpricedRefusal(levers: RequestLevers, model: Model): string | null {
  const option = unpricedLever(levers, model);
  return option === null ? null
    : `This request asks for ${option}, which changes what the provider charges, and this gateway has no price for it on ${model.id}. Leave it out, or ask the gateway's operator to price it.`;
}
