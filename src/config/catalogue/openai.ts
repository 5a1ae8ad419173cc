import type { RawModel } from '../types.js';

/**
 * OpenAI's text models on its public model and pricing pages, current and still served, at
 * their list prices: USD per million tokens; tool fees in USD per 1,000 calls. Every figure
 * was read on 2026-11-25 from the page cited beside it (the pages carry no date of their own);
 * "secondary" marks a figure that comes from someone else's copy or summary of a page, named.
 *
 * Rules that hold for several entries, with their sources:
 * - Cache writes (`cache_write_tokens`, reported inside the input count): "no additional fee
 *   on models before the GPT-5.6 family; for GPT-5.6 models and later, 1.25× the uncached input
 *   rate" (developers.openai.com/api/docs/guides/prompt-caching). So `cacheWrite` is the input
 *   rate up to GPT-5.5 and 1.25× it from GPT-5.6 on, in every tier and band.
 * - Extended prompt-cache retention (`prompt_cache_retention`): the GPT-6.x model pages list a
 *   "12-hour cache write" rate (`cacheWriteExtended`); where no page gives one for a model of
 *   the GPT-5.6 family or later, it is left out and such a request is refused. Before GPT-5.6
 *   writes carry no fee, so the extended ones are priced as input.
 * - Long context: "when the request's input exceeds 272,000 tokens, input and cache rates are
 *   2× and output 1.5× for the whole request", input counting cached tokens
 *   (developers.openai.com model pages of gpt-6.2-sol, gpt-6.1-terra, gpt-6-luna, gpt-5.6-luna;
 *   gpt-5.4's page states it for its models with a 1.05M window, gpt-5.4 and gpt-5.4-pro).
 * - Service tiers: priority processing was renamed Fast on 2026-07-30, one tier under two
 *   names (`tiers.fast` serves `service_tier` "fast" and "priority"); rates per model from
 *   openai.com/api-fast-mode (two stored versions: an older table without long context, a
 *   newer one with short and long columns) and "Fast 2×" on the GPT-6 model pages. Flex is
 *   priced at Batch rates, half the standard ones (developers.openai.com/api/docs/guides/
 *   flex-processing), only where a model's page lists it. Ultrafast per model as cited.
 * - Regional processing (a provider on `eu.api.openai.com` and the like): +10% "on eligible
 *   models released on or after 2026-03-05" (developers.openai.com/api/docs/guides/
 *   data-residency): `regionalProcessing: 1.1` on the GPT-6 models (released September to
 *   November 2026) and on the GPT-5.4 family, whose model pages state the uplift. Where the
 *   release date or eligibility was not found, it is left out, and calls through a regional
 *   provider are refused.
 * - Built-in tools: web search $10 per 1,000 calls on GPT-5, o-series and later models, $25 on
 *   GPT-4o and GPT-4.1 (its `web_search_preview`); file search $2.50 (platform.openai.com/docs/
 *   pricing as quoted in new-api's setting/operation_setting/tools.go at 0e42785: secondary;
 *   OpenAI's pricing page itself was not in the stored copies). Code interpreter containers
 *   are billed per container session, not per call, and are not priced here.
 * - Snapshot ids are aliases where a page or a recorded answer shows them.
 */

const GPT: Pick<RawModel, 'provider' | 'endpoints' | 'capabilities'> = { provider: 'openai', endpoints: ['chat', 'responses'], capabilities: ['tools', 'vision', 'reasoning'] };
const TOOLS = { web_search: 10, file_search: 2.5 };
const TOOLS_4 = { web_search: 25, file_search: 2.5 };

