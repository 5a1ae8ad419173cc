import t from 'tap';
import { eventually, postAndLeave } from './helpers/client-gone.js';
import { defaultConfig, startGateway, usageOf } from './helpers/harness.js';

// 200 clients leaving mid-stream at random points: every call ends up billed (exactly, from
// the provider's usage) or estimated (marked), none lost, and the balance is their exact sum.

t.test('200 clients leaving at random points are all billed or estimated', async (t) => {
  const gw = await startGateway(t, {
    // A short grace period so that some calls end estimated and some exact.
    config: (url) => ({ ...defaultConfig(url), limits: { clientGoneGraceMs: 300 } }),
  });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '100']);
  const paths = [
    ['/v1/chat/completions', { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }],
    ['/v1/responses', { model: 'gpt-4o-mini', input: 'hi' }],
    ['/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] }],
  ] as const;
  let seed = 42;
  const random = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const leaving = [];
  for (let i = 0; i < 200; i++) {
    const [path, body] = paths[i % 3]!;
    const mock = { inputTokens: 100 + i, outputTokens: 50 + i, chunks: 20, chunkDelayMs: 5 + random(30) };
    // Every stream is longer than 1.5 kB: each client leaves part-way through.
    leaving.push(postAndLeave(gw.base + path, key, { ...body, stream: true, mock }, 1 + random(1500)));
  }
  await Promise.all(leaving);
  const all = await eventually(async () => {
    const first = await usageOf(gw.base, key, '?limit=500');
    return first.requests.length === 200 ? first.requests : undefined;
  }, 60_000);
  const exact = all.filter((r: { estimated: boolean }) => !r.estimated);
  const estimated = all.filter((r: { estimated: boolean }) => r.estimated);
  t.equal(exact.length + estimated.length, 200);
  const odd = all.filter((r: { error: null; costNanoUsd: number }) => !(r.error === null && r.costNanoUsd > 0));
  t.same(odd, [], 'every record billed, none an error');
  // On a loaded machine the last events of a stream can arrive in one segment with the first
  // bytes the client waited for: such a client had the whole answer, and its record is exact.
  const completed = all.filter((r: { clientGone: boolean }) => !r.clientGone);
  t.ok(completed.every((r: { estimated: boolean }) => !r.estimated), 'a client that got the whole answer is billed exactly');
  t.ok(completed.length < 20, `nearly every client left part-way (${200 - completed.length} of 200)`);
  for (const r of exact) {
    t.equal(r.outputTokens - r.inputTokens, -50, 'exact records carry the provider usage');
  }
  t.comment(`${exact.length} billed from provider usage, ${estimated.length} estimated`);
  const spent = all.reduce((s: number, r: { costNanoUsd: number }) => s + r.costNanoUsd, 0);
  t.equal((await usageOf(gw.base, key)).key.balanceNanoUsd, 100e9 - spent, 'the balance is the exact sum');
});
