/**
 * Answers recorded against the providers' real APIs (test/fixtures/recorded/, from the Vercel
 * AI SDK's fixtures), replayed to the gateway by a provider that sends them back byte for byte:
 * each call is billed to the nano what its recorded usage costs at the built-in catalogue's
 * price, plain and streamed, the record naming the id the client sent (snapshot ids are
 * aliases of their entry). The expected costs are worked out by hand from the recorded counts
 * and the catalogue's cited rates (nUSD per token = USD per million × 1000; tool calls in nUSD).
 *
 * The recordings cover Chat Completions and Responses (cached input, reasoning, web search and
 * file search calls, cache_write_tokens) and Messages (web search, web fetch, 5-minute cache
 * writes and reads restated in message_delta, thinking tokens, and server-side compaction,
 * whose first pass only `usage.iterations` reports).
 */
import t from 'tap';
import { defaultConfig, post, startGateway, usageOf } from './helpers/harness.js';
import { startReplayProvider } from './helpers/replay-provider.js';

interface Case {
  name: string;
  path: string;
  /** The id sent (and recorded). */
  model: string;
  replay: string;
  stream: boolean;
  body?: Record<string, unknown>;
  nano: number;
  record: Record<string, unknown>;
}

const CHAT = { messages: [{ role: 'user', content: 'Hello' }] };
const RESPONSES = { input: 'Hello' };
const MESSAGES = { max_tokens: 4096, messages: [{ role: 'user', content: 'Hello' }] };

