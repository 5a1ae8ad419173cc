/**
 * GET /usage/api: the key's state and its requests (newest first, paged), authenticated like the
 * API; suspended and expired keys may still read; daily totals for the last 30 UTC days.
 */
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { formatUsd } from '../src/money.js';
import { post, startGateway, usageOf, utcDay } from './helpers/harness.js';

async function usageRaw(base: string, headers: Record<string, string>, query = ''): Promise<{ status: number; headers: Headers; json: any }> {
  const res = await fetch(`${base}/usage/api${query}`, { headers });
  return { status: res.status, headers: res.headers, json: await res.json() };
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

t.test('a credit key: its fields and its requests, newest first', async (t) => {
  const gw = await startGateway(t);
  const k = await gw.createKey(['--mode', 'credit', '--balance', '5', '--models', 'gpt-4o-mini,claude-sonnet-4-5', '--rpm', '100', '--expires', '2031-01-01']);

  const r1 = await post(`${gw.base}/v1/chat/completions`, k.key, { model: 'gpt-4o-mini', messages: [], mock: { inputTokens: 12, outputTokens: 34 } });
  t.equal(r1.status, 200);
  const r2 = await post(`${gw.base}/v1/messages`, k.key, { model: 'claude-sonnet-4-5', max_tokens: 8, messages: [], stream: true, mock: { inputTokens: 5, outputTokens: 3 } });
  t.equal(r2.status, 200);
  const r3 = await post(`${gw.base}/v1/chat/completions`, k.key, { model: 'gpt-4o-mini', messages: [], mock: { status: 529 } });
  t.equal(r3.status, 529, 'a provider error is passed through');

  const res = await usageRaw(gw.base, { authorization: `Bearer ${k.key}` });
  t.equal(res.status, 200);
  t.equal(res.headers.get('cache-control'), 'no-store');
  t.match(res.headers.get('x-request-id'), /\S/, 'carries x-request-id');
  t.match(res.headers.get('content-type'), /^application\/json/);
  const u = res.json;
  const cost1 = 12 * 150 + 34 * 600;
  const cost2 = 5 * 3000 + 3 * 15000;
  t.match(u.key, {
    prefix: k.prefix,
    mode: 'credit',
    status: 'active',
    expiresAt: '2031-01-01T23:59:59.999Z',
    models: ['gpt-4o-mini', 'claude-sonnet-4-5'],
    rateLimitRpm: 100,
    balanceUsd: formatUsd(5_000_000_000 - cost1 - cost2),
  });
  t.equal(u.key.balanceUsd, '4.999918', '5 USD − 82200 nUSD, shown to six decimals');
  t.notOk('budgetTokens' in u.key || 'usedTokens' in u.key || 'remainingTokens' in u.key, 'no token fields on a credit key');
  t.notOk(JSON.stringify(u).includes(k.key), 'the key itself is never echoed');

  t.equal(u.requests.length, 3);
  const [err, msg, chat] = u.requests;
  t.match(chat, {
    endpoint: 'chat', model: 'gpt-4o-mini', stream: false, status: 200,
    inputTokens: 12, outputTokens: 34, costUsd: formatUsd(cost1), tokensCharged: 46, error: null, estimated: false,
  }, 'oldest: the chat call');
  t.equal(chat.costUsd, '0.000022');
  t.match(msg, {
    endpoint: 'messages', model: 'claude-sonnet-4-5', stream: true, status: 200,
    inputTokens: 5, outputTokens: 3, costUsd: formatUsd(cost2), tokensCharged: 8, error: null, estimated: false,
  }, 'then the streamed messages call');
  t.match(err, {
    endpoint: 'chat', model: 'gpt-4o-mini', stream: false, status: 529,
    inputTokens: 0, outputTokens: 0, costUsd: '0.000000', tokensCharged: 0, error: 'upstream_status_529', estimated: false,
  }, 'newest: the provider error, at zero cost');
  for (const r of u.requests) t.match(r.at, ISO);
  t.ok(Date.parse(err.at) >= Date.parse(msg.at) && Date.parse(msg.at) >= Date.parse(chat.at), 'newest first');

  // x-api-key is a carrier here too.
  const viaHeader = await usageRaw(gw.base, { 'x-api-key': k.key });
  t.equal(viaHeader.status, 200);
  t.equal(viaHeader.json.key.prefix, k.prefix);
});

t.test('a token key shows budgetTokens, usedTokens and remainingTokens instead of a balance', async (t) => {
  const gw = await startGateway(t);
  const k = await gw.createKey(['--mode', 'token', '--budget', '1000']);
  const r = await post(`${gw.base}/token/v1/responses`, k.key, { model: 'gpt-4o-mini', input: 'hi', mock: { inputTokens: 40, outputTokens: 60 } });
  t.equal(r.status, 200);
  const u = await usageOf(gw.base, k.key);
  t.match(u.key, {
    prefix: k.prefix, mode: 'token', status: 'active', expiresAt: null, models: null, rateLimitRpm: null,
    budgetTokens: 1000, usedTokens: 100, remainingTokens: 900,
  });
  t.notOk('balanceUsd' in u.key, 'no balance on a token key');
  t.match(u.requests[0], {
    endpoint: 'responses', model: 'gpt-4o-mini', stream: false, status: 200,
    inputTokens: 40, outputTokens: 60, tokensCharged: 100, costUsd: null, error: null, estimated: false,
  });
});

t.test('suspended and expired keys can still read their usage; their API calls fail', async (t) => {
  const gw = await startGateway(t);
  const s = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  t.equal((await post(`${gw.base}/v1/chat/completions`, s.key, { model: 'gpt-4o-mini', messages: [] })).status, 200);
  t.equal((await gw.cli(['keys', 'suspend', s.id])).code, 0);
  const call = await post(`${gw.base}/v1/chat/completions`, s.key, { model: 'gpt-4o-mini', messages: [] });
  t.equal(call.status, 403);
  t.equal(call.json.error.code, 'key_suspended');
  const su = await usageRaw(gw.base, { authorization: `Bearer ${s.key}` });
  t.equal(su.status, 200, 'a suspended key reads its usage');
  t.equal(su.json.key.status, 'suspended');
  t.equal(su.json.requests.length, 1, 'its earlier call is listed; the refused one is not');

  const e = await gw.createKey(['--mode', 'token', '--budget', '100', '--expires', '2020-06-30']);
  const ecall = await post(`${gw.base}/token/v1/chat/completions`, e.key, { model: 'gpt-4o-mini', messages: [] });
  t.equal(ecall.status, 403);
  t.equal(ecall.json.error.code, 'key_expired');
  const eu = await usageRaw(gw.base, { authorization: `Bearer ${e.key}` });
  t.equal(eu.status, 200, 'an expired key reads its usage');
  t.equal(eu.json.key.expiresAt, '2020-06-30T23:59:59.999Z');
  t.equal(eu.json.key.status, 'active');
  t.same(eu.json.requests, []);
});

t.test('unknown, malformed and missing keys are refused like the API refuses them', async (t) => {
  const gw = await startGateway(t);
  const unknown = await usageRaw(gw.base, { authorization: `Bearer gw_live_${randomBytes(16).toString('hex')}` });
  t.equal(unknown.status, 401);
  t.same(unknown.json.error, { message: unknown.json.error.message, type: 'invalid_request_error', code: 'invalid_api_key', param: null });
  const k = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const truncated = await usageRaw(gw.base, { authorization: `Bearer ${k.key.slice(0, 39)}` });
  t.equal(truncated.status, 401);
  t.equal(truncated.json.error.code, 'invalid_api_key', 'a truncated key is an unknown key');
  const none = await usageRaw(gw.base, {});
  t.equal(none.status, 401);
  t.same(none.json.error, { message: none.json.error.message, type: 'invalid_request_error', code: 'missing_api_key', param: null });
});

t.test('paging: limit and the nextBefore cursor; bad paging parameters are 400', async (t) => {
  const gw = await startGateway(t);
  const k = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  for (let i = 0; i < 7; i++) {
    const r = await post(`${gw.base}/v1/chat/completions`, k.key, { model: 'gpt-4o-mini', messages: [], mock: { inputTokens: 1, outputTokens: i + 1 } });
    t.equal(r.status, 200);
  }
  const everything = await usageOf(gw.base, k.key);
  t.equal(everything.requests.length, 7);
  t.equal(everything.nextBefore, null, 'no more pages');
  const exact = await usageOf(gw.base, k.key, '?limit=7');
  t.equal(exact.requests.length, 7);
  t.equal(exact.nextBefore, null, 'a page that ends exactly at the oldest record has no cursor');
  t.same(everything.requests.map((r: any) => r.outputTokens), [7, 6, 5, 4, 3, 2, 1], 'newest first');

  const seen: number[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const page: any = await usageOf(gw.base, k.key, `?limit=3${cursor === null ? '' : `&before=${encodeURIComponent(cursor)}`}`);
    pages++;
    t.ok(page.requests.length <= 3);
    seen.push(...page.requests.map((r: any) => r.outputTokens));
    cursor = page.nextBefore;
  } while (cursor !== null && pages < 10);
  t.same(seen, [7, 6, 5, 4, 3, 2, 1], 'pages of 3 cover every record once, in order');
  t.equal(pages, 3);

  const one = await usageOf(gw.base, k.key, '?limit=1');
  t.equal(one.requests.length, 1);
  t.type(one.nextBefore, 'string');

  for (const q of ['?limit=0', '?limit=abc', '?limit=1.5', '?limit=-1', '?limit=100000', '?before=@@@', '?days=0']) {
    const bad = await usageRaw(gw.base, { authorization: `Bearer ${k.key}` }, q);
    t.equal(bad.status, 400, `${q}: 400`);
    t.equal(bad.json.error.type, 'invalid_request_error');
    t.equal(bad.json.error.code, 'invalid_query');
    t.match(bad.headers.get('x-request-id'), /\S/, `${q}: carries x-request-id`);
  }
});

t.test('daily: 30 UTC days ending today, today\'s totals equal the sum of today\'s records', async (t) => {
  const gw = await startGateway(t);
  const credit = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const token = await gw.createKey(['--mode', 'token', '--budget', '100000']);
  const bodies = [
    ['/chat/completions', { model: 'gpt-4o-mini', messages: [], mock: { inputTokens: 100, outputTokens: 10, cachedTokens: 20 } }],
    ['/responses', { model: 'gpt-4o-mini', input: 'x', stream: true, mock: { inputTokens: 7, outputTokens: 70 } }],
    ['/messages', { model: 'claude-sonnet-4-5', max_tokens: 8, messages: [], mock: { inputTokens: 3, outputTokens: 4, cacheWriteTokens: 5 } }],
    ['/chat/completions', { model: 'gpt-4o-mini', messages: [], mock: { status: 500 } }],
  ] as const;
  for (const [path, body] of bodies) {
    await post(`${gw.base}/v1${path}`, credit.key, body);
    await post(`${gw.base}/token/v1${path}`, token.key, body);
  }

  for (const [k, field] of [[credit.key, 'costNanoUsd'], [token.key, 'tokensCharged']] as const) {
    const u = await usageOf(gw.base, k);
    t.equal(u.daily.length, 30, '30 entries');
    const today = u.daily.at(-1).day;
    const serverNow = new Date();
    t.ok([utcDay(serverNow.getTime()), utcDay(serverNow.getTime() - 86_400_000)].includes(today), 'the last entry is today (UTC)');
    const days = u.daily.map((d: any) => d.day);
    for (let i = 1; i < days.length; i++) t.equal(Date.parse(days[i]) - Date.parse(days[i - 1]), 86_400_000, `consecutive days ${days[i - 1]} → ${days[i]}`);
    const todays = u.requests.filter((r: any) => r.at.slice(0, 10) === today);
    const d = u.daily.at(-1);
    t.equal(d.requests, todays.length, 'requests today = records today (errors included)');
    if (field === 'costNanoUsd') {
      const sum = todays.reduce((s: number, r: any) => s + r.costNanoUsd, 0);
      t.equal(d.costNanoUsd, sum, 'cost today = sum of today\'s records');
      t.equal(d.costUsd, formatUsd(sum));
      // Over every record, not today's alone: a run across midnight UTC splits them over two days.
      t.equal(u.requests.reduce((s: number, r: any) => s + r.costNanoUsd, 0), 1_000_000_000 - u.key.balanceNanoUsd, 'every record\'s cost = what the balance lost');
    } else {
      const sum = todays.reduce((s: number, r: any) => s + r.tokensCharged, 0);
      t.equal(d.tokens, sum, 'tokens today = sum of today\'s records');
      t.equal(u.requests.reduce((s: number, r: any) => s + r.tokensCharged, 0), u.key.usedTokens, 'every record\'s tokens = the tokens used');
    }
    t.ok(u.daily.slice(0, -1).every((x: any) => x.requests === 0 || x.day !== today), 'earlier days hold nothing of today');
  }
});
