import { ANTHROPIC_MODELS } from './catalogue/anthropic.js';
import { OPENAI_MODELS } from './catalogue/openai.js';
import type { RawConfig } from './types.js';

/**
 * The built-in configuration used when no config file is given: OpenAI and Anthropic as
 * providers, and the built-in catalogue of their text models at their public list prices
 * (catalogue/openai.ts and catalogue/anthropic.ts: each price with its source and the date it
 * was read). A config file's `models` add to this catalogue (an entry of the same id replaces
 * the built-in one) unless it sets `"builtInModels": false` (config/load.ts).
 * `maxOutputTokens` is each model's published output limit: the cap a call's hold assumes when
 * its body sets none.
 */
export const DEFAULT_CONFIG: RawConfig = {
  server: { host: '127.0.0.1', port: 8080 },
  dataDir: './data',
  providers: {
    openai: { baseUrl: 'https://api.openai.com/v1', auth: 'bearer', apiKeyEnv: 'OPENAI_API_KEY' },
    anthropic: { baseUrl: 'https://api.anthropic.com/v1', auth: 'x-api-key', apiKeyEnv: 'ANTHROPIC_API_KEY' },
  },
  catalogProvider: { openai: 'openai', anthropic: 'anthropic' },
  models: { ...OPENAI_MODELS, ...ANTHROPIC_MODELS },
};
