import t from 'tap';
import { leverConfig } from './helpers/lever-models.js';
import { post, startGateway, usageOf } from './helpers/harness.js';

// Cache writes by duration (Messages): the 1-hour writes the answer reports in
// cache_creation.ephemeral_1h_input_tokens are billed at cacheWrite1h, the rest of the writes
// at cacheWrite. A request asking for 1-hour writes (cache_control ttl "1h") on a model
// without that rate is refused before forwarding; 1-hour writes only the answer reports, on
// such a model, are billed at the price's highest rate and named. Plain and streamed.

const MODES = [false, true];
const body = (stream: boolean, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  max_tokens: 64, messages: [{ role: 'user', content: 'hi' }], ...(stream ? { stream: true } : {}), ...extra,
});
const mock = { inputTokens: 100, cachedTokens: 300, cacheWriteTokens: 1000, cacheWrite1hTokens: 600, outputTokens: 50 };

t.test('1-hour writes at their own rate, the other writes at the 5-minute rate', async (t) => {
  const gw = await startGateway(t, { config: leverConfig });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '10']);
  const ttl = { system: [{ type: 'text', text: 'long prompt', cache_control: { type: 'ephemeral', ttl: '1h' } }] };
  for (const stream of MODES) {
    const res = await post(`${gw.base}/v1/messages`, key, { model: 'claude-full', ...body(stream, ttl), mock });
    t.equal(res.status, 200);
    const r = (await usageOf(gw.base, key)).requests[0];
    // input 3000, cached 300, 5-minute write 3750, 1-hour write 6000, output 15000
    t.equal(r.costNanoUsd, 100 * 3000 + 300 * 300 + 400 * 3750 + 600 * 6000 + 50 * 15000, stream ? 'streamed' : 'plain');
    t.match(r, { cacheWriteTokens: 1000, cacheWrite1hTokens: 600, worstCase: null });
  }
});

t.test('a request for 1-hour writes on a model without the rate is refused before forwarding', async (t) => {
  const gw = await startGateway(t, { config: leverConfig });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '10']);
  const ttl = { messages: [{ role: 'user', content: [{ type: 'text', text: 'doc', cache_control: { type: 'ephemeral', ttl: '1h' } }] }] };
  for (const stream of MODES) {
    const before = gw.mock.requests.length;
    const res = await post(`${gw.base}/v1/messages`, key, { model: 'claude-base', ...body(stream, ttl), mock });
    t.equal(res.status, 400);
    t.match(res.json, { error: { code: 'unpriced_option' } });
    t.match(res.json.error.message, '1-hour cache writes');
    t.equal(gw.mock.requests.length, before, 'nothing forwarded');
  }
  // The 5-minute cache (no ttl, or ttl "5m") is priced: forwarded.
  const fiveMinutes = { messages: [{ role: 'user', content: [{ type: 'text', text: 'doc', cache_control: { type: 'ephemeral', ttl: '5m' } }] }] };
  t.equal((await post(`${gw.base}/v1/messages`, key, { model: 'claude-base', ...body(false, fiveMinutes) })).status, 200);
});

t.test('1-hour writes only the answer reports, without the rate: the highest rate, named', async (t) => {
  const gw = await startGateway(t, { config: leverConfig });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '10']);
  for (const stream of MODES) {
    const res = await post(`${gw.base}/v1/messages`, key, { model: 'claude-base', ...body(stream), mock });
    t.equal(res.status, 200);
    const r = (await usageOf(gw.base, key)).requests[0];
    // claude-base's highest rate is output, 15000; the 400 other writes at 3750.
    t.equal(r.costNanoUsd, 100 * 3000 + 300 * 300 + 400 * 3750 + 600 * 15000 + 50 * 15000, stream ? 'streamed' : 'plain');
    t.match(r, { cacheWrite1hTokens: 600, worstCase: 'cacheWrite1h' });
  }
});
