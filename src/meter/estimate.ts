import type { Usage } from '../formats/types.js';

/**
 * A conservative estimate for a call whose provider never reported usage: about four bytes
 * per token of request body (input) and of response body seen (output). Records built from it
 * say `estimated: true`.
 */
export function estimateUsage(requestBytes: number, responseBytes: number): Usage {
  return { input: Math.ceil(requestBytes / 4), cachedInput: 0, cacheWrite: 0, output: Math.ceil(responseBytes / 4), reasoning: 0 };
}
