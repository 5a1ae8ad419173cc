/**
 * Every entry of the built-in catalogue, priced: one call per entry and per lever combination
 * it prices, through the gateway, against the dollars worked out by hand from the figures each
 * entry cites (src/config/catalogue/; the research the figures come from names every page).
 * The amounts below are not computed by the code under test: each row's comment shows the sum.
 *
 * The calls report fixed token counts (the mock provider's usage switch), so that each amount is
 * the rates times round numbers:
 * - OpenAI, short: 200K input of which 100K cache reads and 50K cache writes (`cache_write_tokens`),
 *   so 50K fresh; 100K output. Long (above 272K): 400K input (200K reads, 100K writes, 100K fresh),
 *   100K output.
 * - Anthropic, short: 20K fresh input, 50K cache reads, 10K 5-minute and 10K 1-hour cache writes,
 *   100K output (a 90K prompt). Long: 100K fresh (a 170K prompt, above Haiku 5.5's 100K), or 200K
 *   fresh (a 270K prompt, above Sonnet 4.5's 200K, with the context-1m beta).
 * Levers: `standard+web_search` (one search: $10, or $25 per 1,000 on GPT-4o and GPT-4.1),
 * `tier:NAME` (service_tier asked for and reported; fast and priority are one tier), `long`,
 * `extended` (prompt_cache_retention: writes at the extended rate), `speed:fast`, `geo:us`
 * (inference_geo, 1.1×), and, through a provider processing in the EU, regional processing (1.1×).
 *
 * Both surfaces: each call on the credit surface is billed these dollars; on the token surface
 * the same call is served (no lever refused: tokens are what is charged) and charged its tokens.
 * Chat Completions and Responses alternate, as do plain and streamed answers.
 */
import t, { type Test } from 'tap';
import { defaultConfig, post, startGateway, usageOf, type Harness } from './helpers/harness.js';

/** [entry, levers, USD] */
type Row = [string, string, number];

