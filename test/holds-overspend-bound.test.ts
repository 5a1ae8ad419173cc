/**
 * Holds bound the overspend of a key to the cost of one call at its output cap, whatever the
 * concurrency: calls are held in flight at the provider (mock.pause) until every call has been
 * decided, so each run sees the worst interleaving there is — all calls admitted at once.
 * Both kinds of key; 50- and 300-way; one process and two cluster workers.
 */
import t, { type Test } from 'tap';
import { eventually } from './helpers/client-gone.js';
import { allRecords, post, startGateway, usageOf, type Harness, type Reply } from './helpers/harness.js';

const BODY = { model: 'gpt-4o-mini', max_tokens: 20, messages: [{ role: 'user', content: 'Say hi.' }] };
const BYTES = Buffer.byteLength(JSON.stringify(BODY));
// gpt-4o-mini in the test catalogue: input 150 nUSD/token (cached 75), output 600.
const HOLD_NANO = BYTES * 150 + 20 * 600;
const HOLD_TOKENS = BYTES + 20;
// What the mock reports for each call: 11 input, 7 output tokens.
const COST_NANO = 11 * 150 + 7 * 600;
const COST_TOKENS = 18;

/** Sends `n` calls at once; they are all decided before the provider answers any of them. */
async function burst(t: Test, gw: Harness, path: string, key: string, n: number): Promise<Reply[]> {
  gw.mock.pause();
  const before = gw.mock.requests.length;
  let refused = 0;
  const calls = Array.from({ length: n }, () => post(`${gw.base}${path}`, key, BODY).then((r) => {
    if (r.status !== 200) refused++;
    return r;
  }));
  await eventually(async () => (refused + gw.mock.held === n ? true : undefined));
  t.equal(gw.mock.requests.length - before, gw.mock.held, 'only the held calls reached the provider');
  gw.mock.release();
  return Promise.all(calls);
}

async function bound(t: Test, gw: Harness, n: number): Promise<void> {
  // A credit key holding $0.000001: one call's hold takes all of it.
  const tiny = await gw.createKey(['--mode', 'credit', '--balance', '0.000001']);
  let replies = await burst(t, gw, '/v1/chat/completions', tiny.key, n);
  let ok = replies.filter((r) => r.status === 200).length;
  t.equal(ok, 1, `one of ${n} calls is answered`);
  t.ok(replies.every((r) => r.status === 200 || (r.status === 402 && r.json?.error?.code === 'insufficient_credit')), 'the others are 402 insufficient_credit');
  let usage = await usageOf(gw.base, tiny.key);
  t.equal(usage.key.balanceNanoUsd, 1000 - COST_NANO, 'balance = opening − the one call');
  t.ok(-usage.key.balanceNanoUsd <= HOLD_NANO, 'overspend within one call at its cap');
  t.equal(usage.key.heldNanoUsd, 0, 'nothing held afterwards');
  t.equal(usage.requests.length, 1, 'refused calls are not listed');

  // A credit key whose balance covers exactly 5.5 holds: 6 calls go out, the 7th finds nothing left.
  const opening = Math.round(5.5 * HOLD_NANO);
  const some = await gw.createKey(['--mode', 'credit', '--balance', (opening / 1e9).toFixed(9)]);
  replies = await burst(t, gw, '/v1/chat/completions', some.key, n);
  ok = replies.filter((r) => r.status === 200).length;
  t.equal(ok, 6, 'as many calls as there were funds left when each was held');
  usage = await usageOf(gw.base, some.key);
  t.equal(usage.key.balanceNanoUsd, opening - 6 * COST_NANO, 'charged exactly the answered calls');
  const records = await allRecords(gw.base, some.key, 100);
  t.equal(records.records.length, 6, 'one record per answered call');
  t.equal(records.records.reduce((s: number, r: any) => s + r.costNanoUsd, 0), opening - usage.key.balanceNanoUsd, 'records sum to the charge');

  // A token key with a 1-token budget.
  const one = await gw.createKey(['--mode', 'token', '--budget', '1']);
  replies = await burst(t, gw, '/token/v1/chat/completions', one.key, n);
  t.equal(replies.filter((r) => r.status === 200).length, 1, `one of ${n} token calls is answered`);
  t.ok(replies.every((r) => r.status === 200 || (r.status === 402 && r.json?.error?.code === 'token_budget_exhausted')), 'the others are 402 token_budget_exhausted');
  usage = await usageOf(gw.base, one.key);
  t.equal(usage.key.usedTokens, COST_TOKENS);
  t.ok(usage.key.usedTokens - 1 <= HOLD_TOKENS, 'overdraft within one call at its cap');
  t.equal(usage.key.heldTokens, 0);

  // A token key covering 3.5 holds: 4 calls go out.
  const budget = Math.round(3.5 * HOLD_TOKENS);
  const few = await gw.createKey(['--mode', 'token', '--budget', String(budget)]);
  replies = await burst(t, gw, '/token/v1/chat/completions', few.key, n);
  t.equal(replies.filter((r) => r.status === 200).length, 4);
  usage = await usageOf(gw.base, few.key);
  t.equal(usage.key.usedTokens, 4 * COST_TOKENS);
  t.equal(usage.key.heldTokens, 0);
}

for (const workers of [1, 2]) {
  for (const n of [50, 300]) {
    t.test(`${workers === 1 ? 'one process' : 'two workers'}, ${n} calls at once: overspend bounded by one call`, async (t) => {
      const gw = await startGateway(t, workers === 1 ? {} : { workers });
      await bound(t, gw, n);
    });
  }
}
