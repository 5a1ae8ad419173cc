import t from 'tap';
import { leverConfig } from './helpers/lever-models.js';
import { post, startGateway, usageOf } from './helpers/harness.js';

// Service tiers: a tier the price lists is billed at its rates; a tier the request asks for by
// name that the price does not list is refused (400 unpriced_option) before anything is
// forwarded; a tier only the answer reports, unpriced, is billed at the price's highest rate
// for every token and named in the record. Chat and Responses (OpenAI's service_tier), plain
// and streamed; Messages reports its tier inside usage.

const OPENAI = [
  { name: 'chat', path: '/v1/chat/completions', body: { messages: [{ role: 'user', content: 'hi' }] } },
  { name: 'responses', path: '/v1/responses', body: { input: 'hi' } },
];
const MODES = [false, true];
const mock = { inputTokens: 1000, outputTokens: 200, cachedTokens: 400 };

function streamed(name: string, stream: boolean): Record<string, unknown> {
  if (!stream) return {};
  return name === 'chat' ? { stream: true, stream_options: { include_usage: true } } : { stream: true };
}

t.test('a priced tier asked for is billed at that tier\'s rates', async (t) => {
  const gw = await startGateway(t, { config: leverConfig });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '10']);
  for (const f of OPENAI) {
    for (const stream of MODES) {
      const label = `${f.name} ${stream ? 'streamed' : 'plain'}`;
      const res = await post(gw.base + f.path, key, { model: 'tiered', service_tier: 'priority', ...f.body, ...streamed(f.name, stream), mock });
      t.equal(res.status, 200, label);
      const r = (await usageOf(gw.base, key)).requests[0];
      // priority: input 2000, cached 1000, output 8000 nUSD per token
      t.equal(r.costNanoUsd, 600 * 2000 + 400 * 1000 + 200 * 8000, `${label}: priority rates`);
      t.match(r, { serviceTier: 'priority', worstCase: null, estimated: false }, label);
    }
  }
});

t.test('the standard tier (none, auto, default) is billed at the base rates', async (t) => {
  const gw = await startGateway(t, { config: leverConfig });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '10']);
  for (const tier of [undefined, 'auto', 'default']) {
    const res = await post(`${gw.base}/v1/chat/completions`, key, { model: 'tiered', ...(tier ? { service_tier: tier } : {}), ...OPENAI[0]!.body, mock });
    t.equal(res.status, 200);
    const r = (await usageOf(gw.base, key)).requests[0];
    t.equal(r.costNanoUsd, 600 * 1000 + 400 * 500 + 200 * 4000, `service_tier ${tier}: base rates`);
    t.equal(r.worstCase, null);
  }
});

t.test('an unpriced tier asked for by name is refused before forwarding', async (t) => {
  const gw = await startGateway(t, { config: leverConfig });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '10']);
  for (const f of OPENAI) {
    for (const stream of MODES) {
      for (const [model, tier] of [['tiered', 'flex'], ['base-only', 'priority']] as const) {
        const label = `${f.name} ${stream ? 'streamed' : 'plain'}, ${model} ${tier}`;
        const before = gw.mock.requests.length;
        const res = await post(gw.base + f.path, key, { model, service_tier: tier, ...f.body, ...streamed(f.name, stream), mock });
        t.equal(res.status, 400, label);
        t.match(res.json, { error: { code: 'unpriced_option', type: 'invalid_request_error', param: null } }, label);
        t.match(res.json.error.message, `service_tier "${tier}"`, `${label}: the message names the option`);
        t.equal(gw.mock.requests.length, before, `${label}: nothing forwarded`);
      }
    }
  }
  const u = await usageOf(gw.base, key);
  t.equal(u.requests.length, 0, 'refusals are not listed');
  t.equal(u.key.balanceNanoUsd, 10_000_000_000, 'nor billed');
});

t.test('a token key is charged tokens, whatever the tier costs: not refused', async (t) => {
  const gw = await startGateway(t, { config: leverConfig });
  const { key } = await gw.createKey(['--mode', 'token', '--budget', '100000']);
  const res = await post(`${gw.base}/token/v1/chat/completions`, key, { model: 'base-only', service_tier: 'priority', ...OPENAI[0]!.body, mock });
  t.equal(res.status, 200);
  t.match((await usageOf(gw.base, key)).requests[0], { tokensCharged: 1200, serviceTier: 'priority' });
});

t.test('an unpriced tier only the answer reports: every token at the highest rate, named', async (t) => {
  const gw = await startGateway(t, { config: leverConfig });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '10']);
  for (const f of OPENAI) {
    for (const stream of MODES) {
      const label = `${f.name} ${stream ? 'streamed' : 'plain'}`;
      // The request leaves the tier to the provider (its project default); the answer says flex.
      const res = await post(gw.base + f.path, key, { model: 'tiered', ...f.body, ...streamed(f.name, stream), mock: { ...mock, serviceTier: 'flex' } });
      t.equal(res.status, 200, label);
      const r = (await usageOf(gw.base, key)).requests[0];
      // tiered's highest rate: priority output, 8000 nUSD per token.
      t.equal(r.costNanoUsd, 1200 * 8000, `${label}: all 1200 tokens at 8000`);
      t.match(r, { serviceTier: 'flex', worstCase: 'service_tier:flex' }, label);
    }
  }
  for (const stream of MODES) {
    const label = `messages ${stream ? 'streamed' : 'plain'}`;
    const res = await post(`${gw.base}/v1/messages`, key, {
      model: 'claude-base', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }], ...(stream ? { stream: true } : {}),
      mock: { inputTokens: 100, outputTokens: 50, serviceTier: 'priority' },
    });
    t.equal(res.status, 200, label);
    const r = (await usageOf(gw.base, key)).requests[0];
    t.equal(r.costNanoUsd, 150 * 15000, `${label}: all 150 tokens at claude-base's highest rate`);
    t.match(r, { serviceTier: 'priority', worstCase: 'service_tier:priority' }, label);
  }
  for (const stream of MODES) {
    const res = await post(`${gw.base}/v1/messages`, key, {
      model: 'claude-base', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }], ...(stream ? { stream: true } : {}),
      mock: { inputTokens: 100, outputTokens: 50, serviceTier: 'standard' },
    });
    t.equal(res.status, 200);
    const r = (await usageOf(gw.base, key)).requests[0];
    t.equal(r.costNanoUsd, 100 * 3000 + 50 * 15000, `messages ${stream ? 'streamed' : 'plain'}: "standard" is the base price`);
    t.equal(r.worstCase, null);
  }
});