const TABLE: Row[] = [
  ['gpt-6.2-sol', 'standard+web_search', 1.245], // (50K × 2 + 100K × 0.1 + 50K × 2.5 + 100K × 10) / 1M + 0.01
  ['gpt-6.2-sol', 'tier:fast', 2.47], // (50K × 4 + 100K × 0.2 + 50K × 5 + 100K × 20) / 1M
  ['gpt-6.2-sol', 'tier:priority', 2.47], // (50K × 4 + 100K × 0.2 + 50K × 5 + 100K × 20) / 1M
  ['gpt-6.2-sol', 'tier:fast+long', 4.88], // (100K × 8 + 200K × 0.4 + 100K × 10 + 100K × 30) / 1M
  ['gpt-6.2-sol', 'tier:fast+extended', 2.72], // (50K × 4 + 100K × 0.2 + 50K × 10 + 100K × 20) / 1M
  ['gpt-6.2-sol', 'tier:ultrafast', 3.705], // (50K × 6 + 100K × 0.3 + 50K × 7.5 + 100K × 30) / 1M
  ['gpt-6.2-sol', 'tier:ultrafast+extended', 4.08], // (50K × 6 + 100K × 0.3 + 50K × 15 + 100K × 30) / 1M
  ['gpt-6.2-sol', 'long', 2.44], // (100K × 4 + 200K × 0.2 + 100K × 5 + 100K × 15) / 1M
  ['gpt-6.2-sol', 'extended', 1.36], // (50K × 2 + 100K × 0.1 + 50K × 5 + 100K × 10) / 1M
  ['gpt-6.2-sol', 'long+extended', 2.94], // (100K × 4 + 200K × 0.2 + 100K × 10 + 100K × 15) / 1M
  ['gpt-6.2-astra', 'standard+web_search', 4.95], // (50K × 8 + 100K × 0.4 + 50K × 10 + 100K × 40) / 1M + 0.01
  ['gpt-6.2-astra', 'long', 9.76], // (100K × 16 + 200K × 0.8 + 100K × 20 + 100K × 60) / 1M
  ['gpt-6.1-sol', 'standard+web_search', 1.245], // (50K × 2 + 100K × 0.1 + 50K × 2.5 + 100K × 10) / 1M + 0.01
  ['gpt-6.1-sol', 'tier:fast', 2.47], // (50K × 4 + 100K × 0.2 + 50K × 5 + 100K × 20) / 1M
  ['gpt-6.1-sol', 'tier:priority', 2.47], // (50K × 4 + 100K × 0.2 + 50K × 5 + 100K × 20) / 1M
  ['gpt-6.1-sol', 'tier:fast+long', 4.88], // (100K × 8 + 200K × 0.4 + 100K × 10 + 100K × 30) / 1M
  ['gpt-6.1-sol', 'tier:ultrafast', 7.41], // (50K × 12 + 100K × 0.6 + 50K × 15 + 100K × 60) / 1M
  ['gpt-6.1-sol', 'long', 2.44], // (100K × 4 + 200K × 0.2 + 100K × 5 + 100K × 15) / 1M
  ['gpt-6.1-terra', 'standard+web_search', 0.6275], // (50K × 1 + 100K × 0.05 + 50K × 1.25 + 100K × 5) / 1M + 0.01
  ['gpt-6.1-terra', 'tier:fast', 1.235], // (50K × 2 + 100K × 0.1 + 50K × 2.5 + 100K × 10) / 1M
  ['gpt-6.1-terra', 'tier:priority', 1.235], // (50K × 2 + 100K × 0.1 + 50K × 2.5 + 100K × 10) / 1M
  ['gpt-6.1-terra', 'tier:fast+long', 2.44], // (100K × 4 + 200K × 0.2 + 100K × 5 + 100K × 15) / 1M
  ['gpt-6.1-terra', 'tier:fast+extended', 1.36], // (50K × 2 + 100K × 0.1 + 50K × 5 + 100K × 10) / 1M
  ['gpt-6.1-terra', 'tier:flex', 0.30875], // (50K × 0.5 + 100K × 0.025 + 50K × 0.625 + 100K × 2.5) / 1M
  ['gpt-6.1-terra', 'tier:flex+long', 0.61], // (100K × 1 + 200K × 0.05 + 100K × 1.25 + 100K × 3.75) / 1M
  ['gpt-6.1-terra', 'tier:flex+extended', 0.34], // (50K × 0.5 + 100K × 0.025 + 50K × 1.25 + 100K × 2.5) / 1M
  ['gpt-6.1-terra', 'long', 1.22], // (100K × 2 + 200K × 0.1 + 100K × 2.5 + 100K × 7.5) / 1M
  ['gpt-6.1-terra', 'extended', 0.68], // (50K × 1 + 100K × 0.05 + 50K × 2.5 + 100K × 5) / 1M
  ['gpt-6.1-terra', 'long+extended', 1.47], // (100K × 2 + 200K × 0.1 + 100K × 5 + 100K × 7.5) / 1M
  ['gpt-6-astra', 'standard+web_search', 6.235], // (50K × 10 + 100K × 1 + 50K × 12.5 + 100K × 50) / 1M + 0.01
  ['gpt-6-astra', 'tier:fast', 12.45], // (50K × 20 + 100K × 2 + 50K × 25 + 100K × 100) / 1M
  ['gpt-6-astra', 'tier:priority', 12.45], // (50K × 20 + 100K × 2 + 50K × 25 + 100K × 100) / 1M
  ['gpt-6-astra', 'tier:fast+long', 24.8], // (100K × 40 + 200K × 4 + 100K × 50 + 100K × 150) / 1M
  ['gpt-6-astra', 'tier:ultrafast', 37.35], // (50K × 60 + 100K × 6 + 50K × 75 + 100K × 300) / 1M
  ['gpt-6-astra', 'long', 12.4], // (100K × 20 + 200K × 2 + 100K × 25 + 100K × 75) / 1M
  ['gpt-6-sol', 'standard+web_search', 1.255], // (50K × 2 + 100K × 0.2 + 50K × 2.5 + 100K × 10) / 1M + 0.01
  ['gpt-6-sol', 'long', 2.48], // (100K × 4 + 200K × 0.4 + 100K × 5 + 100K × 15) / 1M
  ['gpt-6-luna', 'standard+web_search', 0.07225], // (50K × 0.1 + 100K × 0.01 + 50K × 0.125 + 100K × 0.5) / 1M + 0.01
  ['gpt-6-luna', 'tier:fast', 0.1245], // (50K × 0.2 + 100K × 0.02 + 50K × 0.25 + 100K × 1) / 1M
  ['gpt-6-luna', 'tier:priority', 0.1245], // (50K × 0.2 + 100K × 0.02 + 50K × 0.25 + 100K × 1) / 1M
  ['gpt-6-luna', 'tier:fast+long', 0.248], // (100K × 0.4 + 200K × 0.04 + 100K × 0.5 + 100K × 1.5) / 1M
  ['gpt-6-luna', 'tier:flex', 0.03115], // (50K × 0.05 + 100K × 0.005 + 50K × 0.063 + 100K × 0.25) / 1M
  ['gpt-6-luna', 'tier:flex+long', 0.062], // (100K × 0.1 + 200K × 0.01 + 100K × 0.125 + 100K × 0.375) / 1M
  ['gpt-6-luna', 'long', 0.124], // (100K × 0.2 + 200K × 0.02 + 100K × 0.25 + 100K × 0.75) / 1M
  ['gpt-5.6-sol', 'standard+web_search', 3.6225], // (50K × 5 + 100K × 0.5 + 50K × 6.25 + 100K × 30) / 1M + 0.01
  ['gpt-5.6-sol', 'tier:fast', 7.225], // (50K × 10 + 100K × 1 + 50K × 12.5 + 100K × 60) / 1M
  ['gpt-5.6-sol', 'tier:priority', 7.225], // (50K × 10 + 100K × 1 + 50K × 12.5 + 100K × 60) / 1M
  ['gpt-5.6-sol', 'tier:fast+long', 13.9], // (100K × 20 + 200K × 2 + 100K × 25 + 100K × 90) / 1M
  ['gpt-5.6-sol', 'long', 6.95], // (100K × 10 + 200K × 1 + 100K × 12.5 + 100K × 45) / 1M
  ['gpt-5.6-terra', 'standard+web_search', 1.455], // (50K × 2 + 100K × 0.2 + 50K × 2.5 + 100K × 12) / 1M + 0.01
  ['gpt-5.6-terra', 'tier:fast', 2.89], // (50K × 4 + 100K × 0.4 + 50K × 5 + 100K × 24) / 1M
  ['gpt-5.6-terra', 'tier:priority', 2.89], // (50K × 4 + 100K × 0.4 + 50K × 5 + 100K × 24) / 1M
  ['gpt-5.6-terra', 'tier:fast+long', 5.56], // (100K × 8 + 200K × 0.8 + 100K × 10 + 100K × 36) / 1M
  ['gpt-5.6-terra', 'long', 2.78], // (100K × 4 + 200K × 0.4 + 100K × 5 + 100K × 18) / 1M
  ['gpt-5.6-luna', 'standard+web_search', 0.1545], // (50K × 0.2 + 100K × 0.02 + 50K × 0.25 + 100K × 1.2) / 1M + 0.01
  ['gpt-5.6-luna', 'tier:fast', 0.289], // (50K × 0.4 + 100K × 0.04 + 50K × 0.5 + 100K × 2.4) / 1M
  ['gpt-5.6-luna', 'tier:priority', 0.289], // (50K × 0.4 + 100K × 0.04 + 50K × 0.5 + 100K × 2.4) / 1M
  ['gpt-5.6-luna', 'tier:fast+long', 0.556], // (100K × 0.8 + 200K × 0.08 + 100K × 1 + 100K × 3.6) / 1M
  ['gpt-5.6-luna', 'long', 0.278], // (100K × 0.4 + 200K × 0.04 + 100K × 0.5 + 100K × 1.8) / 1M
  ['gpt-5.5', 'standard+web_search', 3.56], // (50K × 5 + 100K × 0.5 + 50K × 5 + 100K × 30) / 1M + 0.01
  ['gpt-5.5', 'tier:fast', 8.875], // (50K × 12.5 + 100K × 1.25 + 50K × 12.5 + 100K × 75) / 1M
  ['gpt-5.5', 'tier:priority', 8.875], // (50K × 12.5 + 100K × 1.25 + 50K × 12.5 + 100K × 75) / 1M
  ['gpt-5.5', 'tier:fast+extended', 8.875], // (50K × 12.5 + 100K × 1.25 + 50K × 12.5 + 100K × 75) / 1M
  ['gpt-5.5', 'extended', 3.55], // (50K × 5 + 100K × 0.5 + 50K × 5 + 100K × 30) / 1M
  ['gpt-5.5', 'long', 6.7], // (100K × 10 + 200K × 1 + 100K × 10 + 100K × 45) / 1M
  ['gpt-5.5-pro', 'standard+web_search', 24.01], // (50K × 30 + 100K × 30 + 50K × 30 + 100K × 180) / 1M + 0.01
  ['gpt-5.5-pro', 'extended', 24], // (50K × 30 + 100K × 30 + 50K × 30 + 100K × 180) / 1M
  ['gpt-5.4', 'standard+web_search', 1.785], // (50K × 2.5 + 100K × 0.25 + 50K × 2.5 + 100K × 15) / 1M + 0.01
  ['gpt-5.4', 'tier:fast', 3.55], // (50K × 5 + 100K × 0.5 + 50K × 5 + 100K × 30) / 1M
  ['gpt-5.4', 'tier:priority', 3.55], // (50K × 5 + 100K × 0.5 + 50K × 5 + 100K × 30) / 1M
  ['gpt-5.4', 'tier:fast+extended', 3.55], // (50K × 5 + 100K × 0.5 + 50K × 5 + 100K × 30) / 1M
  ['gpt-5.4', 'extended', 1.775], // (50K × 2.5 + 100K × 0.25 + 50K × 2.5 + 100K × 15) / 1M
  ['gpt-5.4', 'long', 3.35], // (100K × 5 + 200K × 0.5 + 100K × 5 + 100K × 22.5) / 1M
  ['gpt-5.4-mini', 'standard+web_search', 0.5425], // (50K × 0.75 + 100K × 0.075 + 50K × 0.75 + 100K × 4.5) / 1M + 0.01
  ['gpt-5.4-mini', 'tier:fast', 1.065], // (50K × 1.5 + 100K × 0.15 + 50K × 1.5 + 100K × 9) / 1M
  ['gpt-5.4-mini', 'tier:priority', 1.065], // (50K × 1.5 + 100K × 0.15 + 50K × 1.5 + 100K × 9) / 1M
  ['gpt-5.4-mini', 'tier:fast+extended', 1.065], // (50K × 1.5 + 100K × 0.15 + 50K × 1.5 + 100K × 9) / 1M
  ['gpt-5.4-mini', 'extended', 0.5325], // (50K × 0.75 + 100K × 0.075 + 50K × 0.75 + 100K × 4.5) / 1M
  ['gpt-5.4-nano', 'standard+web_search', 0.157], // (50K × 0.2 + 100K × 0.02 + 50K × 0.2 + 100K × 1.25) / 1M + 0.01
  ['gpt-5.4-nano', 'extended', 0.147], // (50K × 0.2 + 100K × 0.02 + 50K × 0.2 + 100K × 1.25) / 1M
  ['gpt-5.4-pro', 'standard+web_search', 24.01], // (50K × 30 + 100K × 30 + 50K × 30 + 100K × 180) / 1M + 0.01
  ['gpt-5.4-pro', 'extended', 24], // (50K × 30 + 100K × 30 + 50K × 30 + 100K × 180) / 1M
  ['gpt-5.4-pro', 'long', 51], // (100K × 60 + 200K × 60 + 100K × 60 + 100K × 270) / 1M
  ['gpt-5.2', 'standard+web_search', 1.6025], // (50K × 1.75 + 100K × 0.175 + 50K × 1.75 + 100K × 14) / 1M + 0.01
  ['gpt-5.2', 'tier:fast', 3.185], // (50K × 3.5 + 100K × 0.35 + 50K × 3.5 + 100K × 28) / 1M
  ['gpt-5.2', 'tier:priority', 3.185], // (50K × 3.5 + 100K × 0.35 + 50K × 3.5 + 100K × 28) / 1M
  ['gpt-5.2', 'tier:fast+extended', 3.185], // (50K × 3.5 + 100K × 0.35 + 50K × 3.5 + 100K × 28) / 1M
  ['gpt-5.2', 'extended', 1.5925], // (50K × 1.75 + 100K × 0.175 + 50K × 1.75 + 100K × 14) / 1M
  ['gpt-5.1', 'standard+web_search', 1.1475], // (50K × 1.25 + 100K × 0.125 + 50K × 1.25 + 100K × 10) / 1M + 0.01
  ['gpt-5.1', 'tier:fast', 2.275], // (50K × 2.5 + 100K × 0.25 + 50K × 2.5 + 100K × 20) / 1M
  ['gpt-5.1', 'tier:priority', 2.275], // (50K × 2.5 + 100K × 0.25 + 50K × 2.5 + 100K × 20) / 1M
  ['gpt-5.1', 'tier:fast+extended', 2.275], // (50K × 2.5 + 100K × 0.25 + 50K × 2.5 + 100K × 20) / 1M
  ['gpt-5.1', 'extended', 1.1375], // (50K × 1.25 + 100K × 0.125 + 50K × 1.25 + 100K × 10) / 1M
  ['gpt-5.1-codex', 'standard+web_search', 1.1475], // (50K × 1.25 + 100K × 0.125 + 50K × 1.25 + 100K × 10) / 1M + 0.01
  ['gpt-5.1-codex', 'tier:fast', 2.275], // (50K × 2.5 + 100K × 0.25 + 50K × 2.5 + 100K × 20) / 1M
  ['gpt-5.1-codex', 'tier:priority', 2.275], // (50K × 2.5 + 100K × 0.25 + 50K × 2.5 + 100K × 20) / 1M
  ['gpt-5.1-codex', 'tier:fast+extended', 2.275], // (50K × 2.5 + 100K × 0.25 + 50K × 2.5 + 100K × 20) / 1M
  ['gpt-5.1-codex', 'extended', 1.1375], // (50K × 1.25 + 100K × 0.125 + 50K × 1.25 + 100K × 10) / 1M
  ['gpt-5', 'standard+web_search', 1.1475], // (50K × 1.25 + 100K × 0.125 + 50K × 1.25 + 100K × 10) / 1M + 0.01
  ['gpt-5', 'tier:fast', 2.275], // (50K × 2.5 + 100K × 0.25 + 50K × 2.5 + 100K × 20) / 1M
  ['gpt-5', 'tier:priority', 2.275], // (50K × 2.5 + 100K × 0.25 + 50K × 2.5 + 100K × 20) / 1M
  ['gpt-5', 'tier:fast+extended', 2.275], // (50K × 2.5 + 100K × 0.25 + 50K × 2.5 + 100K × 20) / 1M
  ['gpt-5', 'tier:flex', 0.5688], // (50K × 0.625 + 100K × 0.063 + 50K × 0.625 + 100K × 5) / 1M
  ['gpt-5', 'tier:flex+extended', 0.5688], // (50K × 0.625 + 100K × 0.063 + 50K × 0.625 + 100K × 5) / 1M
  ['gpt-5', 'extended', 1.1375], // (50K × 1.25 + 100K × 0.125 + 50K × 1.25 + 100K × 10) / 1M
  ['gpt-5-mini', 'standard+web_search', 0.2375], // (50K × 0.25 + 100K × 0.025 + 50K × 0.25 + 100K × 2) / 1M + 0.01
  ['gpt-5-mini', 'tier:fast', 0.4095], // (50K × 0.45 + 100K × 0.045 + 50K × 0.45 + 100K × 3.6) / 1M
  ['gpt-5-mini', 'tier:priority', 0.4095], // (50K × 0.45 + 100K × 0.045 + 50K × 0.45 + 100K × 3.6) / 1M
  ['gpt-5-mini', 'tier:fast+extended', 0.4095], // (50K × 0.45 + 100K × 0.045 + 50K × 0.45 + 100K × 3.6) / 1M
  ['gpt-5-mini', 'tier:flex', 0.1138], // (50K × 0.125 + 100K × 0.013 + 50K × 0.125 + 100K × 1) / 1M
  ['gpt-5-mini', 'tier:flex+extended', 0.1138], // (50K × 0.125 + 100K × 0.013 + 50K × 0.125 + 100K × 1) / 1M
  ['gpt-5-mini', 'extended', 0.2275], // (50K × 0.25 + 100K × 0.025 + 50K × 0.25 + 100K × 2) / 1M
  ['gpt-5-nano', 'standard+web_search', 0.0555], // (50K × 0.05 + 100K × 0.005 + 50K × 0.05 + 100K × 0.4) / 1M + 0.01
  ['gpt-5-nano', 'tier:flex', 0.0228], // (50K × 0.025 + 100K × 0.003 + 50K × 0.025 + 100K × 0.2) / 1M
  ['gpt-5-nano', 'tier:flex+extended', 0.0228], // (50K × 0.025 + 100K × 0.003 + 50K × 0.025 + 100K × 0.2) / 1M
  ['gpt-5-nano', 'extended', 0.0455], // (50K × 0.05 + 100K × 0.005 + 50K × 0.05 + 100K × 0.4) / 1M
  ['gpt-4.1', 'standard+web_search', 1.075], // (50K × 2 + 100K × 0.5 + 50K × 2 + 100K × 8) / 1M + 0.025
  ['gpt-4.1', 'tier:fast', 1.8375], // (50K × 3.5 + 100K × 0.875 + 50K × 3.5 + 100K × 14) / 1M
  ['gpt-4.1', 'tier:priority', 1.8375], // (50K × 3.5 + 100K × 0.875 + 50K × 3.5 + 100K × 14) / 1M
  ['gpt-4.1', 'tier:fast+extended', 1.8375], // (50K × 3.5 + 100K × 0.875 + 50K × 3.5 + 100K × 14) / 1M
  ['gpt-4.1', 'extended', 1.05], // (50K × 2 + 100K × 0.5 + 50K × 2 + 100K × 8) / 1M
  ['gpt-4.1-mini', 'standard+web_search', 0.235], // (50K × 0.4 + 100K × 0.1 + 50K × 0.4 + 100K × 1.6) / 1M + 0.025
  ['gpt-4.1-mini', 'tier:fast', 0.3675], // (50K × 0.7 + 100K × 0.175 + 50K × 0.7 + 100K × 2.8) / 1M
  ['gpt-4.1-mini', 'tier:priority', 0.3675], // (50K × 0.7 + 100K × 0.175 + 50K × 0.7 + 100K × 2.8) / 1M
  ['gpt-4.1-mini', 'tier:fast+extended', 0.3675], // (50K × 0.7 + 100K × 0.175 + 50K × 0.7 + 100K × 2.8) / 1M
  ['gpt-4.1-mini', 'extended', 0.21], // (50K × 0.4 + 100K × 0.1 + 50K × 0.4 + 100K × 1.6) / 1M
  ['gpt-4o', 'standard+web_search', 1.4], // (50K × 2.5 + 100K × 1.25 + 50K × 2.5 + 100K × 10) / 1M + 0.025
  ['gpt-4o', 'tier:fast', 2.3375], // (50K × 4.25 + 100K × 2.125 + 50K × 4.25 + 100K × 17) / 1M
  ['gpt-4o', 'tier:priority', 2.3375], // (50K × 4.25 + 100K × 2.125 + 50K × 4.25 + 100K × 17) / 1M
  ['gpt-4o', 'tier:fast+extended', 2.3375], // (50K × 4.25 + 100K × 2.125 + 50K × 4.25 + 100K × 17) / 1M
  ['gpt-4o', 'extended', 1.375], // (50K × 2.5 + 100K × 1.25 + 50K × 2.5 + 100K × 10) / 1M
  ['gpt-4o-mini', 'standard+web_search', 0.1075], // (50K × 0.15 + 100K × 0.075 + 50K × 0.15 + 100K × 0.6) / 1M + 0.025
  ['gpt-4o-mini', 'extended', 0.0825], // (50K × 0.15 + 100K × 0.075 + 50K × 0.15 + 100K × 0.6) / 1M
  ['o4-mini', 'standard+web_search', 0.5875], // (50K × 1.1 + 100K × 0.275 + 50K × 1.1 + 100K × 4.4) / 1M + 0.01
  ['o4-mini', 'tier:flex', 0.2888], // (50K × 0.55 + 100K × 0.138 + 50K × 0.55 + 100K × 2.2) / 1M
  ['o4-mini', 'tier:flex+extended', 0.2888], // (50K × 0.55 + 100K × 0.138 + 50K × 0.55 + 100K × 2.2) / 1M
  ['o4-mini', 'extended', 0.5775], // (50K × 1.1 + 100K × 0.275 + 50K × 1.1 + 100K × 4.4) / 1M
  ['claude-fable-5-2', 'standard+web_search', 4.44], // (20K × 8 + 50K × 0.2 + 10K × 10 + 10K × 16 + 100K × 40) / 1M + 0.01
  ['claude-fable-5-2', 'speed:fast', 8.86], // (20K × 16 + 50K × 0.4 + 10K × 20 + 10K × 32 + 100K × 80) / 1M
  ['claude-fable-5-2', 'geo:us', 4.873], // (20K × 8 + 50K × 0.2 + 10K × 10 + 10K × 16 + 100K × 40) / 1M × 1.1
  ['claude-fable-5-2', 'speed:fast+geo:us', 9.746], // (20K × 16 + 50K × 0.4 + 10K × 20 + 10K × 32 + 100K × 80) / 1M × 1.1
  ['claude-mythos-5-2', 'standard+web_search', 4.44], // (20K × 8 + 50K × 0.2 + 10K × 10 + 10K × 16 + 100K × 40) / 1M + 0.01
  ['claude-mythos-5-2', 'speed:fast', 8.86], // (20K × 16 + 50K × 0.4 + 10K × 20 + 10K × 32 + 100K × 80) / 1M
  ['claude-mythos-5-2', 'geo:us', 4.873], // (20K × 8 + 50K × 0.2 + 10K × 10 + 10K × 16 + 100K × 40) / 1M × 1.1
  ['claude-mythos-5-2', 'speed:fast+geo:us', 9.746], // (20K × 16 + 50K × 0.4 + 10K × 20 + 10K × 32 + 100K × 80) / 1M × 1.1
  ['claude-opus-5-5', 'standard+web_search', 2.23], // (20K × 4 + 50K × 0.2 + 10K × 5 + 10K × 8 + 100K × 20) / 1M + 0.01
  ['claude-opus-5-5', 'speed:fast', 4.44], // (20K × 8 + 50K × 0.4 + 10K × 10 + 10K × 16 + 100K × 40) / 1M
  ['claude-opus-5-5', 'geo:us', 2.442], // (20K × 4 + 50K × 0.2 + 10K × 5 + 10K × 8 + 100K × 20) / 1M × 1.1
  ['claude-opus-5-5', 'speed:fast+geo:us', 4.884], // (20K × 8 + 50K × 0.4 + 10K × 10 + 10K × 16 + 100K × 40) / 1M × 1.1
  ['claude-sonnet-5-5', 'standard+web_search', 1.12], // (20K × 2 + 50K × 0.1 + 10K × 2.5 + 10K × 4 + 100K × 10) / 1M + 0.01
  ['claude-sonnet-5-5', 'geo:us', 1.221], // (20K × 2 + 50K × 0.1 + 10K × 2.5 + 10K × 4 + 100K × 10) / 1M × 1.1
  ['claude-haiku-5-5', 'standard+web_search', 0.06575], // (20K × 0.1 + 50K × 0.01 + 10K × 0.125 + 10K × 0.2 + 100K × 0.5) / 1M + 0.01
  ['claude-haiku-5-5', 'geo:us', 0.061325], // (20K × 0.1 + 50K × 0.01 + 10K × 0.125 + 10K × 0.2 + 100K × 0.5) / 1M × 1.1
  ['claude-haiku-5-5', 'long', 0.31875], // (100K × 0.5 + 50K × 0.05 + 10K × 0.625 + 10K × 1 + 100K × 2.5) / 1M
  ['claude-haiku-5-5', 'long+geo:us', 0.350625], // (100K × 0.5 + 50K × 0.05 + 10K × 0.625 + 10K × 1 + 100K × 2.5) / 1M × 1.1
  ['claude-fable-5-1', 'standard+web_search', 5.5475], // (20K × 10 + 50K × 0.25 + 10K × 12.5 + 10K × 20 + 100K × 50) / 1M + 0.01
  ['claude-fable-5-1', 'geo:us', 6.09125], // (20K × 10 + 50K × 0.25 + 10K × 12.5 + 10K × 20 + 100K × 50) / 1M × 1.1
  ['claude-mythos-5-1', 'standard+web_search', 5.5475], // (20K × 10 + 50K × 0.25 + 10K × 12.5 + 10K × 20 + 100K × 50) / 1M + 0.01
  ['claude-mythos-5-1', 'geo:us', 6.09125], // (20K × 10 + 50K × 0.25 + 10K × 12.5 + 10K × 20 + 100K × 50) / 1M × 1.1
  ['claude-fable-5', 'standard+web_search', 5.585], // (20K × 10 + 50K × 1 + 10K × 12.5 + 10K × 20 + 100K × 50) / 1M + 0.01
  ['claude-fable-5', 'geo:us', 6.1325], // (20K × 10 + 50K × 1 + 10K × 12.5 + 10K × 20 + 100K × 50) / 1M × 1.1
  ['claude-mythos-5', 'standard+web_search', 5.585], // (20K × 10 + 50K × 1 + 10K × 12.5 + 10K × 20 + 100K × 50) / 1M + 0.01
  ['claude-mythos-5', 'geo:us', 6.1325], // (20K × 10 + 50K × 1 + 10K × 12.5 + 10K × 20 + 100K × 50) / 1M × 1.1
  ['claude-opus-5', 'standard+web_search', 2.7975], // (20K × 5 + 50K × 0.5 + 10K × 6.25 + 10K × 10 + 100K × 25) / 1M + 0.01
  ['claude-opus-5', 'speed:fast', 5.575], // (20K × 10 + 50K × 1 + 10K × 12.5 + 10K × 20 + 100K × 50) / 1M
  ['claude-opus-5', 'geo:us', 3.06625], // (20K × 5 + 50K × 0.5 + 10K × 6.25 + 10K × 10 + 100K × 25) / 1M × 1.1
  ['claude-opus-5', 'speed:fast+geo:us', 6.1325], // (20K × 10 + 50K × 1 + 10K × 12.5 + 10K × 20 + 100K × 50) / 1M × 1.1
  ['claude-sonnet-5', 'standard+web_search', 1.125], // (20K × 2 + 50K × 0.2 + 10K × 2.5 + 10K × 4 + 100K × 10) / 1M + 0.01
  ['claude-sonnet-5', 'geo:us', 1.2265], // (20K × 2 + 50K × 0.2 + 10K × 2.5 + 10K × 4 + 100K × 10) / 1M × 1.1
  ['claude-opus-4-8', 'standard+web_search', 2.7975], // (20K × 5 + 50K × 0.5 + 10K × 6.25 + 10K × 10 + 100K × 25) / 1M + 0.01
  ['claude-opus-4-8', 'speed:fast', 5.575], // (20K × 10 + 50K × 1 + 10K × 12.5 + 10K × 20 + 100K × 50) / 1M
  ['claude-opus-4-8', 'geo:us', 3.06625], // (20K × 5 + 50K × 0.5 + 10K × 6.25 + 10K × 10 + 100K × 25) / 1M × 1.1
  ['claude-opus-4-8', 'speed:fast+geo:us', 6.1325], // (20K × 10 + 50K × 1 + 10K × 12.5 + 10K × 20 + 100K × 50) / 1M × 1.1
  ['claude-opus-4-7', 'standard+web_search', 2.7975], // (20K × 5 + 50K × 0.5 + 10K × 6.25 + 10K × 10 + 100K × 25) / 1M + 0.01
  ['claude-opus-4-7', 'speed:fast', 16.725], // (20K × 30 + 50K × 3 + 10K × 37.5 + 10K × 60 + 100K × 150) / 1M
  ['claude-opus-4-7', 'geo:us', 3.06625], // (20K × 5 + 50K × 0.5 + 10K × 6.25 + 10K × 10 + 100K × 25) / 1M × 1.1
  ['claude-opus-4-7', 'speed:fast+geo:us', 18.3975], // (20K × 30 + 50K × 3 + 10K × 37.5 + 10K × 60 + 100K × 150) / 1M × 1.1
  ['claude-opus-4-6', 'standard+web_search', 2.7975], // (20K × 5 + 50K × 0.5 + 10K × 6.25 + 10K × 10 + 100K × 25) / 1M + 0.01
  ['claude-opus-4-6', 'speed:fast', 16.725], // (20K × 30 + 50K × 3 + 10K × 37.5 + 10K × 60 + 100K × 150) / 1M
  ['claude-opus-4-6', 'geo:us', 3.06625], // (20K × 5 + 50K × 0.5 + 10K × 6.25 + 10K × 10 + 100K × 25) / 1M × 1.1
  ['claude-opus-4-6', 'speed:fast+geo:us', 18.3975], // (20K × 30 + 50K × 3 + 10K × 37.5 + 10K × 60 + 100K × 150) / 1M × 1.1
  ['claude-sonnet-4-6', 'standard+web_search', 1.6825], // (20K × 3 + 50K × 0.3 + 10K × 3.75 + 10K × 6 + 100K × 15) / 1M + 0.01
  ['claude-sonnet-4-6', 'geo:us', 1.83975], // (20K × 3 + 50K × 0.3 + 10K × 3.75 + 10K × 6 + 100K × 15) / 1M × 1.1
  ['claude-opus-4-5', 'standard+web_search', 2.7975], // (20K × 5 + 50K × 0.5 + 10K × 6.25 + 10K × 10 + 100K × 25) / 1M + 0.01
  ['claude-sonnet-4-5', 'standard+web_search', 1.6825], // (20K × 3 + 50K × 0.3 + 10K × 3.75 + 10K × 6 + 100K × 15) / 1M + 0.01
  ['claude-sonnet-4-5', 'long', 3.675], // (200K × 6 + 50K × 0.6 + 10K × 7.5 + 10K × 12 + 100K × 22.5) / 1M
  ['claude-haiku-4-5', 'standard+web_search', 0.5675], // (20K × 1 + 50K × 0.1 + 10K × 1.25 + 10K × 2 + 100K × 5) / 1M + 0.01
];
const REGIONAL: Row[] = [
  ['gpt-6.2-sol', 'standard', 1.3585], // (50K × 2 + 100K × 0.1 + 50K × 2.5 + 100K × 10) / 1M × 1.1
  ['gpt-6.2-sol', 'tier:fast', 2.717], // (50K × 4 + 100K × 0.2 + 50K × 5 + 100K × 20) / 1M × 1.1
  ['gpt-6.2-sol', 'long', 2.684], // (100K × 4 + 200K × 0.2 + 100K × 5 + 100K × 15) / 1M × 1.1
  ['gpt-6.2-astra', 'standard', 5.434], // (50K × 8 + 100K × 0.4 + 50K × 10 + 100K × 40) / 1M × 1.1
  ['gpt-6.2-astra', 'long', 10.736], // (100K × 16 + 200K × 0.8 + 100K × 20 + 100K × 60) / 1M × 1.1
  ['gpt-6.1-sol', 'standard', 1.3585], // (50K × 2 + 100K × 0.1 + 50K × 2.5 + 100K × 10) / 1M × 1.1
  ['gpt-6.1-sol', 'tier:fast', 2.717], // (50K × 4 + 100K × 0.2 + 50K × 5 + 100K × 20) / 1M × 1.1
  ['gpt-6.1-sol', 'long', 2.684], // (100K × 4 + 200K × 0.2 + 100K × 5 + 100K × 15) / 1M × 1.1
  ['gpt-6.1-terra', 'standard', 0.67925], // (50K × 1 + 100K × 0.05 + 50K × 1.25 + 100K × 5) / 1M × 1.1
  ['gpt-6.1-terra', 'tier:fast', 1.3585], // (50K × 2 + 100K × 0.1 + 50K × 2.5 + 100K × 10) / 1M × 1.1
  ['gpt-6.1-terra', 'tier:flex', 0.339625], // (50K × 0.5 + 100K × 0.025 + 50K × 0.625 + 100K × 2.5) / 1M × 1.1
  ['gpt-6.1-terra', 'long', 1.342], // (100K × 2 + 200K × 0.1 + 100K × 2.5 + 100K × 7.5) / 1M × 1.1
  ['gpt-6-astra', 'standard', 6.8475], // (50K × 10 + 100K × 1 + 50K × 12.5 + 100K × 50) / 1M × 1.1
  ['gpt-6-astra', 'tier:fast', 13.695], // (50K × 20 + 100K × 2 + 50K × 25 + 100K × 100) / 1M × 1.1
  ['gpt-6-astra', 'long', 13.64], // (100K × 20 + 200K × 2 + 100K × 25 + 100K × 75) / 1M × 1.1
  ['gpt-6-sol', 'standard', 1.3695], // (50K × 2 + 100K × 0.2 + 50K × 2.5 + 100K × 10) / 1M × 1.1
  ['gpt-6-sol', 'long', 2.728], // (100K × 4 + 200K × 0.4 + 100K × 5 + 100K × 15) / 1M × 1.1
  ['gpt-6-luna', 'standard', 0.068475], // (50K × 0.1 + 100K × 0.01 + 50K × 0.125 + 100K × 0.5) / 1M × 1.1
  ['gpt-6-luna', 'tier:fast', 0.13695], // (50K × 0.2 + 100K × 0.02 + 50K × 0.25 + 100K × 1) / 1M × 1.1
  ['gpt-6-luna', 'tier:flex', 0.034265], // (50K × 0.05 + 100K × 0.005 + 50K × 0.063 + 100K × 0.25) / 1M × 1.1
  ['gpt-6-luna', 'long', 0.1364], // (100K × 0.2 + 200K × 0.02 + 100K × 0.25 + 100K × 0.75) / 1M × 1.1
  ['gpt-5.4', 'standard', 1.9525], // (50K × 2.5 + 100K × 0.25 + 50K × 2.5 + 100K × 15) / 1M × 1.1
  ['gpt-5.4', 'tier:fast', 3.905], // (50K × 5 + 100K × 0.5 + 50K × 5 + 100K × 30) / 1M × 1.1
  ['gpt-5.4', 'long', 3.685], // (100K × 5 + 200K × 0.5 + 100K × 5 + 100K × 22.5) / 1M × 1.1
  ['gpt-5.4-mini', 'standard', 0.58575], // (50K × 0.75 + 100K × 0.075 + 50K × 0.75 + 100K × 4.5) / 1M × 1.1
  ['gpt-5.4-nano', 'standard', 0.1617], // (50K × 0.2 + 100K × 0.02 + 50K × 0.2 + 100K × 1.25) / 1M × 1.1
  ['gpt-5.4-pro', 'standard', 26.4], // (50K × 30 + 100K × 30 + 50K × 30 + 100K × 180) / 1M × 1.1
  ['gpt-5.4-pro', 'long', 56.1], // (100K × 60 + 200K × 60 + 100K × 60 + 100K × 270) / 1M × 1.1
];

