/**
 * A usage record's identity is tollgate's own call id, never the provider's request id alone:
 * when the provider answers 40 concurrent calls with one and the same x-request-id, every call
 * keeps its own record and the records sum to what the account was charged. Both surfaces,
 * plain and streamed, all three formats.
 */
import t from 'tap';
import { allRecords, post, startGateway, usageOf } from './helpers/harness.js';

const N = 40;
const mock = { requestId: 'req_repeated_by_the_provider', inputTokens: 10, outputTokens: 5 };
const calls = [
  { path: '/chat/completions', body: { model: 'gpt-4o-mini', max_tokens: 20, messages: [], mock } },
  { path: '/chat/completions', body: { model: 'gpt-4o-mini', max_tokens: 20, messages: [], stream: true, stream_options: { include_usage: true }, mock } },
  { path: '/responses', body: { model: 'gpt-4o-mini', max_output_tokens: 20, input: 'hi', mock } },
  { path: '/messages', body: { model: 'claude-haiku-4-5', max_tokens: 20, messages: [], stream: true, mock } },
];

for (const [mode, amount, surface] of [['credit', '--balance', '/v1'], ['token', '--budget', '/token/v1']] as const) {
  t.test(`${mode} key: ${N} concurrent calls answered with one request id keep ${N} records`, async (t) => {
    const gw = await startGateway(t);
    const key = await gw.createKey(['--mode', mode, amount, mode === 'credit' ? '10' : '10000000']);
    const replies = await Promise.all(Array.from({ length: N }, (_, i) => {
      const c = calls[i % calls.length]!;
      return post(`${gw.base}${surface}${c.path}`, key.key, c.body, { 'anthropic-version': '2023-06-01' });
    }));
    t.same(replies.map((r) => r.status), Array(N).fill(200), 'every call answered');
    t.same([...new Set(replies.map((r) => r.headers.get('x-request-id')))], [mock.requestId], 'the client saw the provider\'s one id each time');
    const { records } = await allRecords(gw.base, key.key, 25);
    t.equal(records.length, N, 'one record per call');
    t.equal(new Set(records.map((r: any) => r.callId)).size, N, 'each under its own call id');
    t.ok(records.every((r: any) => r.requestId === mock.requestId), 'each showing the id the client saw');
    const usage = await usageOf(gw.base, key.key);
    if (mode === 'credit') {
      const sum = records.reduce((s: number, r: any) => s + r.costNanoUsd, 0);
      t.ok(sum > 0);
      t.equal(usage.key.balanceNanoUsd, 10e9 - sum, 'the records sum to the charge');
    } else {
      t.equal(usage.key.usedTokens, records.reduce((s: number, r: any) => s + r.tokensCharged, 0), 'the records sum to the tokens used');
      t.equal(usage.key.usedTokens, N * 15);
    }
  });
}
