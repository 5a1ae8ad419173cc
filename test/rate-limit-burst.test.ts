/**
 * A key with `--rpm 10` hit by 30 parallel calls: exactly 10 are admitted, forwarded, listed and
 * billed; the other 20 get 429 rate_limit_exceeded with a retry-after of 1..60 seconds and are
 * neither forwarded nor billed — also with two cluster workers counting in one LMDB window.
 * GET /models is a request like any other and counts towards the limit.
 */
import t, { type Test } from 'tap';
import { post, startGateway, usageOf, type Harness } from './helpers/harness.js';

const COST = 11 * 150 + 7 * 600; // the mock's default usage on gpt-4o-mini, nUSD

async function burst(t: Test, gw: Harness): Promise<void> {
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1', '--rpm', '10']);
  const results = await Promise.all(Array.from({ length: 30 }, (_, i) => {
    const stream = i % 2 === 1;
    return post(`${gw.base}/v1/chat/completions`, key, { model: 'gpt-4o-mini', messages: [], ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}) });
  }));
  const ok = results.filter((r) => r.status === 200);
  const limited = results.filter((r) => r.status === 429);
  t.equal(ok.length, 10, 'exactly 10 admitted');
  t.equal(limited.length, 20, 'the other 20 refused');
  for (const r of limited) {
    t.same(r.json.error, { message: r.json.error.message, type: 'rate_limit_error', code: 'rate_limit_exceeded', param: null });
    const retryAfter = Number(r.headers.get('retry-after'));
    t.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `retry-after ${r.headers.get('retry-after')} is 1..60`);
  }
  t.equal(gw.mock.requests.length, 10, 'the provider received exactly 10');
  const u = await usageOf(gw.base, key);
  t.equal(u.requests.length, 10, 'only 10 records listed');
  t.ok(u.requests.every((r: any) => r.status === 200 && r.error === null), 'all listed records are the admitted calls');
  t.equal(u.key.balanceNanoUsd, 1_000_000_000 - 10 * COST, 'none of the 429s billed');
  t.equal(u.key.rateLimitRpm, 10);

  const again = await post(`${gw.base}/v1/responses`, key, { model: 'gpt-4o-mini', input: 'hi' });
  t.equal(again.status, 429, 'the window stays full for any endpoint');
  t.equal(gw.mock.requests.length, 10);
}

t.test('one process: 30 parallel calls on an rpm-10 key admit exactly 10', async (t) => {
  const gw = await startGateway(t);
  await burst(t, gw);
});

t.test('two cluster workers share one window: still exactly 10', async (t) => {
  const gw = await startGateway(t, { workers: 2 });
  await burst(t, gw);
});

t.test('GET /models counts towards the limit (but is neither billed nor listed)', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1', '--rpm', '3']);
  for (let i = 0; i < 3; i++) {
    const res = await fetch(`${gw.base}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
    t.equal(res.status, 200, `models call ${i + 1} admitted`);
    await res.arrayBuffer();
  }
  const fourth = await fetch(`${gw.base}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
  t.equal(fourth.status, 429, 'a fourth models call is over the limit');
  t.equal(((await fourth.json()) as any).error.code, 'rate_limit_exceeded');
  t.ok(Number(fourth.headers.get('retry-after')) >= 1);
  const chat = await post(`${gw.base}/v1/chat/completions`, key, { model: 'gpt-4o-mini', messages: [] });
  t.equal(chat.status, 429, 'and so is an inference call: the models calls used the window');
  t.equal(gw.mock.requests.filter((r) => r.method === 'POST').length, 0, 'no inference forwarded');
  const u = await usageOf(gw.base, key);
  t.equal(u.requests.length, 0, 'models calls not listed');
  t.equal(u.key.balanceNanoUsd, 1_000_000_000, 'nor billed');
});

t.test('reading usage does not count towards the limit', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1', '--rpm', '1']);
  for (let i = 0; i < 3; i++) await usageOf(gw.base, key);
  const r = await post(`${gw.base}/v1/chat/completions`, key, { model: 'gpt-4o-mini', messages: [] });
  t.equal(r.status, 200);
  const second = await post(`${gw.base}/v1/chat/completions`, key, { model: 'gpt-4o-mini', messages: [] });
  t.equal(second.status, 429);
});