const OPENAI_SHORT = { input: 200_000, cached: 100_000, write: 50_000 };
const OPENAI_LONG = { input: 400_000, cached: 200_000, write: 100_000 };
const OUTPUT = 100_000;

/** The request and the mock provider's answer for a row, and the record's expectations. */
function callOf(row: Row, i: number, chatServed: boolean): { path: string; body: Record<string, unknown>; headers: Record<string, string>; tokens: number; record: Record<string, unknown> } {
  const [model, levers] = row;
  const set = new Set(levers.split('+'));
  const tier = [...set].find((l) => l.startsWith('tier:'))?.slice(5);
  const stream = i % 2 === 1;
  const record: Record<string, unknown> = { model, stream, worstCase: null, longContext: set.has('long') };
  if (model.startsWith('claude-')) {
    const fresh = !set.has('long') ? 20_000 : model === 'claude-sonnet-4-5' ? 200_000 : 100_000;
    const usage = {
      input_tokens: fresh, cache_creation_input_tokens: 20_000, cache_read_input_tokens: 50_000,
      cache_creation: { ephemeral_5m_input_tokens: 10_000, ephemeral_1h_input_tokens: 10_000 }, output_tokens: OUTPUT,
      service_tier: 'standard', speed: set.has('speed:fast') ? 'fast' : 'standard', inference_geo: set.has('geo:us') ? 'us' : 'global',
      ...(set.has('web_search') ? { server_tool_use: { web_search_requests: 1 } } : {}),
    };
    const betas = [...(set.has('speed:fast') ? ['fast-mode-2026-02-01'] : []), ...(model === 'claude-sonnet-4-5' && set.has('long') ? ['context-1m-2025-08-07'] : [])];
    Object.assign(record, { speed: usage.speed, inferenceGeo: usage.inference_geo, inputTokens: fresh + 70_000, cacheWriteTokens: 20_000, cacheWrite1hTokens: 10_000, cachedInputTokens: 50_000 });
    return {
      path: '/v1/messages',
      body: {
        model, max_tokens: 1024, messages: [{ role: 'user', content: 'hi' }], ...(stream ? { stream: true } : {}),
        ...(set.has('speed:fast') ? { speed: 'fast' } : {}), ...(set.has('geo:us') ? { inference_geo: 'us' } : {}),
        ...(set.has('web_search') ? { tools: [{ type: 'web_search_20250305', name: 'web_search' }] } : {}),
        mock: { usageJson: JSON.stringify(usage) },
      },
      headers: betas.length > 0 ? { 'anthropic-beta': betas.join(',') } : {},
      tokens: fresh + 70_000 + OUTPUT,
      record,
    };
  }
  const counts = set.has('long') ? OPENAI_LONG : OPENAI_SHORT;
  const chat = chatServed && i % 4 < 2;
  const details = { cached_tokens: counts.cached, cache_write_tokens: counts.write };
  const usage = chat
    ? { prompt_tokens: counts.input, completion_tokens: OUTPUT, total_tokens: counts.input + OUTPUT, prompt_tokens_details: details, completion_tokens_details: { reasoning_tokens: 0 } }
    : { input_tokens: counts.input, input_tokens_details: details, output_tokens: OUTPUT, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: counts.input + OUTPUT };
  Object.assign(record, { serviceTier: tier ?? 'default', inputTokens: counts.input, cachedInputTokens: counts.cached, cacheWriteTokens: counts.write });
  const search = set.has('web_search') ? (chat ? { web_search_options: {} } : { tools: [{ type: 'web_search' }] }) : {};
  return {
    path: chat ? '/v1/chat/completions' : '/v1/responses',
    body: {
      model, ...(chat ? { messages: [{ role: 'user', content: 'hi' }] } : { input: 'hi' }),
      ...(stream ? { stream: true, ...(chat ? { stream_options: { include_usage: true } } : {}) } : {}),
      ...(tier === undefined ? {} : { service_tier: tier }), ...(set.has('extended') ? { prompt_cache_retention: '24h' } : {}), ...search,
      mock: { usageJson: JSON.stringify(usage), serviceTier: tier ?? 'default', ...(set.has('web_search') && !chat ? { webSearchRequests: 1 } : {}) },
    },
    headers: {},
    tokens: counts.input + OUTPUT,
    record,
  };
}

