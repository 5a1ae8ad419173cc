import t from 'tap';
import { leverConfig } from './helpers/lever-models.js';
import { post, startGateway, usageOf } from './helpers/harness.js';

// Per-call fees of server-side tools: web searches counted from the answer (Messages
// usage.server_tool_use.web_search_requests, Responses web_search_call output items, one per
// answer for Chat's web_search_options) are billed at the price's fee per call. A request that
// offers a fee-bearing tool the price has no fee for is refused before forwarding; calls only
// the answer reports, unpriced, cost the highest fee known (here the built-in catalogue's $25
// per 1,000) and are named. Plain and streamed.

const MODES = [false, true];
const FEE = 10_000_000; // $10 per 1,000 calls, nUSD per call
const FALLBACK = 25_000_000; // the built-in catalogue's highest fee, $25 per 1,000

t.test('Messages: web searches from usage at the fee per call', async (t) => {
  const gw = await startGateway(t, { config: leverConfig });
  // Enough for the million searches counted below (10,000 USD each time).
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '100000']);
  const tools = [{ type: 'web_search_20250305', name: 'web_search', max_uses: 5 }];
  for (const stream of MODES) {
    const res = await post(`${gw.base}/v1/messages`, key, {
      model: 'claude-full', max_tokens: 64, messages: [{ role: 'user', content: 'news?' }], tools, ...(stream ? { stream: true } : {}),
      mock: { inputTokens: 100, outputTokens: 50, webSearchRequests: 3 },
    });
    t.equal(res.status, 200);
    const r = (await usageOf(gw.base, key)).requests[0];
    t.equal(r.costNanoUsd, 100 * 3000 + 50 * 15000 + 3 * FEE, stream ? 'streamed' : 'plain');
    t.match(r, { toolCalls: { web_search: 3 }, worstCase: null });
    // More searches than one call can make (past a million): not believed, counted as a million
    // (the most a charge stays exact with), the record saying why it is estimated.
    await post(`${gw.base}/v1/messages`, key, {
      model: 'claude-full', max_tokens: 64, messages: [{ role: 'user', content: 'news?' }], tools, ...(stream ? { stream: true } : {}),
      mock: { inputTokens: 100, outputTokens: 50, webSearchRequests: 2_000_000 },
    });
    const unbelievable = (await usageOf(gw.base, key)).requests[0];
    t.match(unbelievable, { costNanoUsd: 100 * 3000 + 50 * 15000 + 1_000_000 * FEE, toolCalls: { web_search: 1_000_000 }, estimated: true, estimateReason: 'usage_field_invalid:server_tool_use.web_search_requests' }, `${stream ? 'streamed' : 'plain'}: 2,000,000 searches counted as a million`);
  }
});

t.test('Responses: web_search_call items at the fee per call', async (t) => {
  const gw = await startGateway(t, { config: leverConfig });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '10']);
  for (const stream of MODES) {
    const res = await post(`${gw.base}/v1/responses`, key, {
      model: 'tiered', input: 'news?', tools: [{ type: 'web_search' }], ...(stream ? { stream: true } : {}),
      mock: { inputTokens: 100, outputTokens: 50, webSearchRequests: 2 },
    });
    t.equal(res.status, 200);
    t.match(res.text, /"type":"web_search_call"/, 'the answer carries the calls');
    const r = (await usageOf(gw.base, key)).requests[0];
    t.equal(r.costNanoUsd, 100 * 1000 + 50 * 4000 + 2 * FEE, stream ? 'streamed' : 'plain');
    t.match(r, { toolCalls: { web_search: 2 }, worstCase: null });
  }
});

t.test('Chat: web_search_options is one call per answer', async (t) => {
  const gw = await startGateway(t, { config: leverConfig });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '10']);
  for (const stream of MODES) {
    const res = await post(`${gw.base}/v1/chat/completions`, key, {
      model: 'tiered', messages: [{ role: 'user', content: 'news?' }], web_search_options: {},
      ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}), mock: { inputTokens: 100, outputTokens: 50 },
    });
    t.equal(res.status, 200);
    const r = (await usageOf(gw.base, key)).requests[0];
    t.equal(r.costNanoUsd, 100 * 1000 + 50 * 4000 + FEE, stream ? 'streamed' : 'plain');
    t.match(r, { toolCalls: { web_search: 1 } });
  }
});