const CASES: Case[] = [
  // gpt-4.1-nano (this test's own entry, below): 0.10 / 0.40 → 100 / 400 nUSD per token.
  { name: 'chat text', path: '/v1/chat/completions', model: 'gpt-4.1-nano-2025-04-14', replay: 'openai/openai-text', stream: false, body: CHAT,
    nano: 16 * 100 + 363 * 400, record: { inputTokens: 16, outputTokens: 363 } },
  { name: 'chat text', path: '/v1/chat/completions', model: 'gpt-4.1-nano-2025-04-14', replay: 'openai/openai-text', stream: true, body: { ...CHAT, stream_options: { include_usage: true } },
    nano: 121_600, record: { inputTokens: 16, outputTokens: 300 } },
  // gpt-5-mini: 0.25 / 0.025 cached / 2; web search $10 per 1,000 = 10,000,000 nUSD a call.
  // Plain: 19,681 in (3,712 cached), 3,773 out, three web_search_call items:
  // 15,969 × 250 + 3,712 × 25 + 3,773 × 2,000 + 3 × 10,000,000 = 41,631,050.
  { name: 'responses web search', path: '/v1/responses', model: 'gpt-5-mini-2025-08-07', replay: 'openai/openai-web-search-tool.1', stream: false, body: { ...RESPONSES, tools: [{ type: 'web_search' }] },
    nano: 41_631_050, record: { inputTokens: 19681, cachedInputTokens: 3712, outputTokens: 3773, reasoningTokens: 3136, toolCalls: { web_search: 3 } } },
  // Streamed: 31,073 in (3,712 cached), 4,416 out, six searches:
  // 27,361 × 250 + 92,800 + 8,832,000 + 60,000,000 = 75,765,050.
  { name: 'responses web search', path: '/v1/responses', model: 'gpt-5-mini-2025-08-07', replay: 'openai/openai-web-search-tool.1', stream: true, body: { ...RESPONSES, tools: [{ type: 'web_search' }] },
    nano: 75_765_050, record: { inputTokens: 31073, cachedInputTokens: 3712, outputTokens: 4416, toolCalls: { web_search: 6 } } },
  // gpt-5-mini, file search $2.50 per 1,000 = 2,500,000 nUSD a call. The recorded request's
  // vector_store_ids are left out: they name objects on the provider account every key shares,
  // refused before forwarding (test/shared-account-references.test.ts); the answer is as recorded.
  // 1,140 × 250 + 2,560 × 25 + 741 × 2,000 + 2,500,000 = 4,331,000.
  { name: 'responses file search', path: '/v1/responses', model: 'gpt-5-mini', replay: 'openai/openai-file-search-tool.1', stream: false, body: { ...RESPONSES, tools: [{ type: 'file_search' }] },
    nano: 4_331_000, record: { inputTokens: 3700, cachedInputTokens: 2560, outputTokens: 741, toolCalls: { file_search: 1 } } },
  // 1,433 × 250 + 2,304 × 25 + 621 × 2,000 + 2,500,000 = 4,157,850.
  { name: 'responses file search', path: '/v1/responses', model: 'gpt-5-mini', replay: 'openai/openai-file-search-tool.1', stream: true, body: { ...RESPONSES, tools: [{ type: 'file_search' }] },
    nano: 4_157_850, record: { inputTokens: 3737, cachedInputTokens: 2304, outputTokens: 621, toolCalls: { file_search: 1 } } },
  // gpt-5.2: 1.75 / 0.175 / 14. Plain: 51,097 × 1,750 + 2,056 × 14,000 = 118,203,750.
  { name: 'responses compaction', path: '/v1/responses', model: 'gpt-5.2-2025-12-11', replay: 'openai/openai-compaction.1', stream: false, body: RESPONSES,
    nano: 118_203_750, record: { inputTokens: 51097, cachedInputTokens: 0, outputTokens: 2056 } },
  // Streamed: 1,305 × 1,750 + 49,792 × 175 + 2,505 × 14,000 = 46,067,350.
  { name: 'responses compaction', path: '/v1/responses', model: 'gpt-5.2-2025-12-11', replay: 'openai/openai-compaction.1', stream: true, body: RESPONSES,
    nano: 46_067_350, record: { inputTokens: 51097, cachedInputTokens: 49792, outputTokens: 2505 } },
  // gpt-5.6-sol (named by its alias gpt-5.6) at its list price 5 / 30; cache_write_tokens 0.
  // 631 × 5,000 + 139 × 30,000 = 7,325,000; streamed 631 × 5,000 + 87 × 30,000 = 5,765,000.
  { name: 'responses with cache_write_tokens', path: '/v1/responses', model: 'gpt-5.6', replay: 'openai/programmatic-tool-calling.1', stream: false, body: RESPONSES,
    nano: 7_325_000, record: { inputTokens: 631, cacheWriteTokens: 0, outputTokens: 139 } },
  { name: 'responses with cache_write_tokens', path: '/v1/responses', model: 'gpt-5.6', replay: 'openai/programmatic-tool-calling.1', stream: true, body: RESPONSES,
    nano: 5_765_000, record: { inputTokens: 631, cacheWriteTokens: 0, outputTokens: 87 } },
  // gpt-5-mini: 865 × 250 + 163 × 2,000 = 542,250.
  { name: 'responses reasoning', path: '/v1/responses', model: 'gpt-5-mini', replay: 'openai/openai-reasoning-encrypted-content.1', stream: false, body: RESPONSES,
    nano: 542_250, record: { inputTokens: 865, outputTokens: 163, reasoningTokens: 128 } },
  // claude-sonnet-4-5 (named by its snapshot id): 3 / 15. 12 × 3,000 + 29 × 15,000 = 471,000.
  { name: 'messages text', path: '/v1/messages', model: 'claude-sonnet-4-5-20250929', replay: 'anthropic/anthropic-text', stream: false, body: MESSAGES,
    nano: 471_000, record: { inputTokens: 12, outputTokens: 29, inferenceGeo: 'not_available' } },
  { name: 'messages text', path: '/v1/messages', model: 'claude-sonnet-4-5-20250929', replay: 'anthropic/anthropic-text', stream: true, body: MESSAGES,
    nano: 486_000, record: { inputTokens: 12, outputTokens: 30 } },
  // Sonnet 4 (this test's own entry): 3 / 15, web search 10,000,000 nUSD.
  // 27,118 × 3,000 + 600 × 15,000 + 2 × 10,000,000 = 110,354,000.
  { name: 'messages web search', path: '/v1/messages', model: 'claude-sonnet-4-20250514', replay: 'anthropic/anthropic-web-search-tool.1', stream: false, body: { ...MESSAGES, tools: [{ type: 'web_search_20250305', name: 'web_search' }] },
    nano: 110_354_000, record: { inputTokens: 27118, outputTokens: 600, toolCalls: { web_search: 2 } } },
  // Streamed: message_delta restates the input, 15,665; 795 out; one search.
  // 15,665 × 3,000 + 795 × 15,000 + 10,000,000 = 68,920,000.
  { name: 'messages web search', path: '/v1/messages', model: 'claude-sonnet-4-20250514', replay: 'anthropic/anthropic-web-search-tool.1', stream: true, body: { ...MESSAGES, tools: [{ type: 'web_search_20250305', name: 'web_search' }] },
    nano: 68_920_000, record: { inputTokens: 15665, outputTokens: 795, toolCalls: { web_search: 1 } } },
  // claude-sonnet-4-6: 3 / 15; web fetch has no fee. 7,204 × 3,000 + 162 × 15,000 = 24,042,000.
  { name: 'messages web fetch', path: '/v1/messages', model: 'claude-sonnet-4-6', replay: 'anthropic/anthropic-web-fetch-tool-20260209.1', stream: false, body: { ...MESSAGES, tools: [{ type: 'web_fetch_20260209', name: 'web_fetch' }] },
    nano: 24_042_000, record: { inputTokens: 7204, outputTokens: 162, inferenceGeo: 'global', toolCalls: null } },
  // 7,172 × 3,000 + 144 × 15,000 = 23,676,000.
  { name: 'messages web fetch', path: '/v1/messages', model: 'claude-sonnet-4-6', replay: 'anthropic/anthropic-web-fetch-tool-20260209.1', stream: true, body: { ...MESSAGES, tools: [{ type: 'web_fetch_20260209', name: 'web_fetch' }] },
    nano: 23_676_000, record: { inputTokens: 7172, outputTokens: 144, toolCalls: null } },
  // claude-sonnet-5: 2 / 10, 5-minute write 2.50, read 0.20. message_delta restates the counts:
  // 6 fresh, 3,337 written (the 5-minute split of message_start, no 1-hour part), 6,289 read, 198 out.
  // 6 × 2,000 + 3,337 × 2,500 + 6,289 × 200 + 198 × 10,000 = 11,592,300.
  { name: 'messages cache writes and reads', path: '/v1/messages', model: 'claude-sonnet-5', replay: 'anthropic/anthropic-code-execution-20260120-prompt-cache.1', stream: true, body: MESSAGES,
    nano: 11_592_300, record: { inputTokens: 9632, cacheWriteTokens: 3337, cachedInputTokens: 6289, cacheWrite1hTokens: 0, outputTokens: 198 } },
  // claude-opus-5: 5 / 25; thinking tokens are output. 51 × 5,000 + 1,699 × 25,000 = 42,730,000.
  { name: 'messages thinking', path: '/v1/messages', model: 'claude-opus-5', replay: 'anthropic/anthropic-claude-opus-5-reasoning-high.1', stream: false, body: MESSAGES,
    nano: 42_730_000, record: { inputTokens: 51, outputTokens: 1699, reasoningTokens: 139, serviceTier: 'standard', inferenceGeo: 'global' } },
  // claude-opus-4-6: 5 / 25. Compaction: the top level reports only the last pass (682 in /
  // 1,320 out, which alone would be 36,410,000); usage.iterations has the compaction pass too:
  // (60,385 + 682) × 5,000 + (592 + 1,320) × 25,000 = 353,135,000.
  { name: 'messages compaction', path: '/v1/messages', model: 'claude-opus-4-6', replay: 'anthropic/anthropic-compaction.1', stream: false, body: MESSAGES,
    nano: 353_135_000, record: { inputTokens: 61067, outputTokens: 1912 } },
  // Streamed: message_start reports the compaction pass's input (60,385), message_delta the last
  // pass's top level (612 / 2,819, cache counts reset) and the iterations:
  // (60,385 + 612) × 5,000 + (522 + 2,819) × 25,000 = 388,510,000.
  { name: 'messages compaction', path: '/v1/messages', model: 'claude-opus-4-6', replay: 'anthropic/anthropic-compaction.1', stream: true, body: MESSAGES,
    nano: 388_510_000, record: { inputTokens: 60997, outputTokens: 3341 } },
];