async function priceRows(t: Test, gw: Harness, rows: Row[], chatless: ReadonlySet<string>): Promise<void> {
  const credit = (await gw.createKey(['--mode', 'credit', '--balance', '100000'])).key;
  const token = (await gw.createKey(['--mode', 'token', '--budget', '1000000000'])).key;
  for (const [i, row] of rows.entries()) {
    const [model, levers, usd] = row;
    const call = callOf(row, i, !chatless.has(model));
    const label = `${model} ${levers} (${call.path.slice(4)}, ${i % 2 === 1 ? 'streamed' : 'plain'})`;
    const paid = await post(gw.base + call.path, credit, call.body, call.headers);
    t.equal(paid.status, 200, `${label}: 200`);
    const r = (await usageOf(gw.base, credit)).requests[0];
    t.equal(r.costNanoUsd, Math.round(usd * 1e9), `${label}: $${usd}`);
    t.match(r, { ...call.record, estimated: false }, `${label}: record`);
    const counted = await post(gw.base + call.path.replace('/v1/', '/token/v1/'), token, call.body, call.headers);
    t.equal(counted.status, 200, `${label}, token surface: 200`);
    t.match((await usageOf(gw.base, token)).requests[0], { model, tokensCharged: call.tokens, costNanoUsd: null }, `${label}, token surface: ${call.tokens} tokens`);
  }
}