t.test('a fee-bearing tool offered on a model without its fee is refused before forwarding', async (t) => {
  const gw = await startGateway(t, { config: leverConfig });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '10']);
  // (A file_search tool names vector stores of the provider's account: refused before this check,
  // 400 unsupported_option; see shared-account-references.test.ts.)
  const requests = [
    { path: '/v1/messages', body: { model: 'claude-base', max_tokens: 64, messages: [], tools: [{ type: 'web_search_20250305', name: 'web_search' }] } },
    { path: '/v1/responses', body: { model: 'base-only', input: 'x', tools: [{ type: 'web_search_preview' }] } },
    { path: '/v1/chat/completions', body: { model: 'base-only', messages: [], web_search_options: {} } },
  ];
  for (const stream of MODES) {
    for (const r of requests) {
      const before = gw.mock.requests.length;
      const res = await post(gw.base + r.path, key, { ...r.body, ...(stream ? { stream: true } : {}) });
      t.equal(res.status, 400, `${r.path} ${JSON.stringify(r.body.model)}`);
      t.match(res.json, { error: { code: 'unpriced_option' } });
      t.match(res.json.error.message, / tool/);
      t.equal(gw.mock.requests.length, before, 'nothing forwarded');
    }
  }
  // A function tool carries no fee: forwarded.
  const fn = await post(`${gw.base}/v1/responses`, key, { model: 'base-only', input: 'x', tools: [{ type: 'function', name: 'f', parameters: {} }] });
  t.equal(fn.status, 200);
});

t.test('a fee-bearing tool is found however its type is written, and among many tools', async (t) => {
  // However the request writes it: a type spelled with \u escapes, or offered after many large
  // function tools, still counts (a search of the raw bytes for the type would miss the first).
  const gw = await startGateway(t, { config: leverConfig });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '10']);
  const schema = { type: 'object', properties: Object.fromEntries(Array.from({ length: 40 }, (_, k) => [`p${k}`, { type: 'string', description: 'a parameter of a tool that does something useful. '.repeat(4) }])) };
  const functions = JSON.stringify(Array.from({ length: 20 }, (_, i) => ({ name: `f${i}`, description: 'A function tool. '.repeat(20), input_schema: schema })));
  const functionsOpen = functions.slice(0, -1); // without its closing bracket: one more tool follows
  const bodies = [
    ['an escaped type', '/v1/messages', '{"model":"claude-base","max_tokens":64,"messages":[],"tools":[{"type":"web\\u005fsearch_20250305","name":"web_search"}]}'],
    ['an escaped type', '/v1/responses', '{"model":"base-only","input":"x","tools":[{"type":"\\u0077eb_search"}]}'],
    ['after 20 function tools', '/v1/messages', `{"model":"claude-base","max_tokens":64,"messages":[],"tools":${functionsOpen},{"type":"web_search_20250305","name":"web_search"}]}`],
  ] as const;
  for (const [what, path, body] of bodies) {
    const before = gw.mock.requests.length;
    const res = await post(gw.base + path, key, body);
    t.equal(res.status, 400, `${path}, ${what}: refused`);
    t.match(res.json, { error: { code: 'unpriced_option' } });
    t.equal(gw.mock.requests.length, before, 'nothing forwarded');
  }
  // The same 20 function tools alone carry no fee: forwarded, and billed without one.
  const plain = await post(`${gw.base}/v1/messages`, key, `{"model":"claude-base","max_tokens":64,"messages":[],"tools":${functions},"mock":{"inputTokens":100,"outputTokens":50}}`);
  t.equal(plain.status, 200);
  const r = (await usageOf(gw.base, key)).requests[0];
  t.equal(r.costNanoUsd, 100 * 3000 + 50 * 15000, 'no fee');
  t.match(r, { toolCalls: null, worstCase: null });
});

t.test('calls only the answer reports, without a fee: the highest fee known, named', async (t) => {
  const gw = await startGateway(t, { config: leverConfig });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '10']);
  for (const stream of MODES) {
    const res = await post(`${gw.base}/v1/messages`, key, {
      model: 'claude-base', max_tokens: 64, messages: [], ...(stream ? { stream: true } : {}),
      mock: { inputTokens: 100, outputTokens: 50, webSearchRequests: 2 },
    });
    t.equal(res.status, 200);
    const r = (await usageOf(gw.base, key)).requests[0];
    t.equal(r.costNanoUsd, 100 * 3000 + 50 * 15000 + 2 * FALLBACK, `messages ${stream ? 'streamed' : 'plain'}`);
    t.match(r, { toolCalls: { web_search: 2 }, worstCase: 'tool:web_search' });
    const resp = await post(`${gw.base}/v1/responses`, key, {
      model: 'base-only', input: 'x', ...(stream ? { stream: true } : {}), mock: { inputTokens: 100, outputTokens: 50, webSearchRequests: 1 },
    });
    t.equal(resp.status, 200);
    const r2 = (await usageOf(gw.base, key)).requests[0];
    t.equal(r2.costNanoUsd, 100 * 1000 + 50 * 4000 + FALLBACK, `responses ${stream ? 'streamed' : 'plain'}`);
    t.match(r2, { toolCalls: { web_search: 1 }, worstCase: 'tool:web_search' });
  }
});
