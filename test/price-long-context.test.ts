import t from 'tap';
import { leverConfig } from './helpers/lever-models.js';
import { post, startGateway, usageOf } from './helpers/harness.js';

// Long context: a call whose input exceeds the price's threshold has every token billed at the
// long-context rates (the providers' rule: input above the threshold reprices the whole call).
// A request that opens the long window (anthropic-beta context-1m) on a model without
// long-context rates is refused before forwarding. Every format, plain and streamed.

const MODES = [false, true];

t.test('OpenAI formats: above the threshold every token at the long-context rates, at it the base rates', async (t) => {
  const gw = await startGateway(t, { config: leverConfig });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '100']);
  const formats = [
    { name: 'chat', path: '/v1/chat/completions', body: { messages: [{ role: 'user', content: 'hi' }] }, stream: { stream: true, stream_options: { include_usage: true } } },
    { name: 'responses', path: '/v1/responses', body: { input: 'hi' }, stream: { stream: true } },
  ];
  for (const f of formats) {
    for (const stream of MODES) {
      const label = `${f.name} ${stream ? 'streamed' : 'plain'}`;
      for (const [input, long] of [[272000, false], [272001, true]] as const) {
        const res = await post(gw.base + f.path, key, { model: 'long-openai', ...f.body, ...(stream ? f.stream : {}), mock: { inputTokens: input, outputTokens: 1000, cachedTokens: 2000 } });
        t.equal(res.status, 200);
        const r = (await usageOf(gw.base, key)).requests[0];
        const expected = long
          ? (input - 2000) * 5000 + 2000 * 500 + 1000 * 22500 // long: input 5, cached 0.5, output 22.5
          : (input - 2000) * 2500 + 2000 * 250 + 1000 * 15000; // base: input 2.5, cached 0.25, output 15
        t.equal(r.costNanoUsd, expected, `${label}, ${input} input tokens: ${long ? 'long-context' : 'base'} rates`);
        t.match(r, { longContext: long, worstCase: null }, label);
      }
    }
  }
});

t.test('Messages: long-context rates for every kind, cache reads and writes included', async (t) => {
  const gw = await startGateway(t, { config: leverConfig });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '100']);
  for (const stream of MODES) {
    const label = `messages ${stream ? 'streamed' : 'plain'}`;
    // input_tokens 150,000 + cache reads 50,000 + cache writes 1,000 (400 of them 1-hour) = 201,000
    const res = await post(`${gw.base}/v1/messages`, key, {
      model: 'claude-full', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }], ...(stream ? { stream: true } : {}),
      mock: { inputTokens: 150000, cachedTokens: 50000, cacheWriteTokens: 1000, cacheWrite1hTokens: 400, outputTokens: 3000 },
    }, { 'anthropic-beta': 'context-1m-2025-08-07' });
    t.equal(res.status, 200, label);
    const r = (await usageOf(gw.base, key)).requests[0];
    t.equal(r.inputTokens, 201000);
    // long: input 6, cached 0.6, 5-minute write 7.5, 1-hour write 12, output 22.5
    t.equal(r.costNanoUsd, 150000 * 6000 + 50000 * 600 + 600 * 7500 + 400 * 12000 + 3000 * 22500, `${label}: long-context rates`);
    t.match(r, { longContext: true, cacheWrite1hTokens: 400, worstCase: null }, label);
  }
});

t.test('the long window asked for on a model without long-context rates is refused before forwarding', async (t) => {
  const gw = await startGateway(t, { config: leverConfig });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  for (const stream of MODES) {
    const before = gw.mock.requests.length;
    const res = await post(`${gw.base}/v1/messages`, key, {
      model: 'claude-base', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }], ...(stream ? { stream: true } : {}),
    }, { 'anthropic-beta': 'interleaved-thinking-2025-05-14, context-1m-2025-08-07' });
    t.equal(res.status, 400);
    t.match(res.json, { error: { code: 'unpriced_option', type: 'invalid_request_error' } });
    t.match(res.json.error.message, 'long context');
    t.equal(gw.mock.requests.length, before, 'nothing forwarded');
  }
  // Other betas are not a price lever.
  const res = await post(`${gw.base}/v1/messages`, key, { model: 'claude-base', max_tokens: 64, messages: [] }, { 'anthropic-beta': 'interleaved-thinking-2025-05-14' });
  t.equal(res.status, 200);
});