/** The test harness's providers, serving the built-in catalogue (`models` in the file adds nothing). */
function catalogueConfig(region: string | null): (mockUrl: string) => Record<string, unknown> {
  return (mockUrl) => {
    const base = defaultConfig(mockUrl) as { providers: Record<string, Record<string, unknown>> };
    if (region !== null) base.providers.openai!.region = region;
    return { providers: base.providers };
  };
}

const CHATLESS = new Set(['gpt-5.1-codex']);

// About a thousand calls: minutes on a loaded machine, more on Redis.
t.test('every catalogue entry and lever combination it prices: billed the hand-worked dollars, plain and streamed, on both surfaces', { timeout: 15 * 60_000 }, async (t) => {
  const gw = await startGateway(t, { config: catalogueConfig(null) });
  const priced = new Set(TABLE.map(([model]) => model));
  const listed = JSON.parse((await gw.cli(['models', 'list', '--json'])).stdout) as { id: string }[];
  t.same([...priced].sort(), listed.map((m) => m.id).sort(), 'the table has a row for every entry of the built-in catalogue');
  await priceRows(t, gw, TABLE, CHATLESS);
});

t.test('through a provider processing in the EU: the regional multiplier, and entries without one refused', async (t) => {
  const gw = await startGateway(t, { config: catalogueConfig('eu') });
  await priceRows(t, gw, REGIONAL, CHATLESS);
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '100']);
  const before = gw.mock.requests.length;
  const res = await post(`${gw.base}/v1/responses`, key, { model: 'gpt-5.6-sol', input: 'hi' });
  t.equal(res.status, 400);
  t.match(res.json, { error: { code: 'unpriced_option' } });
  t.match(res.json.error.message, /regional processing in "eu"/);
  t.equal(gw.mock.requests.length, before, 'nothing forwarded');
});
