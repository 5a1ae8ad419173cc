import type { RawModel } from '../types.js';

/**
 * Anthropic's text models on its public model and pricing pages, current and still served, at
 * their list prices: USD per million tokens (input, 5-minute cache write `cacheWrite`, 1-hour
 * cache write `cacheWrite1h`, cache read `cachedInput`, output); web search in USD per 1,000
 * searches. Every figure was read on 2026-11-25 from the source cited beside it; "secondary"
 * marks someone else's copy or summary of a page, named.
 *
 * Sources used throughout, besides each model's page:
 * - [pricing] platform.claude.com/docs/en/about-claude/pricing, as stored in September 2026
 *   (the Fable 5.1 era; the current page, with the 5.2 and 5.5 rows, was not found), and its
 *   August copy (github.com/gpambrozio/ClaudeDocs at ff5b8ed, 2026-08-22).
 * - [Claude Code] the model catalogue built into Claude Code 2.1.331 (npm, 2026-11-23),
 *   Anthropic's own software and a strong cross-check, but not a pricing page: secondary.
 *
 * Rules that hold for several entries:
 * - Cache writes 1.25× (5 minutes) and 2× (1 hour) the input rate; cache reads per model
 *   (0.1×, or 0.05× and 0.025× on newer models), as each entry gives them.
 * - Fast mode (`speed: "fast"`): its own rates per model, 2× every token rate cache reads and
 *   writes included, over the whole context window (platform.claude.com/docs/en/build-with-
 *   claude/fast-mode; web search stays at its standard fee). Where fast mode is gone the API
 *   answers `usage.speed: "standard"` (Opus 4.6) or an error (Opus 4.7): their former rates
 *   (6×, [Claude Code]) stay configured, so that an answer reporting fast is billed at them.
 * - Inference geography `inference_geo: "us"`: 1.1× every token rate on the 4.6 generation and
 *   later, not on tool fees (platform.claude.com/docs/en/build-with-claude/data-residency;
 *   earlier models refuse the field). Stacks with fast mode and caching.
 * - From the 4.6 generation on, the whole 1M context window is at the standard rates
 *   ([pricing], "Long context"); Haiku 5.5 prices a prompt above 100,000 tokens (input + cache
 *   reads + cache writes) at 5× every rate (its model page).
 * - Web search $10 per 1,000 searches on every model ([pricing]; web search tool page). Web
 *   fetch has no fee of its own (its content is billed as input); code execution is billed by
 *   container hour beyond the free hours, not per call, and is not priced here.
 * - Ids from the 4.6 generation on carry no date and are the snapshot; earlier models have
 *   dated snapshots, configured as aliases (platform.claude.com/docs/en/about-claude/models/
 *   model-ids-and-versions).
 * - Priority Tier (`usage.service_tier: "priority"`) has no published per-token price: an
 *   answer reporting it is billed at the price's highest rate and flagged.
 */

const CLAUDE: Pick<RawModel, 'provider' | 'endpoints' | 'capabilities'> = { provider: 'anthropic', endpoints: ['messages'], capabilities: ['tools', 'vision', 'reasoning'] };
const TOOLS = { web_search: 10 };
const US = { us: 1.1 };

