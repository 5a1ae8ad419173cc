/**
 * Under concurrency, nothing is lost and nothing is charged twice: 300 simultaneous calls on a
 * credit key and 300 on a token key (mixed formats, plain and streamed) leave the balance and the
 * used tokens exactly at the sum of the 300 records, which is the expected arithmetic — with one
 * server process and with two cluster workers sharing the LMDB environment.
 */
import t, { type Test } from 'tap';
import { allRecords, post, startGateway, usageOf, type Harness } from './helpers/harness.js';

const N = 300;

interface Call { path: string; body: Record<string, unknown>; stream: boolean; input: number; output: number; costNano: number }

/** Call i of a surface ('' for credit, '/token' for token): deterministic, varied token counts. */
function callOf(i: number, surface: '' | '/token'): Call {
  const kind = i % 3;
  const stream = i % 2 === 1;
  const I = 10 + (i % 17);
  const O = 5 + (i % 13);
  const C = i % 5;
  const W = i % 3;
  if (kind === 0) {
    return {
      path: `${surface}/v1/chat/completions`, stream,
      body: { model: 'gpt-4o-mini', messages: [], mock: { inputTokens: I, outputTokens: O, cachedTokens: C }, ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}) },
      input: I, output: O, costNano: (I - C) * 150 + C * 75 + O * 600,
    };
  }
  if (kind === 1) {
    return {
      path: `${surface}/v1/responses`, stream,
      body: { model: 'gpt-4o-mini', input: 'hi', mock: { inputTokens: I, outputTokens: O, cachedTokens: C, reasoningTokens: 1 }, ...(stream ? { stream: true } : {}) },
      input: I, output: O, costNano: (I - C) * 150 + C * 75 + O * 600,
    };
  }
  return {
    path: `${surface}/v1/messages`, stream,
    body: { model: 'claude-sonnet-4-5', max_tokens: 64, messages: [], mock: { inputTokens: I, outputTokens: O, cachedTokens: C, cacheWriteTokens: W }, ...(stream ? { stream: true } : {}) },
    input: I + C + W, output: O, costNano: I * 3000 + C * 300 + W * 3750 + O * 15000,
  };
}

async function round(t: Test, gw: Harness): Promise<void> {
  const opening = 100;
  // Covers every call in flight at its cap (no max_tokens: a 128k-context model holds 128k output tokens).
  const budget = 100_000_000;
  const credit = await gw.createKey(['--mode', 'credit', '--balance', String(opening)]);
  const token = await gw.createKey(['--mode', 'token', '--budget', String(budget)]);

  const creditCalls = Array.from({ length: N }, (_, i) => callOf(i, ''));
  const tokenCalls = Array.from({ length: N }, (_, i) => callOf(i, '/token'));
  const results = await Promise.all([
    ...creditCalls.map((c) => post(`${gw.base}${c.path}`, credit.key, c.body)),
    ...tokenCalls.map((c) => post(`${gw.base}${c.path}`, token.key, c.body)),
  ]);
  t.same(results.filter((r) => r.status !== 200).map((r) => r.text), [], 'all 600 calls succeed');
  t.equal(gw.mock.requests.length, 2 * N, 'the provider got every call once');

  const expectedCost = creditCalls.reduce((s, c) => s + c.costNano, 0);
  const expectedTokens = tokenCalls.reduce((s, c) => s + c.input + c.output, 0);

  // Credit key.
  const c = await allRecords(gw.base, credit.key, 70);
  t.equal(c.records.length, N, '300 credit records');
  t.equal(c.pages, 5, '70 + 70 + 70 + 70 + 20');
  t.equal(new Set(c.records.map((r) => r.requestId)).size, N, 'no record listed twice across pages');
  const recordedCost = c.records.reduce((s, r) => s + r.costNanoUsd, 0);
  t.equal(recordedCost, expectedCost, 'records sum to the expected arithmetic');
  t.ok(c.records.every((r) => r.error === null && r.estimated === false && r.status === 200), 'every record is a clean success');
  t.equal(c.records.filter((r) => r.stream).length, N / 2, 'half were streamed');
  t.same(
    [...new Set(c.records.map((r) => r.endpoint))].sort(),
    ['chat', 'messages', 'responses'],
  );
  const ats = c.records.map((r) => Date.parse(r.at));
  t.ok(ats.every((at, i) => i === 0 || at <= ats[i - 1]!), 'newest first across pages');
  const cu = await usageOf(gw.base, credit.key);
  t.equal(cu.key.balanceNanoUsd, opening * 1_000_000_000 - expectedCost, 'balance = opening − exact sum');

  // Token key.
  const k = await allRecords(gw.base, token.key, 100);
  t.equal(k.records.length, N, '300 token records');
  t.equal(k.pages, 3, '100 + 100 + 100, and no cursor after the last record');
  t.equal(new Set(k.records.map((r) => r.requestId)).size, N);
  const recordedTokens = k.records.reduce((s, r) => s + r.tokensCharged, 0);
  t.equal(recordedTokens, expectedTokens, 'records sum to the expected tokens');
  const ku = await usageOf(gw.base, token.key);
  t.equal(ku.key.usedTokens, expectedTokens, 'used tokens = exact sum');
  t.equal(ku.key.remainingTokens, budget - expectedTokens);
}

t.test('one process: 600 concurrent calls are billed exactly', async (t) => {
  const gw = await startGateway(t);
  await round(t, gw);
});

t.test('two cluster workers on one LMDB environment: billed exactly', async (t) => {
  const gw = await startGateway(t, { workers: 2 });
  await round(t, gw);
});
