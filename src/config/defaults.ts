import type { RawConfig } from './types.js';

/**
 * The built-in configuration used when no config file is given: OpenAI and Anthropic as
 * providers and a small catalogue of their current models at their public list prices
 * (USD per million tokens). `maxOutputTokens` is each model's published output limit: the
 * cap a call's hold assumes when its body sets none.
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
    'gpt-5': { provider: 'openai', endpoints: ['chat', 'responses'], price: { input: 1.25, output: 10, cachedInput: 0.125 }, contextWindow: 400000, maxOutputTokens: 128000, capabilities: ['tools', 'vision', 'reasoning'] },
    'gpt-5-mini': { provider: 'openai', endpoints: ['chat', 'responses'], price: { input: 0.25, output: 2, cachedInput: 0.025 }, contextWindow: 400000, maxOutputTokens: 128000, capabilities: ['tools', 'vision', 'reasoning'] },
    'gpt-5-nano': { provider: 'openai', endpoints: ['chat', 'responses'], price: { input: 0.05, output: 0.4, cachedInput: 0.005 }, contextWindow: 400000, maxOutputTokens: 128000, capabilities: ['tools', 'vision', 'reasoning'] },
    'gpt-4.1': { provider: 'openai', endpoints: ['chat', 'responses'], price: { input: 2, output: 8, cachedInput: 0.5 }, contextWindow: 1047576, maxOutputTokens: 32768, capabilities: ['tools', 'vision'] },
    'gpt-4.1-mini': { provider: 'openai', endpoints: ['chat', 'responses'], price: { input: 0.4, output: 1.6, cachedInput: 0.1 }, contextWindow: 1047576, maxOutputTokens: 32768, capabilities: ['tools', 'vision'] },
    'gpt-4o': { provider: 'openai', endpoints: ['chat', 'responses'], price: { input: 2.5, output: 10, cachedInput: 1.25 }, contextWindow: 128000, maxOutputTokens: 16384, capabilities: ['tools', 'vision'] },
    'gpt-4o-mini': { provider: 'openai', endpoints: ['chat', 'responses'], price: { input: 0.15, output: 0.6, cachedInput: 0.075 }, contextWindow: 128000, maxOutputTokens: 16384, capabilities: ['tools', 'vision'] },
    'o4-mini': { provider: 'openai', endpoints: ['chat', 'responses'], price: { input: 1.1, output: 4.4, cachedInput: 0.275 }, contextWindow: 200000, maxOutputTokens: 100000, capabilities: ['tools', 'vision', 'reasoning'] },
    'claude-opus-4-1': { provider: 'anthropic', endpoints: ['messages'], price: { input: 15, output: 75, cachedInput: 1.5, cacheWrite: 18.75 }, contextWindow: 200000, maxOutputTokens: 32000, capabilities: ['tools', 'vision', 'reasoning'] },
    'claude-sonnet-4-5': { provider: 'anthropic', endpoints: ['messages'], price: { input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75 }, contextWindow: 200000, maxOutputTokens: 64000, capabilities: ['tools', 'vision', 'reasoning'] },
    'claude-haiku-4-5': { provider: 'anthropic', endpoints: ['messages'], price: { input: 1, output: 5, cachedInput: 0.1, cacheWrite: 1.25 }, contextWindow: 200000, maxOutputTokens: 64000, capabilities: ['tools', 'vision'] },
  },
};
