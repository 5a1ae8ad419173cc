import type { Model, PriceNano } from '../config/types.js';
import type { RequestLevers } from '../formats/levers.js';

/**
 * The first price lever a request pulls that the model's price has no rate for, in words for
 * the error message; null when the price covers every lever pulled. Such a request is refused
 * before it is forwarded (400 `unpriced_option`): a credit key is never billed at a rate the
 * gateway had to guess for an option the client asked for by name.
 */
export function unpricedLever(levers: RequestLevers, price: PriceNano): string | null {
  if (levers.serviceTier !== null && !price.tiers.has(levers.serviceTier)) return `service_tier "${levers.serviceTier}"`;
  if (levers.cacheWrite1h && price.cacheWrite1h === undefined) return '1-hour cache writes (cache_control ttl "1h")';
  if (levers.longContext && price.longContext === null) return 'the long context window (anthropic-beta context-1m)';
  for (const tool of levers.tools) if (!price.toolCalls.has(tool)) return `the ${tool} tool`;
  return null;
}

/** The message of the refusal of a request pulling an unpriced lever, or null when there is none. */
export function unpricedRefusal(levers: RequestLevers, model: Model): string | null {
  const option = unpricedLever(levers, model.price);
  return option === null ? null
    : `This request asks for ${option}, which changes what the provider charges, and this gateway has no price for it on ${model.id}. Leave it out, or ask the gateway's operator to price it.`;
}
