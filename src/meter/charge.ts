import type { PriceNano } from '../config/types.js';
import type { Usage } from '../formats/types.js';
import type { KeyMode } from '../store/types.js';

/**
 * The price of a call in nUSD (exact integer arithmetic, see money.ts): fresh input at the
 * input price, cached reads at `cachedInput`, cache writes at `cacheWrite` (both default to the
 * input price when not configured), and all output, reasoning included, at the output price.
 */
export function costNano(usage: Usage, price: PriceNano): number {
  const fresh = Math.max(0, usage.input - usage.cachedInput - usage.cacheWrite);
  return fresh * price.input + usage.cachedInput * price.cachedInput + usage.cacheWrite * price.cacheWrite + usage.output * price.output;
}

/** Tokens a token key is charged: every input and output token. */
export function tokensCharged(usage: Usage): number {
  return usage.input + usage.output;
}

/** What one call takes from its key's account. */
export function chargeFor(usage: Usage, price: PriceNano, mode: KeyMode): { nano: number; tokens: number } {
  return mode === 'credit' ? { nano: costNano(usage, price), tokens: 0 } : { nano: 0, tokens: tokensCharged(usage) };
}