t.test('recorded answers, replayed: each call billed to the nano at the built-in catalogue\'s price', async (t) => {
  const replay = await startReplayProvider();
  t.teardown(() => replay.close());
  const gw = await startGateway(t, {
    config: (mockUrl) => {
      const base = defaultConfig(mockUrl) as { providers: Record<string, { baseUrl: string }> };
      for (const p of Object.values(base.providers)) p.baseUrl = `${replay.url}/v1`;
      // The built-in catalogue, and two models of the recordings it does not serve, added by the
      // file (with their snapshot ids as aliases) at this test's own prices.
      return {
        providers: base.providers,
        models: {
          'gpt-4.1-nano': { provider: 'openai', endpoints: ['chat', 'responses'], aliases: ['gpt-4.1-nano-2025-04-14'], price: { input: 0.1, cachedInput: 0.025, output: 0.4 } },
          'claude-sonnet-4-0': { provider: 'anthropic', endpoints: ['messages'], aliases: ['claude-sonnet-4-20250514'], price: { input: 3, cachedInput: 0.3, cacheWrite: 3.75, output: 15, toolCalls: { web_search: 10 } } },
        },
      };
    },
  });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '100']);
  let balance = 100_000_000_000;
  for (const c of CASES) {
    const label = `${c.name} ${c.stream ? 'streamed' : 'plain'} (${c.model})`;
    const res = await post(gw.base + c.path, key, { model: c.model, ...c.body, ...(c.stream ? { stream: true } : {}), replay: c.replay });
    t.equal(res.status, 200, `${label}: 200`);
    const u = await usageOf(gw.base, key);
    const r = u.requests[0];
    t.equal(r.costNanoUsd, c.nano, `${label}: ${c.nano} nUSD`);
    t.match(r, { model: c.model, stream: c.stream, estimated: false, worstCase: null, ...c.record }, `${label}: record`);
    balance -= c.nano;
    t.equal(u.key.balanceNanoUsd, balance, `${label}: the balance dropped by exactly that`);
  }
  t.equal(replay.requests.length, CASES.length, 'every call reached the provider');
});
