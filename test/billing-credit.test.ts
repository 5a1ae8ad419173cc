/**
 * A credit key pays, per call, exactly:
 *   fresh input × input + cached reads × cachedInput + cache writes × cacheWrite + output × output
 * (nUSD per token; cachedInput falls back to the input price when not configured, and cache
 * writes without a cacheWrite price cost the model's highest rate, never the base rate), in all
 * three formats, plain and streamed; the balance drops by exactly that.
 */
import t from 'tap';
import { formatUsd } from '../src/money.js';
import { post, startGateway, testModels, usageOf } from './helpers/harness.js';

interface Price { input: number; output: number; cachedInput: number; cacheWrite: number }

/** nUSD per token from the test catalogue (USD per million × 1000), with the documented fallbacks. */
function priceOf(model: string): Price {
  const p = (testModels()[model] as { price: { input: number; output: number; cachedInput?: number; cacheWrite?: number } }).price;
  const nano = (usd: number): number => Math.round(usd * 1000);
  return {
    input: nano(p.input),
    output: nano(p.output),
    cachedInput: nano(p.cachedInput ?? p.input),
    cacheWrite: nano(p.cacheWrite ?? Math.max(p.input, p.output, p.cachedInput ?? 0)),
  };
}

interface Case {
  name: string;
  path: string;
  model: string;
  stream: boolean;
  body: Record<string, unknown>;
  mock: { inputTokens: number; outputTokens: number; cachedTokens: number; cacheWriteTokens?: number; reasoningTokens?: number };
  /** What the record must show as all input tokens. */
  input: number;
  cacheWrite: number;
  reasoning: number;
}

const openaiMock = { inputTokens: 1000, outputTokens: 200, cachedTokens: 400, reasoningTokens: 50 };
const anthropicMock = { inputTokens: 100, outputTokens: 50, cachedTokens: 300, cacheWriteTokens: 200 };

const cases: Case[] = [];
for (const stream of [false, true]) {
  const s = stream ? 'streamed' : 'plain';
  cases.push({
    name: `chat ${s}`, path: '/v1/chat/completions', model: 'gpt-4o-mini', stream,
    body: { messages: [{ role: 'user', content: 'hi' }], ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}) },
    mock: openaiMock, input: 1000, cacheWrite: 0, reasoning: 50,
  });
  cases.push({
    name: `chat ${s}, model without a cachedInput price`, path: '/v1/chat/completions', model: 'gpt-4o', stream,
    body: { messages: [{ role: 'user', content: 'hi' }], ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}) },
    mock: openaiMock, input: 1000, cacheWrite: 0, reasoning: 50,
  });
  cases.push({
    name: `responses ${s}`, path: '/v1/responses', model: 'gpt-4o-mini', stream,
    body: { input: 'hi', ...(stream ? { stream: true } : {}) },
    mock: openaiMock, input: 1000, cacheWrite: 0, reasoning: 50,
  });
  cases.push({
    name: `messages ${s}`, path: '/v1/messages', model: 'claude-sonnet-4-5', stream,
    body: { max_tokens: 64, messages: [{ role: 'user', content: 'hi' }], ...(stream ? { stream: true } : {}) },
    mock: anthropicMock, input: 100 + 300 + 200, cacheWrite: 200, reasoning: 0,
  });
  cases.push({
    name: `messages ${s}, model without cachedInput and cacheWrite prices (cache writes at the highest rate)`, path: '/v1/messages', model: 'claude-haiku-4-5', stream,
    body: { max_tokens: 64, messages: [{ role: 'user', content: 'hi' }], ...(stream ? { stream: true } : {}) },
    mock: anthropicMock, input: 100 + 300 + 200, cacheWrite: 200, reasoning: 0,
  });
}

t.test('the catalogue fallbacks the cases rely on', async (t) => {
  t.same(priceOf('gpt-4o-mini'), { input: 150, output: 600, cachedInput: 75, cacheWrite: 600 });
  t.same(priceOf('gpt-4o'), { input: 2500, output: 10000, cachedInput: 2500, cacheWrite: 10000 });
  t.same(priceOf('claude-sonnet-4-5'), { input: 3000, output: 15000, cachedInput: 300, cacheWrite: 3750 });
  t.same(priceOf('claude-haiku-4-5'), { input: 1000, output: 5000, cachedInput: 1000, cacheWrite: 5000 });
});

