import type { RawConfig } from './types.js';

/**
 * The built-in configuration used when no config file is given: OpenAI and Anthropic as
 * providers and a small catalogue of their current models at their public list prices
 * (USD per million tokens; tool fees in USD per 1,000 calls). `maxOutputTokens` is each model's
 * published output limit: the cap a call's hold assumes when its body sets none.
 *
 * Sources (read 2026-11-23 through a search index of the providers' pages; the pages carry no
 * date of their own, so each is cited with the date it was read):
 * - OpenAI standard rates: as in the previous catalogue; developers.openai.com/api/docs/models/
 *   gpt-5-nano (read 2026-11-23) shows the same 0.05 / 0.005 cached / 0.40.
 * - OpenAI priority rates: openai.com/api-priority-processing (read 2026-11-23), input / cached
 *   input / output: GPT-5 2.50/0.25/20, GPT-5 mini 0.45/0.045/3.60, GPT-4.1 3.50/0.875/14,
 *   GPT-4.1 mini 0.70/0.175/2.80, GPT-4o 4.25/2.125/17. No priority rate was found for GPT-4o
 *   mini, GPT-5 nano or o4-mini, so none is configured (a request asking for one is refused,
 *   README "Prices").
 * - OpenAI flex rates: half the standard rates, as flex processing is priced (OpenAI's launch of
 *   flex, 2025-04-17: o4-mini 0.55/2.20 against 1.10/4.40; Azure OpenAI's flex page, read
 *   2026-11-23: "50% discount compared to standard processing"). A cached-input rate with a
 *   fourth decimal (GPT-5's 0.0625) is rounded up to the next 0.001, the precision of prices here.
 * - OpenAI built-in tool fees, from platform.openai.com/docs/pricing as quoted in new-api's
 *   setting/operation_setting/tools.go (read 2026-11-23): web search $10 per 1,000 calls on
 *   GPT-5 and o-series models, $25 on GPT-4o and GPT-4.1 models; file search $2.50.
 * - Anthropic: docs.anthropic.com/en/docs/about-claude/pricing (read 2026-11-23): base input,
 *   5-minute cache writes (1.25×), 1-hour cache writes (2×), cache hits (0.1×) and output per
 *   model; Claude Sonnet 4.5 with the 1M context window (`context-1m` beta) above 200K input
 *   tokens: $6 input / $22.50 output for every token, the caching multipliers applied to the $6;
 *   web search $10 per 1,000 searches (platform.claude.com web search tool page). Priority Tier
 *   rates are not published, so none is configured.
 */
