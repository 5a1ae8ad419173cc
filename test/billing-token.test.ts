/**
 * A token key on /token/v1 is charged every input and output token of each call (cached reads and
 * cache writes included); its budget blocks the next call once used up. A credit key whose last
 * call drove the balance to or below zero is refused the next call.
 */
import t from 'tap';
import { formatUsd } from '../src/money.js';
import { post, startGateway, usageOf } from './helpers/harness.js';

const openaiMock = { inputTokens: 1000, outputTokens: 200, cachedTokens: 400, reasoningTokens: 50 };
const anthropicMock = { inputTokens: 100, outputTokens: 50, cachedTokens: 300, cacheWriteTokens: 200 };

const calls = [false, true].flatMap((stream) => [
  {
    name: `chat ${stream ? 'streamed' : 'plain'}`, path: '/token/v1/chat/completions', endpoint: 'chat', stream,
    body: { model: 'gpt-4o-mini', messages: [], mock: openaiMock, ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}) },
    input: 1000, output: 200, cached: 400, cacheWrite: 0, reasoning: 50,
  },
  {
    name: `responses ${stream ? 'streamed' : 'plain'}`, path: '/token/v1/responses', endpoint: 'responses', stream,
    body: { model: 'gpt-4o-mini', input: 'hi', mock: openaiMock, ...(stream ? { stream: true } : {}) },
    input: 1000, output: 200, cached: 400, cacheWrite: 0, reasoning: 50,
  },
  {
    name: `messages ${stream ? 'streamed' : 'plain'}`, path: '/token/v1/messages', endpoint: 'messages', stream,
    body: { model: 'claude-sonnet-4-5', max_tokens: 64, messages: [], mock: anthropicMock, ...(stream ? { stream: true } : {}) },
    input: 100 + 300 + 200, output: 50, cached: 300, cacheWrite: 200, reasoning: 0,
  },
]);

t.test('token keys are charged all input plus output tokens; used and remaining move exactly', async (t) => {
  const gw = await startGateway(t);
  const budget = 1_000_000;
  const { key } = await gw.createKey(['--mode', 'token', '--budget', String(budget)]);
  let u = await usageOf(gw.base, key);
  t.match(u.key, { mode: 'token', budgetTokens: budget, usedTokens: 0, remainingTokens: budget });
  t.notOk('balanceUsd' in u.key, 'a token key shows no balance');
  let used = 0;
  for (const c of calls) {
    const r = await post(`${gw.base}${c.path}`, key, c.body);
    t.equal(r.status, 200, `${c.name}: 200`);
    const charged = c.input + c.output;
    used += charged;
    u = await usageOf(gw.base, key);
    t.match(u.requests[0], {
      endpoint: c.endpoint, stream: c.stream, status: 200,
      inputTokens: c.input, outputTokens: c.output, cachedInputTokens: c.cached, cacheWriteTokens: c.cacheWrite, reasoningTokens: c.reasoning,
      tokensCharged: charged, costUsd: null, error: null, estimated: false,
    }, `${c.name}: record`);
    t.equal(u.key.usedTokens, used, `${c.name}: used +${charged}`);
    t.equal(u.key.remainingTokens, budget - used, `${c.name}: remaining`);
    t.equal(u.key.budgetTokens, budget, 'the budget itself is unchanged');
  }
  t.equal(used, 2 * (1200 + 1200 + 650), 'two rounds of chat, responses, messages');
});