t.test('each call is charged by the formula and the balance drops by exactly that', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '10']);
  let balance = (await usageOf(gw.base, key)).key.balanceNanoUsd;
  t.equal(balance, 10_000_000_000, 'opening balance is exact');

  for (const c of cases) {
    const r = await post(`${gw.base}${c.path}`, key, { model: c.model, ...c.body, mock: c.mock });
    t.equal(r.status, 200, `${c.name}: 200`);
    if (c.stream) t.match(r.headers.get('content-type'), /^text\/event-stream/, `${c.name}: streamed`);

    const p = priceOf(c.model);
    const cached = c.mock.cachedTokens;
    const fresh = c.input - cached - c.cacheWrite;
    const expected = fresh * p.input + cached * p.cachedInput + c.cacheWrite * p.cacheWrite + c.mock.outputTokens * p.output;

    const u = await usageOf(gw.base, key);
    const rec = u.requests[0];
    // Cache writes a model has no rate for are a kind of token priced at the highest rate: flagged.
    const worstCase = c.cacheWrite > 0 && (testModels()[c.model] as { price: { cacheWrite?: number } }).price.cacheWrite === undefined;
    t.match(rec, {
      endpoint: c.path.slice('/v1/'.length).replace('chat/completions', 'chat'),
      model: c.model,
      stream: c.stream,
      status: 200,
      inputTokens: c.input,
      outputTokens: c.mock.outputTokens,
      cachedInputTokens: cached,
      cacheWriteTokens: c.cacheWrite,
      reasoningTokens: c.reasoning,
      error: null,
      estimated: worstCase,
      estimateReason: worstCase ? 'unpriced_lever' : null,
    }, `${c.name}: record`);
    t.equal(rec.costNanoUsd, expected, `${c.name}: cost ${expected} nUSD`);
    t.equal(rec.worstCase, worstCase ? 'cacheWrite' : null, `${c.name}: worst-case pricing named`);
    t.equal(rec.costUsd, formatUsd(expected), `${c.name}: costUsd`);
    t.equal(u.key.balanceNanoUsd, balance - expected, `${c.name}: balance dropped by exactly the cost`);
    t.equal(u.key.balanceUsd, formatUsd(balance - expected));
    balance = u.key.balanceNanoUsd;
  }

  const all = await usageOf(gw.base, key);
  t.equal(all.requests.length, cases.length, 'one record per call');
});

t.test('worked figures', async (t) => {
  // gpt-4o-mini, 1000 in (400 cached), 200 out: 600×150 + 400×75 + 200×600.
  t.equal(600 * 150 + 400 * 75 + 200 * 600, 240_000);
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const chat = await post(`${gw.base}/v1/chat/completions`, key, { model: 'gpt-4o-mini', messages: [], mock: openaiMock });
  t.equal(chat.status, 200);
  let u = await usageOf(gw.base, key);
  t.equal(u.requests[0].costNanoUsd, 240_000);
  t.equal(u.requests[0].costUsd, '0.000240');
  t.equal(u.key.balanceNanoUsd, 1_000_000_000 - 240_000);
  // claude-haiku-4-5 has no cache prices: 100 fresh and 300 cached input tokens at the input
  // price 1000, the 200 cache writes at its highest rate (output, 5000), 50 out at 5000.
  const msg = await post(`${gw.base}/v1/messages`, key, { model: 'claude-haiku-4-5', max_tokens: 8, messages: [], mock: anthropicMock });
  t.equal(msg.status, 200);
  u = await usageOf(gw.base, key);
  t.equal(u.requests[0].inputTokens, 600, 'input_tokens + cache_read + cache_creation');
  t.equal(u.requests[0].costNanoUsd, 400 * 1000 + 200 * 5000 + 50 * 5000);
  t.equal(u.key.balanceNanoUsd, 1_000_000_000 - 240_000 - 1_650_000);
  t.equal(u.key.balanceUsd, '0.998110');
});