export const DEFAULT_CONFIG: RawConfig = {
  server: { host: '127.0.0.1', port: 8080 },
  dataDir: './data',
  providers: {
    openai: { baseUrl: 'https://api.openai.com/v1', auth: 'bearer', apiKeyEnv: 'OPENAI_API_KEY' },
    anthropic: { baseUrl: 'https://api.anthropic.com/v1', auth: 'x-api-key', apiKeyEnv: 'ANTHROPIC_API_KEY' },
  },
  catalogProvider: { openai: 'openai', anthropic: 'anthropic' },
  models: {
    'gpt-5': {
      provider: 'openai', endpoints: ['chat', 'responses'], contextWindow: 400000, maxOutputTokens: 128000, capabilities: ['tools', 'vision', 'reasoning'],
      price: {
        input: 1.25, output: 10, cachedInput: 0.125,
        tiers: { priority: { input: 2.5, output: 20, cachedInput: 0.25 }, flex: { input: 0.625, output: 5, cachedInput: 0.063 } },
        toolCalls: { web_search: 10, file_search: 2.5 },
      },
    },
    'gpt-5-mini': {
      provider: 'openai', endpoints: ['chat', 'responses'], contextWindow: 400000, maxOutputTokens: 128000, capabilities: ['tools', 'vision', 'reasoning'],
      price: {
        input: 0.25, output: 2, cachedInput: 0.025,
        tiers: { priority: { input: 0.45, output: 3.6, cachedInput: 0.045 }, flex: { input: 0.125, output: 1, cachedInput: 0.013 } },
        toolCalls: { web_search: 10, file_search: 2.5 },
      },
    },
    'gpt-5-nano': {
      provider: 'openai', endpoints: ['chat', 'responses'], contextWindow: 400000, maxOutputTokens: 128000, capabilities: ['tools', 'vision', 'reasoning'],
      price: {
        input: 0.05, output: 0.4, cachedInput: 0.005,
        tiers: { flex: { input: 0.025, output: 0.2, cachedInput: 0.003 } },
        toolCalls: { web_search: 10, file_search: 2.5 },
      },
    },
    'gpt-4.1': {
      provider: 'openai', endpoints: ['chat', 'responses'], contextWindow: 1047576, maxOutputTokens: 32768, capabilities: ['tools', 'vision'],
      price: { input: 2, output: 8, cachedInput: 0.5, tiers: { priority: { input: 3.5, output: 14, cachedInput: 0.875 } }, toolCalls: { web_search: 25, file_search: 2.5 } },
    },
    'gpt-4.1-mini': {
      provider: 'openai', endpoints: ['chat', 'responses'], contextWindow: 1047576, maxOutputTokens: 32768, capabilities: ['tools', 'vision'],
      price: { input: 0.4, output: 1.6, cachedInput: 0.1, tiers: { priority: { input: 0.7, output: 2.8, cachedInput: 0.175 } }, toolCalls: { web_search: 25, file_search: 2.5 } },
    },
    'gpt-4o': {
      provider: 'openai', endpoints: ['chat', 'responses'], contextWindow: 128000, maxOutputTokens: 16384, capabilities: ['tools', 'vision'],
      price: { input: 2.5, output: 10, cachedInput: 1.25, tiers: { priority: { input: 4.25, output: 17, cachedInput: 2.125 } }, toolCalls: { web_search: 25, file_search: 2.5 } },
    },
    'gpt-4o-mini': {
      provider: 'openai', endpoints: ['chat', 'responses'], contextWindow: 128000, maxOutputTokens: 16384, capabilities: ['tools', 'vision'],
      price: { input: 0.15, output: 0.6, cachedInput: 0.075, toolCalls: { web_search: 25, file_search: 2.5 } },
    },
    'o4-mini': {
      provider: 'openai', endpoints: ['chat', 'responses'], contextWindow: 200000, maxOutputTokens: 100000, capabilities: ['tools', 'vision', 'reasoning'],
      price: { input: 1.1, output: 4.4, cachedInput: 0.275, tiers: { flex: { input: 0.55, output: 2.2, cachedInput: 0.138 } }, toolCalls: { web_search: 10, file_search: 2.5 } },
    },
    'claude-opus-4-1': {
      provider: 'anthropic', endpoints: ['messages'], contextWindow: 200000, maxOutputTokens: 32000, capabilities: ['tools', 'vision', 'reasoning'],
      price: { input: 15, output: 75, cachedInput: 1.5, cacheWrite: 18.75, cacheWrite1h: 30, toolCalls: { web_search: 10 } },
    },
    'claude-sonnet-4-5': {
      provider: 'anthropic', endpoints: ['messages'], contextWindow: 200000, maxOutputTokens: 64000, capabilities: ['tools', 'vision', 'reasoning'],
      price: {
        input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75, cacheWrite1h: 6,
        longContext: { threshold: 200000, input: 6, output: 22.5, cachedInput: 0.6, cacheWrite: 7.5, cacheWrite1h: 12 },
        toolCalls: { web_search: 10 },
      },
    },
    'claude-haiku-4-5': {
      provider: 'anthropic', endpoints: ['messages'], contextWindow: 200000, maxOutputTokens: 64000, capabilities: ['tools', 'vision'],
      price: { input: 1, output: 5, cachedInput: 0.1, cacheWrite: 1.25, cacheWrite1h: 2, toolCalls: { web_search: 10 } },
    },
  },
};
