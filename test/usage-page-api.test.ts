/**
 * What the usage checker page reads from GET /usage/api: the split by model summed over the
 * days, "load more" continuing from its cursor while new calls arrive, the one-day window it
 * asks for when paging, and no answer (refusals included) ever stored by a cache.
 */
import t from 'tap';
import { post, startGateway, usageOf } from './helpers/harness.js';

interface Sum { requests: number; costNanoUsd: number; tokens: number }

/** Per model over all days, as the page adds it up for its split-by-model picture. */
function byModel(daily: any[]): Record<string, Sum> {
  const out: Record<string, Sum> = {};
  for (const d of daily) {
    for (const m of d.byModel) {
      const s = (out[m.model] ??= { requests: 0, costNanoUsd: 0, tokens: 0 });
      s.requests += m.requests;
      s.costNanoUsd += m.costNanoUsd;
      s.tokens += m.tokens;
    }
  }
  return out;
}

t.test('the split by model adds up to each model\'s own records', async (t) => {
  const gw = await startGateway(t);
  const credit = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const token = await gw.createKey(['--mode', 'token', '--budget', '100000']);
  const calls: Array<[string, Record<string, unknown>, Record<string, string>?]> = [
    ['/chat/completions', { model: 'gpt-4o-mini', messages: [], mock: { inputTokens: 30, outputTokens: 3 } }],
    ['/chat/completions', { model: 'gpt-4o-mini', messages: [], mock: { inputTokens: 10, outputTokens: 9 } }],
    ['/responses', { model: 'gpt-4o', input: 'x', mock: { inputTokens: 200, outputTokens: 20 } }],
    ['/messages', { model: 'claude-haiku-4-5', max_tokens: 8, messages: [], mock: { inputTokens: 4, outputTokens: 40 } }, { 'anthropic-version': '2023-06-01' }],
    ['/chat/completions', { model: 'gpt-4o', messages: [], mock: { status: 503 } }],
  ];
  for (const [path, body, headers] of calls) {
    await post(`${gw.base}/v1${path}`, credit.key, body, headers);
    await post(`${gw.base}/token/v1${path}`, token.key, body, headers);
  }

  for (const k of [credit, token]) {
    const u = await usageOf(gw.base, k.key, '?limit=500');
    const expected: Record<string, Sum> = {};
    for (const r of u.requests) {
      const s = (expected[r.model] ??= { requests: 0, costNanoUsd: 0, tokens: 0 });
      s.requests += 1;
      s.costNanoUsd += r.costNanoUsd ?? 0;
      s.tokens += r.tokensCharged; // tokens used, for both kinds of key
    }
    t.same(Object.keys(expected).sort(), ['claude-haiku-4-5', 'gpt-4o', 'gpt-4o-mini'], `${k.mode}: every model called is there`);
    t.same(byModel(u.daily), expected, `${k.mode}: requests, cost and tokens per model equal the records`);
    t.equal(byModel(u.daily)['gpt-4o']!.requests, 2, `${k.mode}: a provider error counts as a request of its model`);
    const total = u.daily.reduce((n: number, d: any) => n + (k.mode === 'credit' ? d.costNanoUsd : d.tokens), 0);
    if (k.mode === 'credit') t.equal(total, 1_000_000_000 - u.key.balanceNanoUsd, 'the days add up to what the balance lost');
    else t.equal(total, u.key.usedTokens, 'the days add up to the budget used');
    for (const d of u.daily) {
      const parts = d.byModel.reduce((s: Sum, m: any) => ({ requests: s.requests + m.requests, costNanoUsd: s.costNanoUsd + m.costNanoUsd, tokens: s.tokens + m.tokens }), { requests: 0, costNanoUsd: 0, tokens: 0 });
      t.same(parts, { requests: d.requests, costNanoUsd: d.costNanoUsd, tokens: d.tokens }, `${k.mode} ${d.day}: the models add up to the day`);
    }
  }
});

t.test('load more continues from its cursor, even after new calls, and pages with a one-day window', async (t) => {
  const gw = await startGateway(t);
  const k = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const call = (n: number) => post(`${gw.base}/v1/chat/completions`, k.key, { model: 'gpt-4o-mini', messages: [], mock: { inputTokens: 1, outputTokens: n } });
  for (let n = 1; n <= 5; n++) t.equal((await call(n)).status, 200);

  const first = await usageOf(gw.base, k.key, '?limit=3');
  t.same(first.requests.map((r: any) => r.outputTokens), [5, 4, 3], 'the first page: the newest three');
  t.type(first.nextBefore, 'string');

  // Calls made while the page is open do not shift what "load more" brings.
  for (let n = 6; n <= 7; n++) t.equal((await call(n)).status, 200);
  const more = await usageOf(gw.base, k.key, `?limit=3&days=1&before=${encodeURIComponent(first.nextBefore)}`);
  t.equal(more.daily.length, 1, 'days=1: only today');
  // What the one-day window must hold, from every record: the calls of the window's day (all of
  // them, unless midnight UTC fell between the calls and these reads).
  const all = (await usageOf(gw.base, k.key, '?limit=100')).requests;
  const onDay = (day: string) => all.filter((r: any) => r.at.slice(0, 10) === day);
  t.equal(all.length, 7);
  t.same(more.requests.map((r: any) => r.outputTokens), onDay(more.daily[0].day).map((r: any) => r.outputTokens).filter((n: number) => n <= 2), 'the older two, none twice');
  t.equal(more.nextBefore, null, 'nothing older');
  const fresh = await usageOf(gw.base, k.key, '?limit=3');
  t.same(fresh.requests.map((r: any) => r.outputTokens), [7, 6, 5], 'a new first page shows the new calls on top');
  t.same(more.daily[0], fresh.daily.at(-1), 'the one-day window is today, with today\'s totals');
  t.equal(fresh.daily.at(-1).requests, onDay(fresh.daily.at(-1).day).length, 'today\'s count: the records of today');
});

t.test('no answer of the usage API may be stored by a cache', async (t) => {
  const gw = await startGateway(t);
  const k = await gw.createKey(['--mode', 'token', '--budget', '10']);
  const get = (headers: Record<string, string>, query = '') => fetch(`${gw.base}/usage/api${query}`, { headers });
  const ok = await get({ authorization: `Bearer ${k.key}` });
  t.equal(ok.status, 200);
  t.equal(ok.headers.get('cache-control'), 'no-store', 'a key\'s usage');
  const bad = await get({ authorization: `Bearer ${k.key}` }, '?limit=0');
  t.equal(bad.status, 400);
  t.equal(bad.headers.get('cache-control'), 'no-store', 'a bad query');
  const unknown = await get({ authorization: `Bearer gw_live_${'ab'.repeat(16)}` });
  t.equal(unknown.status, 401);
  t.equal((await unknown.json()).error.code, 'invalid_api_key');
  t.equal(unknown.headers.get('cache-control'), 'no-store', 'the refusal of an unknown key');
  const missing = await get({});
  t.equal(missing.status, 401);
  t.equal(missing.headers.get('cache-control'), 'no-store', 'the refusal of a request without a key');
});