export const OPENAI_MODELS: Record<string, RawModel> = {
  // developers.openai.com/api/docs/models/gpt-6.2-sol (released 2026-11-17): 2 / 0.10 cached /
  // 10; 30-minute write 2.50, 12-hour write 5; above 272K the family rule (4 / 0.20 / 15, writes
  // 5 and 10). Fast 2×. Ultrafast 3× Standard until 2027-02-28 and 6× from 2027-03-01 (the page
  // says so): the 3× rates below must be replaced by 6× (12 / 0.60 / 60, writes 15 and 30) then.
  // No flex rate on the page. 1,050,000 context, 128,000 output.
  'gpt-6.2-sol': {
    ...GPT, contextWindow: 1050000, maxOutputTokens: 128000,
    price: {
      input: 2, cachedInput: 0.1, cacheWrite: 2.5, cacheWriteExtended: 5, output: 10,
      longContext: { threshold: 272000, input: 4, cachedInput: 0.2, cacheWrite: 5, cacheWriteExtended: 10, output: 15 },
      tiers: {
        fast: {
          input: 4, cachedInput: 0.2, cacheWrite: 5, cacheWriteExtended: 10, output: 20,
          longContext: { input: 8, cachedInput: 0.4, cacheWrite: 10, cacheWriteExtended: 20, output: 30 },
        },
        ultrafast: { input: 6, cachedInput: 0.3, cacheWrite: 7.5, cacheWriteExtended: 15, output: 30 },
      },
      regionalProcessing: 1.1, toolCalls: TOOLS,
    },
  },
  // Secondary: Vercel AI Gateway's model page (vercel.com/ai-gateway/models/gpt-6.2-astra: 8 /
  // 40, 1.05M / 128K) and LiteLLM discussion #52347 (cached input 0.40). OpenAI's own page was not
  // found. Cache write 1.25× input (10) by the prompt-caching rule; above 272K the family rule
  // (16 / 0.80 / 60, write 20), derived rather than published, so that a long prompt is never
  // billed at the short rates. No tier rates and no 12-hour write were found: refused.
  'gpt-6.2-astra': {
    ...GPT, contextWindow: 1050000, maxOutputTokens: 128000,
    price: {
      input: 8, cachedInput: 0.4, cacheWrite: 10, output: 40,
      longContext: { threshold: 272000, input: 16, cachedInput: 0.8, cacheWrite: 20, output: 60 },
      regionalProcessing: 1.1, toolCalls: TOOLS,
    },
  },
  // Secondary: w3cschool's mirror of developers.openai.com's gpt-6.1-sol page (2 / 0.10 / 2.50
  // write / 10; regional +10%; residency for Fast and Ultrafast; Ultrafast 6×), Venice docs
  // (Ultrafast 12 / 60), wavespeed.ai (above 272K 4 / 0.20 / 15), Google Cloud's partner-model page
  // (1,050,000 context, 128,000 output). Released 2026-09-29; Chat Completions answers carry the
  // dated id. Fast 2× as on the GPT-6 pages (not found on this model's own). No flex, no 12-hour write.
  'gpt-6.1-sol': {
    ...GPT, aliases: ['gpt-6.1-sol-2026-09-29'], contextWindow: 1050000, maxOutputTokens: 128000,
    price: {
      input: 2, cachedInput: 0.1, cacheWrite: 2.5, output: 10,
      longContext: { threshold: 272000, input: 4, cachedInput: 0.2, cacheWrite: 5, output: 15 },
      tiers: {
        fast: { input: 4, cachedInput: 0.2, cacheWrite: 5, output: 20, longContext: { input: 8, cachedInput: 0.4, cacheWrite: 10, output: 30 } },
        ultrafast: { input: 12, cachedInput: 0.6, cacheWrite: 15, output: 60 },
      },
      regionalProcessing: 1.1, toolCalls: TOOLS,
    },
  },
  // developers.openai.com/zh-Hans/api/docs/models/gpt-6.1-terra (released 2026-10-26): 1 / 0.05 /
  // 5; write 1.25, 12-hour write 2.50; above 272K 2 / 0.10 / 7.50; Batch and Flex 50%; Fast 2×;
  // regional processing +10%.
  'gpt-6.1-terra': {
    ...GPT, contextWindow: 1050000, maxOutputTokens: 128000,
    price: {
      input: 1, cachedInput: 0.05, cacheWrite: 1.25, cacheWriteExtended: 2.5, output: 5,
      longContext: { threshold: 272000, input: 2, cachedInput: 0.1, cacheWrite: 2.5, cacheWriteExtended: 5, output: 7.5 },
      tiers: {
        fast: {
          input: 2, cachedInput: 0.1, cacheWrite: 2.5, cacheWriteExtended: 5, output: 10,
          longContext: { input: 4, cachedInput: 0.2, cacheWrite: 5, cacheWriteExtended: 10, output: 15 },
        },
        flex: {
          input: 0.5, cachedInput: 0.025, cacheWrite: 0.625, cacheWriteExtended: 1.25, output: 2.5,
          longContext: { input: 1, cachedInput: 0.05, cacheWrite: 1.25, cacheWriteExtended: 2.5, output: 3.75 },
        },
      },
      regionalProcessing: 1.1, toolCalls: TOOLS,
    },
  },
  // Secondary: LiteLLM discussion #39633 and Vercel AI Gateway (10 / 50; Fast 20 / 100), apidog
  // (Ultrafast 60 / 6 cached / 75 write / 300), Venice docs (1,050,000 context, 128,000 output,
  // released 2026-09-03); Azure Foundry shows the dated snapshot. OpenAI's own page was not found.
  // Cache and long-context rates by the rules above.
  'gpt-6-astra': {
    ...GPT, aliases: ['gpt-6-astra-2026-09-03'], contextWindow: 1050000, maxOutputTokens: 128000,
    price: {
      input: 10, cachedInput: 1, cacheWrite: 12.5, output: 50,
      longContext: { threshold: 272000, input: 20, cachedInput: 2, cacheWrite: 25, output: 75 },
      tiers: {
        fast: { input: 20, cachedInput: 2, cacheWrite: 25, output: 100, longContext: { input: 40, cachedInput: 4, cacheWrite: 50, output: 150 } },
        ultrafast: { input: 60, cachedInput: 6, cacheWrite: 75, output: 300 },
      },
      regionalProcessing: 1.1, toolCalls: TOOLS,
    },
  },
  // Secondary: inference.sh (2 / 0.20 / 10, 1M / 128K, "superseded by GPT-6.1 Sol"; released
  // 2026-09-22) and a summary giving 4 / 0.40 / 15 above 272K. OpenAI's own page was not found, nor
  // any tier rate: tiers are refused.
  'gpt-6-sol': {
    ...GPT, contextWindow: 1050000, maxOutputTokens: 128000,
    price: {
      input: 2, cachedInput: 0.2, cacheWrite: 2.5, output: 10,
      longContext: { threshold: 272000, input: 4, cachedInput: 0.4, cacheWrite: 5, output: 15 },
      regionalProcessing: 1.1, toolCalls: TOOLS,
    },
  },
  // developers.openai.com/ja-JP/api/docs/models/gpt-6-luna: 0.10 / 0.01 / 0.50, write 0.125;
  // above 272K 0.20 / 0.02 / 0.75; Batch and Flex 50% (the flex write 0.0625 rounded up to
  // 0.063); Fast 2×; regional processing +10% (residency on Standard, Fast, Flex and Batch).
  'gpt-6-luna': {
    ...GPT, contextWindow: 1050000, maxOutputTokens: 128000,
    price: {
      input: 0.1, cachedInput: 0.01, cacheWrite: 0.125, output: 0.5,
      longContext: { threshold: 272000, input: 0.2, cachedInput: 0.02, cacheWrite: 0.25, output: 0.75 },
      tiers: {
        fast: { input: 0.2, cachedInput: 0.02, cacheWrite: 0.25, output: 1, longContext: { input: 0.4, cachedInput: 0.04, cacheWrite: 0.5, output: 1.5 } },
        flex: { input: 0.05, cachedInput: 0.005, cacheWrite: 0.063, output: 0.25, longContext: { input: 0.1, cachedInput: 0.01, cacheWrite: 0.125, output: 0.375 } },
      },
      regionalProcessing: 1.1, toolCalls: TOOLS,
    },
  },
  // developers.openai.com/ja-JP/api/docs/models/gpt-5.6-sol gives a promotional 4 / 0.40 / 20
  // "at least until 2026-11-21"; what applies after it was not found, so the list price is
  // configured: 5 / 0.50 / 30, from openai.com/api-fast-mode's older table (Fast 10 / 1 / 60, 2×).
  // Above 272K 10 / 1 / 45 (secondary: laozhang). Fast above 272K by the fast page's stated rule
  // (2× input, 1.5× output of short Fast): 20 / 2 / 90. Write 1.25× input. Alias `gpt-5.6` from the
  // model page. Release date not found: no regional price.
  'gpt-5.6-sol': {
    ...GPT, aliases: ['gpt-5.6'], contextWindow: 1050000, maxOutputTokens: 128000,
    price: {
      input: 5, cachedInput: 0.5, cacheWrite: 6.25, output: 30,
      longContext: { threshold: 272000, input: 10, cachedInput: 1, cacheWrite: 12.5, output: 45 },
      tiers: { fast: { input: 10, cachedInput: 1, cacheWrite: 12.5, output: 60, longContext: { input: 20, cachedInput: 2, cacheWrite: 25, output: 90 } } },
      toolCalls: TOOLS,
    },
  },
  // openai.com/api-fast-mode (newer table): Fast 4 / 0.40 / 24, above 272K 8 / 0.80 / 36; the
  // standard rates half of them (2 / 0.20 / 12, long 4 / 0.40 / 18): secondary (the price cut after
  // 2026-07-30 as reported; the long-context figures derived from the Fast column). Write 1.25×.
  'gpt-5.6-terra': {
    ...GPT, contextWindow: 1050000, maxOutputTokens: 128000,
    price: {
      input: 2, cachedInput: 0.2, cacheWrite: 2.5, output: 12,
      longContext: { threshold: 272000, input: 4, cachedInput: 0.4, cacheWrite: 5, output: 18 },
      tiers: { fast: { input: 4, cachedInput: 0.4, cacheWrite: 5, output: 24, longContext: { input: 8, cachedInput: 0.8, cacheWrite: 10, output: 36 } } },
      toolCalls: TOOLS,
    },
  },
  // developers.openai.com/api/docs/models/gpt-5.6-luna: 0.20 / 0.02 / 1.20, write 0.25, above
  // 272K 0.40 / 0.04 / 1.80; openai.com/api-fast-mode: Fast 0.40 / 0.04 / 2.40, long 0.80 / 0.08 / 3.60.
  'gpt-5.6-luna': {
    ...GPT, contextWindow: 1050000, maxOutputTokens: 128000,
    price: {
      input: 0.2, cachedInput: 0.02, cacheWrite: 0.25, output: 1.2,
      longContext: { threshold: 272000, input: 0.4, cachedInput: 0.04, cacheWrite: 0.5, output: 1.8 },
      tiers: { fast: { input: 0.4, cachedInput: 0.04, cacheWrite: 0.5, output: 2.4, longContext: { input: 0.8, cachedInput: 0.08, cacheWrite: 1, output: 3.6 } } },
      toolCalls: TOOLS,
    },
  },
  // Secondary: api-evangelist's copy of the pricing page (2026-05-04), Vercel and Venice: 5 / 0.50
  // / 30, 1,050,000 context. Above 272K "2x input and 1.5x output for the full session", 10 / 1 /
  // 45 (secondary: benchr.org's and tokencost.app's readings of OpenAI's docs; gpt-5.4's own page
  // states the rule for its models with a 1.05M window). openai.com/api-fast-mode: Fast 12.50 /
  // 1.25 / 75, "excludes long context" (the Fast table has no long-context band: a long Fast call
  // is billed each kind at the higher of the two tables, noted). No cache-write fee before GPT-5.6.
  'gpt-5.5': {
    ...GPT, contextWindow: 1050000, maxOutputTokens: 128000,
    price: {
      input: 5, cachedInput: 0.5, cacheWrite: 5, cacheWriteExtended: 5, output: 30,
      longContext: { threshold: 272000, input: 10, cachedInput: 1, cacheWrite: 10, cacheWriteExtended: 10, output: 45 },
      tiers: { fast: { input: 12.5, cachedInput: 1.25, cacheWrite: 12.5, cacheWriteExtended: 12.5, output: 75 } },
      toolCalls: TOOLS,
    },
  },
  // Secondary: api-evangelist (2026-05-04) and apiyi docs: 30 / 180, no cached rate.
  'gpt-5.5-pro': {
    ...GPT, contextWindow: 1050000, maxOutputTokens: 128000,
    price: { input: 30, cacheWrite: 30, cacheWriteExtended: 30, output: 180, toolCalls: TOOLS },
  },
  // developers.openai.com/api/docs/models/gpt-5.4: 2.50 / 0.25 / 15, 1,050,000 context, 128,000
  // output; "For models with a 1.05M context window (GPT-5.4 and GPT-5.4 pro), prompts with >272K
  // input tokens are priced at 2x input and 1.5x output for the full session": 5 / 15 × 1.5 = 22.50,
  // cache reads 2× as well (0.50: secondary, a reading of the pricing page's long-context column);
  // "Regional processing (data residency) endpoints are charged a 10% uplift for GPT-5.4 and GPT-5.4
  // pro". openai.com/api-fast-mode: Fast 5 / 0.50 / 30, "excludes long context" (no Fast band above
  // 272K). Snapshot gpt-5.4-2026-03-05 (secondary: a copy of the data-residency guide's table).
  'gpt-5.4': {
    ...GPT, aliases: ['gpt-5.4-2026-03-05'], contextWindow: 1050000, maxOutputTokens: 128000,
    price: {
      input: 2.5, cachedInput: 0.25, cacheWrite: 2.5, cacheWriteExtended: 2.5, output: 15,
      longContext: { threshold: 272000, input: 5, cachedInput: 0.5, cacheWrite: 5, cacheWriteExtended: 5, output: 22.5 },
      tiers: { fast: { input: 5, cachedInput: 0.5, cacheWrite: 5, cacheWriteExtended: 5, output: 30 } },
      regionalProcessing: 1.1, toolCalls: TOOLS,
    },
  },
  // developers.openai.com/api/docs/models/gpt-5.4-mini, as copied with its source line (secondary
  // copy): 0.75 / 0.075 / 4.50, "400,000 context window", "128,000 max output tokens", "a 10% uplift
  // for GPT-5.4 mini", snapshot gpt-5.4-mini-2026-03-17; no long-context band. openai.com/
  // api-fast-mode: Fast 1.50 / 0.15 / 9.
  'gpt-5.4-mini': {
    ...GPT, aliases: ['gpt-5.4-mini-2026-03-17'], contextWindow: 400000, maxOutputTokens: 128000,
    price: {
      input: 0.75, cachedInput: 0.075, cacheWrite: 0.75, cacheWriteExtended: 0.75, output: 4.5,
      tiers: { fast: { input: 1.5, cachedInput: 0.15, cacheWrite: 1.5, cacheWriteExtended: 1.5, output: 9 } },
      regionalProcessing: 1.1, toolCalls: TOOLS,
    },
  },
  // developers.openai.com/ja-JP/api/docs/models/gpt-5.4-nano: 0.20 / 0.02 / 1.25, 400,000 context,
  // 128,000 output, the 10% regional uplift, default snapshot gpt-5.4-nano-2026-03-17.
  'gpt-5.4-nano': {
    ...GPT, aliases: ['gpt-5.4-nano-2026-03-17'], contextWindow: 400000, maxOutputTokens: 128000,
    price: { input: 0.2, cachedInput: 0.02, cacheWrite: 0.2, cacheWriteExtended: 0.2, output: 1.25, regionalProcessing: 1.1, toolCalls: TOOLS },
  },
  // developers.openai.com/api/docs/models/gpt-5.4-pro (and its ko-KR version): 30 / 180, no cached
  // rate, 1,050,000 context, 128,000 output, above 272K 2× input and 1.5× output (60 / 270), the 10%
  // regional uplift, snapshot gpt-5.4-pro-2026-03-05.
  'gpt-5.4-pro': {
    ...GPT, aliases: ['gpt-5.4-pro-2026-03-05'], contextWindow: 1050000, maxOutputTokens: 128000,
    price: {
      input: 30, cacheWrite: 30, cacheWriteExtended: 30, output: 180,
      longContext: { threshold: 272000, input: 60, cacheWrite: 60, cacheWriteExtended: 60, output: 270 },
      regionalProcessing: 1.1, toolCalls: TOOLS,
    },
  },
  // openai.com/api-fast-mode: Fast 3.50 / 0.35 / 28, standard half of it (1.75 / 0.175 / 14).
  // 400,000 / 128,000 from the 2025 model page (not re-read). Recorded answers carry the snapshot.
  'gpt-5.2': {
    ...GPT, aliases: ['gpt-5.2-2025-12-11'], contextWindow: 400000, maxOutputTokens: 128000,
    price: {
      input: 1.75, cachedInput: 0.175, cacheWrite: 1.75, cacheWriteExtended: 1.75, output: 14,
      tiers: { fast: { input: 3.5, cachedInput: 0.35, cacheWrite: 3.5, cacheWriteExtended: 3.5, output: 28 } },
      toolCalls: TOOLS,
    },
  },
  // openai.com/api-fast-mode: GPT-5.1 Fast 2.50 / 0.25 / 20 (standard 1.25 / 0.125 / 10).
  'gpt-5.1': {
    ...GPT, contextWindow: 400000, maxOutputTokens: 128000,
    price: {
      input: 1.25, cachedInput: 0.125, cacheWrite: 1.25, cacheWriteExtended: 1.25, output: 10,
      tiers: { fast: { input: 2.5, cachedInput: 0.25, cacheWrite: 2.5, cacheWriteExtended: 2.5, output: 20 } },
      toolCalls: TOOLS,
    },
  },
  // openai.com/api-fast-mode: GPT-5.1 Codex Fast 2.50 / 0.25 / 20 (standard 1.25 / 0.125 / 10).
  // A Codex model: the Responses API only (as gpt-5-codex was; its page now says "Shut down").
  'gpt-5.1-codex': {
    ...GPT, endpoints: ['responses'], contextWindow: 400000, maxOutputTokens: 128000,
    price: {
      input: 1.25, cachedInput: 0.125, cacheWrite: 1.25, cacheWriteExtended: 1.25, output: 10,
      tiers: { fast: { input: 2.5, cachedInput: 0.25, cacheWrite: 2.5, cacheWriteExtended: 2.5, output: 20 } },
      toolCalls: TOOLS,
    },
  },
  // developers.openai.com/api/docs/models/gpt-5-codex shows GPT-5 at 1.25 / 10; openai.com/
  // api-fast-mode: Fast 2.50 / 0.25 / 20; flex half the standard rates (OpenAI's flex launch
  // 2025-04-17; the cached 0.0625 rounded up to 0.063, the precision of prices here). Snapshot
  // from the 2025 model page (not re-read).
  'gpt-5': {
    ...GPT, aliases: ['gpt-5-2025-08-07'], contextWindow: 400000, maxOutputTokens: 128000,
    price: {
      input: 1.25, cachedInput: 0.125, cacheWrite: 1.25, cacheWriteExtended: 1.25, output: 10,
      tiers: {
        fast: { input: 2.5, cachedInput: 0.25, cacheWrite: 2.5, cacheWriteExtended: 2.5, output: 20 },
        flex: { input: 0.625, cachedInput: 0.063, cacheWrite: 0.625, cacheWriteExtended: 0.625, output: 5 },
      },
      toolCalls: TOOLS,
    },
  },
  // Standard rates as in the 2025 pricing page (not re-verified); openai.com/api-fast-mode: Fast
  // 0.45 / 0.045 / 3.60 (1.8×); flex half (cached rounded up). Recorded answers carry the snapshot.
  'gpt-5-mini': {
    ...GPT, aliases: ['gpt-5-mini-2025-08-07'], contextWindow: 400000, maxOutputTokens: 128000,
    price: {
      input: 0.25, cachedInput: 0.025, cacheWrite: 0.25, cacheWriteExtended: 0.25, output: 2,
      tiers: {
        fast: { input: 0.45, cachedInput: 0.045, cacheWrite: 0.45, cacheWriteExtended: 0.45, output: 3.6 },
        flex: { input: 0.125, cachedInput: 0.013, cacheWrite: 0.125, cacheWriteExtended: 0.125, output: 1 },
      },
      toolCalls: TOOLS,
    },
  },
  // developers.openai.com/api/docs/models/gpt-5-nano (read 2026-11-23): 0.05 / 0.005 / 0.40; flex
  // half (cached rounded up). No Fast rate found.
  'gpt-5-nano': {
    ...GPT, aliases: ['gpt-5-nano-2025-08-07'], contextWindow: 400000, maxOutputTokens: 128000,
    price: {
      input: 0.05, cachedInput: 0.005, cacheWrite: 0.05, cacheWriteExtended: 0.05, output: 0.4,
      tiers: { flex: { input: 0.025, cachedInput: 0.003, cacheWrite: 0.025, cacheWriteExtended: 0.025, output: 0.2 } },
      toolCalls: TOOLS,
    },
  },
  // Standard rates as in the 2025 pricing page (not re-verified; current status not checked);
  // openai.com/api-fast-mode: Fast (priority) 3.50 / 0.875 / 14.
  'gpt-4.1': {
    ...GPT, aliases: ['gpt-4.1-2025-04-14'], capabilities: ['tools', 'vision'], contextWindow: 1047576, maxOutputTokens: 32768,
    price: {
      input: 2, cachedInput: 0.5, cacheWrite: 2, cacheWriteExtended: 2, output: 8,
      tiers: { fast: { input: 3.5, cachedInput: 0.875, cacheWrite: 3.5, cacheWriteExtended: 3.5, output: 14 } },
      toolCalls: TOOLS_4,
    },
  },
  // As in the 2025 pricing page (not re-verified); priority 0.70 / 0.175 / 2.80 from
  // openai.com/api-priority-processing (read 2026-11-23).
  'gpt-4.1-mini': {
    ...GPT, aliases: ['gpt-4.1-mini-2025-04-14'], capabilities: ['tools', 'vision'], contextWindow: 1047576, maxOutputTokens: 32768,
    price: {
      input: 0.4, cachedInput: 0.1, cacheWrite: 0.4, cacheWriteExtended: 0.4, output: 1.6,
      tiers: { fast: { input: 0.7, cachedInput: 0.175, cacheWrite: 0.7, cacheWriteExtended: 0.7, output: 2.8 } },
      toolCalls: TOOLS_4,
    },
  },
  // As in the 2025 pricing page (not re-verified); priority 4.25 / 2.125 / 17 from
  // openai.com/api-priority-processing (read 2026-11-23).
  'gpt-4o': {
    ...GPT, aliases: ['gpt-4o-2024-08-06'], capabilities: ['tools', 'vision'], contextWindow: 128000, maxOutputTokens: 16384,
    price: {
      input: 2.5, cachedInput: 1.25, cacheWrite: 2.5, cacheWriteExtended: 2.5, output: 10,
      tiers: { fast: { input: 4.25, cachedInput: 2.125, cacheWrite: 4.25, cacheWriteExtended: 4.25, output: 17 } },
      toolCalls: TOOLS_4,
    },
  },
  // As in the 2025 pricing page (not re-verified). No priority rate was found: refused.
  'gpt-4o-mini': {
    ...GPT, aliases: ['gpt-4o-mini-2024-07-18'], capabilities: ['tools', 'vision'], contextWindow: 128000, maxOutputTokens: 16384,
    price: { input: 0.15, cachedInput: 0.075, cacheWrite: 0.15, cacheWriteExtended: 0.15, output: 0.6, toolCalls: TOOLS_4 },
  },
  // As in the 2025 pricing page (not re-verified); flex 0.55 / 2.20 from OpenAI's flex launch
  // (2025-04-17), cached half of 0.275 rounded up.
  'o4-mini': {
    ...GPT, aliases: ['o4-mini-2025-04-16'], contextWindow: 200000, maxOutputTokens: 100000,
    price: {
      input: 1.1, cachedInput: 0.275, cacheWrite: 1.1, cacheWriteExtended: 1.1, output: 4.4,
      tiers: { flex: { input: 0.55, cachedInput: 0.138, cacheWrite: 0.55, cacheWriteExtended: 0.55, output: 2.2 } },
      toolCalls: TOOLS,
    },
  },
};
