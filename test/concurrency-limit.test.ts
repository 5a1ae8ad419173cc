/**
 * Per-key concurrency (`--concurrency N`): at most N calls of a key in flight at once, exact
 * across cluster workers. A call over the limit is refused before its body is read, as 429
 * `concurrency_limit_exceeded` with `retry-after: 1`, nothing forwarded, billed or listed; it
 * is checked right after the rate limit and takes no count in the rate window.
 */
import t, { type Test } from 'tap';
import { eventually } from './helpers/client-gone.js';
import { post, startGateway, usageOf, type Harness, type Reply } from './helpers/harness.js';

const BODY = { model: 'gpt-4o-mini', max_tokens: 20, messages: [] };

async function round(t: Test, gw: Harness): Promise<void> {
  const key = await gw.createKey(['--mode', 'credit', '--balance', '5', '--concurrency', '3']);
  t.equal((await usageOf(gw.base, key.key)).key.concurrency, 3, 'the usage API shows the limit');

  // Ten calls at once while the provider holds every call it gets: three go out.
  gw.mock.pause();
  const refused: Reply[] = [];
  const calls = Array.from({ length: 10 }, () => post(`${gw.base}/v1/chat/completions`, key.key, BODY).then((r) => {
    if (r.status !== 200) refused.push(r);
    return r;
  }));
  await eventually(async () => (refused.length === 7 && gw.mock.held === 3 ? true : undefined));
  t.equal(gw.mock.held, 3, 'exactly 3 calls reached the provider');
  for (const r of refused) {
    t.equal(r.status, 429);
    t.equal(r.json?.error?.code, 'concurrency_limit_exceeded');
    t.equal(r.json?.error?.type, 'rate_limit_error');
    t.equal(r.headers.get('retry-after'), '1');
  }
  // A GET /models call is a call in flight too: refused while three are out.
  const models = await fetch(`${gw.base}/v1/models`, { headers: { authorization: `Bearer ${key.key}` } });
  t.equal(models.status, 429, 'GET /models is refused too while the key is at its limit');
  await models.text();

  gw.mock.release();
  const replies = await Promise.all(calls);
  const admitted = replies.filter((r) => r.status !== 429);
  t.equal(admitted.length, 3);
  const usage = await usageOf(gw.base, key.key);
  t.equal(usage.requests.filter((r: any) => r.status === 200).length, admitted.filter((r) => r.status === 200).length, 'only the admitted calls that were forwarded are listed');
  t.equal(usage.requests.length, admitted.filter((r) => r.status === 200).length, 'nothing refused is listed');

  // The slots are free again: a refusal after step 7 (400) frees its slot at once too.
  const bad: string[] = [];
  for (let i = 0; i < 6; i++) bad.push((await post(`${gw.base}/v1/chat/completions`, key.key, '')).json?.error?.code);
  t.same(bad, Array(6).fill('model_required'), 'six calls refused at step 8, one after another: each freed its slot');
  const again = await Promise.all(Array.from({ length: 3 }, () => post(`${gw.base}/v1/chat/completions`, key.key, BODY)));
  t.same(again.map((r) => r.status), [200, 200, 200], 'three calls at once fit again');

  // The issuer lifts the limit: obeyed on the next request.
  t.equal((await gw.cli(['keys', 'set', key.id, '--no-concurrency'])).code, 0);
  gw.mock.pause();
  const many = Array.from({ length: 8 }, () => post(`${gw.base}/v1/chat/completions`, key.key, BODY));
  await eventually(async () => (gw.mock.held === 8 ? true : undefined));
  gw.mock.release();
  t.same((await Promise.all(many)).map((r) => r.status), Array(8).fill(200), 'no limit: all 8 in flight at once');
  t.equal((await usageOf(gw.base, key.key)).key.concurrency, null);
}

t.test('one process', async (t) => {
  await round(t, await startGateway(t));
});

t.test('two cluster workers: the limit is the key\'s, not each worker\'s', async (t) => {
  // Keys made and changed through the admin API (remote command line) this time.
  await round(t, await startGateway(t, { workers: 2, cliMode: 'remote' }));
});

t.test('checked after the rate limit; a call refused for concurrency takes no rate count', async (t) => {
  const gw = await startGateway(t);
  const key = await gw.createKey(['--mode', 'credit', '--balance', '5', '--rpm', '3', '--concurrency', '1']);
  gw.mock.pause();
  const first = post(`${gw.base}/v1/chat/completions`, key.key, BODY);
  await eventually(async () => (gw.mock.held === 1 ? true : undefined));
  const second = await post(`${gw.base}/v1/chat/completions`, key.key, BODY);
  const third = await post(`${gw.base}/v1/chat/completions`, key.key, BODY);
  t.same([second.json?.error?.code, third.json?.error?.code], ['concurrency_limit_exceeded', 'concurrency_limit_exceeded']);
  gw.mock.release();
  t.equal((await first).status, 200);
  // The window holds 1 of 3 (the two refusals took none): B is admitted, C too (held in
  // flight), and D, over both limits, is told about the rate limit (step 7 comes first).
  t.equal((await post(`${gw.base}/v1/chat/completions`, key.key, BODY)).status, 200, 'B');
  gw.mock.pause();
  const c = post(`${gw.base}/v1/chat/completions`, key.key, BODY);
  await eventually(async () => (gw.mock.held === 1 ? true : undefined));
  const d = await post(`${gw.base}/v1/chat/completions`, key.key, BODY);
  t.equal(d.json?.error?.code, 'rate_limit_exceeded', 'over both limits: rate_limit_exceeded');
  gw.mock.release();
  t.equal((await c).status, 200, 'C');
});