export const ANTHROPIC_MODELS: Record<string, RawModel> = {
  // platform.claude.com/docs/en/models/overview (8 / 40, 1M context, 128K output); cache rates
  // and fast mode (16 / 80) from [Claude Code], agreeing with secondary summaries (rightsize,
  // laozhang, qiita). The current pricing-page row was not found.
  'claude-fable-5-2': {
    ...CLAUDE, contextWindow: 1000000, maxOutputTokens: 128000,
    price: {
      input: 8, cacheWrite: 10, cacheWrite1h: 16, cachedInput: 0.2, output: 40,
      speed: { fast: { input: 16, cacheWrite: 20, cacheWrite1h: 32, cachedInput: 0.4, output: 80 } },
      inferenceGeo: US, toolCalls: TOOLS,
    },
  },
  // The same model as Fable 5.2, verification-gated. [Claude Code] (same rates as Fable 5.2);
  // secondary: the AWS Bedrock model card (1M / 128K, launched 2026-11-09).
  'claude-mythos-5-2': {
    ...CLAUDE, contextWindow: 1000000, maxOutputTokens: 128000,
    price: {
      input: 8, cacheWrite: 10, cacheWrite1h: 16, cachedInput: 0.2, output: 40,
      speed: { fast: { input: 16, cacheWrite: 20, cacheWrite1h: 32, cachedInput: 0.4, output: 80 } },
      inferenceGeo: US, toolCalls: TOOLS,
    },
  },
  // platform.claude.com/docs/zh-CN/models/opus-5-5/overview: 4 / 20, writes 5 and 8, read 0.20
  // (0.05×), 1M / 128K; fast mode 8 / 40 (reads 0.40) from [Claude Code], agreeing with secondary
  // summaries (PromptFuel 1.0.21, claudit 1.9.0).
  'claude-opus-5-5': {
    ...CLAUDE, contextWindow: 1000000, maxOutputTokens: 128000,
    price: {
      input: 4, cacheWrite: 5, cacheWrite1h: 8, cachedInput: 0.2, output: 20,
      speed: { fast: { input: 8, cacheWrite: 10, cacheWrite1h: 16, cachedInput: 0.4, output: 40 } },
      inferenceGeo: US, toolCalls: TOOLS,
    },
  },
  // platform.claude.com/docs/zh-CN/models/sonnet-5-5/overview: 2 / 10, writes 2.50 and 4, 1M /
  // 128K. That (older) page gives cache reads 0.20; they were cut to 0.10 on 2026-10-07 according
  // to [Claude Code] and secondary summaries (claudit 1.9.2, PromptFuel 1.0.23): 0.10 here, from
  // those; no official page with 0.10 was found. No fast mode.
  'claude-sonnet-5-5': {
    ...CLAUDE, contextWindow: 1000000, maxOutputTokens: 128000,
    price: { input: 2, cacheWrite: 2.5, cacheWrite1h: 4, cachedInput: 0.1, output: 10, inferenceGeo: US, toolCalls: TOOLS },
  },
  // platform.claude.com/docs/en/models/haiku-5-5/overview (released 2026-10-07): 0.10 / 0.50,
  // writes 0.125 and 0.20; above 100,000 prompt tokens 0.50 / 2.50, writes 0.625 and 1, for every
  // token of the request. Cache reads 0.01 and 0.05 from [Claude Code] (`long_prompt.above_
  // prompt_tokens: 100000`, strictly above) and claudit 1.9.2 (secondary). 1M / 128K; no alias.
  'claude-haiku-5-5': {
    ...CLAUDE, contextWindow: 1000000, maxOutputTokens: 128000,
    price: {
      input: 0.1, cacheWrite: 0.125, cacheWrite1h: 0.2, cachedInput: 0.01, output: 0.5,
      longContext: { threshold: 100000, input: 0.5, cacheWrite: 0.625, cacheWrite1h: 1, cachedInput: 0.05, output: 2.5 },
      inferenceGeo: US, toolCalls: TOOLS,
    },
  },
  // [pricing] (September): 10 / 50, writes 12.50 and 20, reads 0.25 (0.025×); [Claude Code]. 1M / 128K.
  'claude-fable-5-1': {
    ...CLAUDE, contextWindow: 1000000, maxOutputTokens: 128000,
    price: { input: 10, cacheWrite: 12.5, cacheWrite1h: 20, cachedInput: 0.25, output: 50, inferenceGeo: US, toolCalls: TOOLS },
  },
  // [pricing] (September, "limited availability"): as Fable 5.1; [Claude Code].
  'claude-mythos-5-1': {
    ...CLAUDE, contextWindow: 1000000, maxOutputTokens: 128000,
    price: { input: 10, cacheWrite: 12.5, cacheWrite1h: 20, cachedInput: 0.25, output: 50, inferenceGeo: US, toolCalls: TOOLS },
  },
  // [pricing] (September): 10 / 50, writes 12.50 and 20, reads 1; [Claude Code].
  'claude-fable-5': {
    ...CLAUDE, contextWindow: 1000000, maxOutputTokens: 128000,
    price: { input: 10, cacheWrite: 12.5, cacheWrite1h: 20, cachedInput: 1, output: 50, inferenceGeo: US, toolCalls: TOOLS },
  },
  // [pricing] (September, "limited availability"): as Fable 5; [Claude Code].
  'claude-mythos-5': {
    ...CLAUDE, contextWindow: 1000000, maxOutputTokens: 128000,
    price: { input: 10, cacheWrite: 12.5, cacheWrite1h: 20, cachedInput: 1, output: 50, inferenceGeo: US, toolCalls: TOOLS },
  },
  // platform.claude.com/docs/models/opus-5/overview (legacy; released 2026-07-24): 5 / 25, writes
  // 6.25 and 10, reads 0.50, 1M / 128K. Fast mode (research preview; needs the beta header
  // fast-mode-2026-02-01) 10 / 50 ([pricing], August), its cache rates from [Claude Code].
  'claude-opus-5': {
    ...CLAUDE, contextWindow: 1000000, maxOutputTokens: 128000,
    price: {
      input: 5, cacheWrite: 6.25, cacheWrite1h: 10, cachedInput: 0.5, output: 25,
      speed: { fast: { input: 10, cacheWrite: 12.5, cacheWrite1h: 20, cachedInput: 1, output: 50 } },
      inferenceGeo: US, toolCalls: TOOLS,
    },
  },
  // [pricing] (August) and the Opus 5 page's comparison table: 2 / 10, writes 2.50 and 4, reads
  // 0.20, 1M / 128K; [Claude Code].
  'claude-sonnet-5': {
    ...CLAUDE, contextWindow: 1000000, maxOutputTokens: 128000,
    price: { input: 2, cacheWrite: 2.5, cacheWrite1h: 4, cachedInput: 0.2, output: 10, inferenceGeo: US, toolCalls: TOOLS },
  },
  // [pricing] (September): 5 / 25, writes 6.25 and 10, reads 0.50; 1M / 128K from [Claude Code].
  // Fast mode (deprecated, removed 2026-11-30; then refused by the API) 10 / 50 as Opus 5.
  'claude-opus-4-8': {
    ...CLAUDE, contextWindow: 1000000, maxOutputTokens: 128000,
    price: {
      input: 5, cacheWrite: 6.25, cacheWrite1h: 10, cachedInput: 0.5, output: 25,
      speed: { fast: { input: 10, cacheWrite: 12.5, cacheWrite1h: 20, cachedInput: 1, output: 50 } },
      inferenceGeo: US, toolCalls: TOOLS,
    },
  },
  // [pricing] (September): 5 / 25, writes 6.25 and 10, reads 0.50; [Claude Code]. Fast mode was
  // removed on 2026-07-24 (the API refuses it); its former 6× rates from [Claude Code].
  'claude-opus-4-7': {
    ...CLAUDE, contextWindow: 1000000, maxOutputTokens: 128000,
    price: {
      input: 5, cacheWrite: 6.25, cacheWrite1h: 10, cachedInput: 0.5, output: 25,
      speed: { fast: { input: 30, cacheWrite: 37.5, cacheWrite1h: 60, cachedInput: 3, output: 150 } },
      inferenceGeo: US, toolCalls: TOOLS,
    },
  },
  // [pricing] (September): 5 / 25, writes 6.25 and 10, reads 0.50; the full 1M window at these
  // rates ([pricing], August, "Long context"). `speed: "fast"` is served at standard speed and
  // price and answered `usage.speed: "standard"`; the former 6× fast rates from [Claude Code].
  'claude-opus-4-6': {
    ...CLAUDE, contextWindow: 1000000, maxOutputTokens: 128000,
    price: {
      input: 5, cacheWrite: 6.25, cacheWrite1h: 10, cachedInput: 0.5, output: 25,
      speed: { fast: { input: 30, cacheWrite: 37.5, cacheWrite1h: 60, cachedInput: 3, output: 150 } },
      inferenceGeo: US, toolCalls: TOOLS,
    },
  },
  // [pricing] (August): 3 / 15, writes 3.75 and 6, reads 0.30; the full 1M window at these rates.
  'claude-sonnet-4-6': {
    ...CLAUDE, contextWindow: 1000000, maxOutputTokens: 128000,
    price: { input: 3, cacheWrite: 3.75, cacheWrite1h: 6, cachedInput: 0.3, output: 15, inferenceGeo: US, toolCalls: TOOLS },
  },
  // [pricing] (September): 5 / 25, writes 6.25 and 10, reads 0.50; 200K / 64K ([pricing],
  // August, models overview). Retirement "not sooner than 2026-11-24" (August deprecations page):
  // current status not found.
  'claude-opus-4-5': {
    ...CLAUDE, aliases: ['claude-opus-4-5-20251101'], contextWindow: 200000, maxOutputTokens: 64000,
    price: { input: 5, cacheWrite: 6.25, cacheWrite1h: 10, cachedInput: 0.5, output: 25, toolCalls: TOOLS },
  },
  // [pricing] (August): 3 / 15, writes 3.75 and 6, reads 0.30; 200K / 64K. Above 200K input with
  // the context-1m-2025-08-07 beta: 6 / 22.50, writes 7.50 and 12, reads 0.60, for every token
  // (docs.anthropic.com/en/docs/about-claude/pricing, read 2026-11-23; the August page no longer
  // states this band, and whether the beta is still served for Sonnet 4.5 was not found).
  // Retirement "not sooner than 2026-09-29": current status not found.
  'claude-sonnet-4-5': {
    ...CLAUDE, aliases: ['claude-sonnet-4-5-20250929'], contextWindow: 200000, maxOutputTokens: 64000,
    price: {
      input: 3, cacheWrite: 3.75, cacheWrite1h: 6, cachedInput: 0.3, output: 15,
      longContext: { threshold: 200000, input: 6, cacheWrite: 7.5, cacheWrite1h: 12, cachedInput: 0.6, output: 22.5 },
      toolCalls: TOOLS,
    },
  },
  // [pricing] (August): 1 / 5, writes 1.25 and 2, reads 0.10; 200K / 64K; [Claude Code]
  // (`haiku_45`). Retirement "not sooner than 2026-10-15": current status not found.
  'claude-haiku-4-5': {
    ...CLAUDE, aliases: ['claude-haiku-4-5-20251001'], capabilities: ['tools', 'vision'], contextWindow: 200000, maxOutputTokens: 64000,
    price: { input: 1, cacheWrite: 1.25, cacheWrite1h: 2, cachedInput: 0.1, output: 5, toolCalls: TOOLS },
  },
};