t.test('a budget that reaches zero refuses the next call with 402 token_budget_exhausted', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'token', '--budget', '100']);
  const first = await post(`${gw.base}/token/v1/chat/completions`, key, { model: 'gpt-4o-mini', messages: [], mock: { inputTokens: 60, outputTokens: 40 } });
  t.equal(first.status, 200);
  let u = await usageOf(gw.base, key);
  t.match(u.key, { budgetTokens: 100, usedTokens: 100, remainingTokens: 0 });
  const forwarded = gw.mock.requests.length;

  const next = await post(`${gw.base}/token/v1/chat/completions`, key, { model: 'gpt-4o-mini', messages: [] });
  t.equal(next.status, 402);
  t.same(next.json.error, { message: next.json.error.message, type: 'insufficient_quota', code: 'token_budget_exhausted', param: null });
  const stream = await post(`${gw.base}/token/v1/messages`, key, { model: 'claude-sonnet-4-5', max_tokens: 8, messages: [], stream: true });
  t.equal(stream.status, 402, 'every format, streamed too');
  t.equal(stream.json.error.code, 'token_budget_exhausted');
  t.equal(gw.mock.requests.length, forwarded, 'nothing forwarded');
  u = await usageOf(gw.base, key);
  t.equal(u.requests.length, 1, 'the refused calls are not listed');
  t.equal(u.key.usedTokens, 100);
});

t.test('the last call may overrun the budget: used shows it exactly, remaining stays at 0', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'token', '--budget', '10']);
  const r = await post(`${gw.base}/token/v1/responses`, key, { model: 'gpt-4o-mini', input: 'hi', mock: { inputTokens: 30, outputTokens: 12 } });
  t.equal(r.status, 200);
  const u = await usageOf(gw.base, key);
  t.match(u.key, { budgetTokens: 10, usedTokens: 42, remainingTokens: 0 });
  t.equal(u.requests[0].tokensCharged, 42);
  const next = await post(`${gw.base}/token/v1/responses`, key, { model: 'gpt-4o-mini', input: 'hi' });
  t.equal(next.status, 402);
  t.equal(next.json.error.code, 'token_budget_exhausted');
});

t.test('a credit call that drives the balance to or below zero blocks the next one with 402 insufficient_credit', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '0.000001']);
  let u = await usageOf(gw.base, key);
  t.equal(u.key.balanceNanoUsd, 1000);
  t.equal(u.key.balanceUsd, '0.000001');

  // The mock's default usage: 11 input, 7 output tokens of gpt-4o-mini (150 / 600 nUSD per token).
  const first = await post(`${gw.base}/v1/chat/completions`, key, { model: 'gpt-4o-mini', messages: [] });
  t.equal(first.status, 200, 'a positive balance admits the call, whatever it will cost');
  t.equal(first.json.usage.prompt_tokens, 11);
  t.equal(first.json.usage.completion_tokens, 7);
  const cost = 11 * 150 + 7 * 600;
  u = await usageOf(gw.base, key);
  t.equal(u.requests[0].costNanoUsd, cost);
  t.equal(u.key.balanceNanoUsd, 1000 - cost, 'the balance went negative by the last call\'s cost, exactly');
  t.equal(u.key.balanceNanoUsd, -4850);
  t.equal(u.key.balanceUsd, formatUsd(-4850));
  t.equal(u.key.balanceUsd, '-0.000005');
  t.equal(u.key.state, 'insufficient_credit');
  const forwarded = gw.mock.requests.length;

  const next = await post(`${gw.base}/v1/chat/completions`, key, { model: 'gpt-4o-mini', messages: [] });
  t.equal(next.status, 402);
  t.same(next.json.error, { message: next.json.error.message, type: 'insufficient_quota', code: 'insufficient_credit', param: null });
  const msg = await post(`${gw.base}/v1/messages`, key, { model: 'claude-sonnet-4-5', max_tokens: 8, messages: [] });
  t.equal(msg.status, 402);
  t.equal(msg.json.error.code, 'insufficient_credit');
  t.equal(gw.mock.requests.length, forwarded, 'nothing forwarded');
  u = await usageOf(gw.base, key);
  t.equal(u.requests.length, 1, 'refused calls are not listed');
  t.equal(u.key.balanceNanoUsd, -4850, 'nor billed');
});

t.test('a credit balance of exactly zero is refused', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '0']);
  const r = await post(`${gw.base}/v1/responses`, key, { model: 'gpt-4o-mini', input: 'hi' });
  t.equal(r.status, 402);
  t.equal(r.json.error.code, 'insufficient_credit');
  t.equal(gw.mock.requests.length, 0);
});
