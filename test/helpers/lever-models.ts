/**
 * Models priced with the optional price levers, for the tests of each lever. Prices are in USD
 * per million tokens (× 1000 = nUSD per token) and USD per 1,000 tool calls (× 1,000,000 = nUSD
 * per call), so every expected cost in the tests is a plain integer product.
 */
import { defaultConfig, testModels } from './harness.js';

export function leverModels(): Record<string, unknown> {
  return {
    // OpenAI-style: a priority tier, tool fees.
    tiered: {
      provider: 'openai', endpoints: ['chat', 'responses'],
      price: { input: 1, output: 4, cachedInput: 0.5, tiers: { priority: { input: 2, output: 8, cachedInput: 1 } }, toolCalls: { web_search: 10, file_search: 2.5 } },
    },
    // Base rates only: every lever is unpriced.
    'base-only': { provider: 'openai', endpoints: ['chat', 'responses'], price: { input: 1, output: 4 } },
    // Audio and image tokens at their own rates.
    media: { provider: 'openai', endpoints: ['chat', 'responses'], price: { input: 1, output: 4, audioInput: 40, audioOutput: 80, imageInput: 10, imageOutput: 40 } },
    // Long-context rates above 272,000 input tokens.
    'long-openai': {
      provider: 'openai', endpoints: ['chat', 'responses'],
      price: { input: 2.5, output: 15, cachedInput: 0.25, longContext: { threshold: 272000, input: 5, output: 22.5, cachedInput: 0.5 } },
    },
    // Anthropic with every lever priced.
    'claude-full': {
      provider: 'anthropic', endpoints: ['messages'],
      price: {
        input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75, cacheWrite1h: 6,
        longContext: { threshold: 200000, input: 6, output: 22.5, cachedInput: 0.6, cacheWrite: 7.5, cacheWrite1h: 12 },
        toolCalls: { web_search: 10 },
      },
    },
    // Anthropic with base and 5-minute cache rates only.
    'claude-base': { provider: 'anthropic', endpoints: ['messages'], price: { input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75 } },
  };
}

/** The test catalogue plus the lever models. */
export function leverConfig(mockUrl: string): Record<string, unknown> {
  return { ...defaultConfig(mockUrl), models: { ...testModels(), ...leverModels() } };
}
