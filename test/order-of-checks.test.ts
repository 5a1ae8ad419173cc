/**
 * The gateway stops at the first failing check, in the spec's order:
 * path → credential present → key known → key usable (suspended, expired) → surface → funds →
 * rate → model readable → model allowed → model servable → forward.
 * One walk-through fixes one failure at a time; then each adjacent pair is shown with both
 * checks failing at once, and the earlier one wins.
 */
import t from 'tap';
import { post, startGateway, usageOf, type Harness } from './helpers/harness.js';

const CHAT = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };
/** 11 input + 7 output tokens of gpt-4o-mini (the mock's default) = 11×150 + 7×600 nUSD. */
const ONE_CALL_USD = '0.00000585';
const GARBAGE_KEY = 'gw_live_00000000000000000000000000000000';

type Asserts = Pick<typeof t, 'equal' | 'ok'>;

function ok(t: Asserts, r: { code: number | null; stderr: string }): void {
  t.equal(r.code, 0, `cli succeeded ${r.stderr}`);
}

function expectError(t: Asserts, r: { status: number; json: any }, status: number, code: string): void {
  t.equal(r.status, status, `status ${status}`);
  t.equal(r.json?.error?.code, code, `code ${code}`);
}

t.test('the eleven checks, one failure removed at a time', async (t) => {
  const gw = await startGateway(t);
  // A credit key whose single call (allowed by --rpm 1) spends its balance to exactly zero.
  const k = await gw.createKey(['--mode', 'credit', '--balance', ONE_CALL_USD, '--rpm', '1', '--models', 'gpt-4o-mini,switched-off']);
  const first = await post(`${gw.base}/v1/chat/completions`, k.key, CHAT);
  t.equal(first.status, 200, 'the setup call succeeds');
  t.equal((await usageOf(gw.base, k.key)).key.balanceUsd, '0.000000', 'balance is now zero');
  ok(t, await gw.cli(['keys', 'suspend', k.id]));
  ok(t, await gw.cli(['keys', 'extend', k.id, '--expires', '2020-01-01']));
  const forwardedBefore = gw.mock.requests.length;

  // Now everything fails: suspended, expired, zero balance, rate used up; the body is bad too.
  // 1. Path.
  expectError(t, await post(`${gw.base}/token/v1/chat/completion`, null, 'not json'), 404, 'unknown_endpoint');
  // 2. Credential present.
  expectError(t, await post(`${gw.base}/token/v1/chat/completions`, null, 'not json'), 401, 'missing_api_key');
  // 3. Key known.
  expectError(t, await post(`${gw.base}/token/v1/chat/completions`, GARBAGE_KEY, 'not json'), 401, 'invalid_api_key');
  // 4a. Suspended (the key is also expired, on the wrong surface, out of funds and over its rate).
  expectError(t, await post(`${gw.base}/token/v1/chat/completions`, k.key, 'not json'), 403, 'key_suspended');
  ok(t, await gw.cli(['keys', 'resume', k.id]));
  // 4b. Expired.
  expectError(t, await post(`${gw.base}/token/v1/chat/completions`, k.key, 'not json'), 403, 'key_expired');
  ok(t, await gw.cli(['keys', 'extend', k.id, '--expires', 'never']));
  // 5. Surface.
  expectError(t, await post(`${gw.base}/token/v1/chat/completions`, k.key, 'not json'), 401, 'invalid_api_key');
  // 6. Funds.
  expectError(t, await post(`${gw.base}/v1/chat/completions`, k.key, 'not json'), 402, 'insufficient_credit');
  ok(t, await gw.cli(['keys', 'topup', k.id, '--usd', '1']));
  // 7. Rate (the one request of this window was the setup call).
  const limited = await post(`${gw.base}/v1/chat/completions`, k.key, 'not json');
  expectError(t, limited, 429, 'rate_limit_exceeded');
  t.ok(limited.headers.get('retry-after'), 'retry-after is present');
  ok(t, await gw.cli(['keys', 'set', k.id, '--no-rpm']));
  // 8. Model readable.
  expectError(t, await post(`${gw.base}/v1/chat/completions`, k.key, 'not json'), 400, 'model_required');
  // 9. Model allowed.
  expectError(t, await post(`${gw.base}/v1/chat/completions`, k.key, { ...CHAT, model: 'gpt-4o' }), 403, 'model_not_allowed');
  // 10. Model servable (on the allowlist, but switched off centrally).
  expectError(t, await post(`${gw.base}/v1/chat/completions`, k.key, { ...CHAT, model: 'switched-off' }), 403, 'model_not_available');
  t.equal(gw.mock.requests.length, forwardedBefore, 'no refused call reached the provider');
  // 11. Forward: the provider's own status comes back (one no client retries, so it is sent once).
  const forwarded = await post(`${gw.base}/v1/chat/completions`, k.key, { ...CHAT, mock: { status: 422 } });
  t.equal(forwarded.status, 422, 'the provider answered');
  t.equal(gw.mock.requests.length, forwardedBefore + 1, 'exactly this call was forwarded');
  const done = await post(`${gw.base}/v1/chat/completions`, k.key, CHAT);
  t.equal(done.status, 200, 'with every check passing the call succeeds');
});

t.test('when two adjacent checks fail, the earlier one wins', async (t) => {
  const gw: Harness = await startGateway(t);
  const base = gw.base;
  // Keys are made up front, one command after another, against the running server's data
  // (parallel CLI writers are test/cli-concurrent-writes.test.ts's subject).
  const specs: string[][] = [
    ['--mode', 'credit', '--balance', '1'],
    ['--mode', 'token', '--budget', '1000'],
    ['--mode', 'credit', '--balance', '0'],
    ['--mode', 'credit', '--balance', '1', '--expires', '2020-01-01T00:00:00Z'],
    ['--mode', 'credit', '--balance', '1', '--expires', '2020-01-01'],
    ['--mode', 'token', '--budget', '1000', '--expires', '2020-01-01'],
    ['--mode', 'credit', '--balance', '0'],
    ['--mode', 'token', '--budget', '0'],
    // One call (the only one --rpm 1 allows) uses up the whole budget: 18 tokens > 1.
    ['--mode', 'token', '--budget', '1', '--rpm', '1'],
    ['--mode', 'credit', '--balance', ONE_CALL_USD, '--rpm', '1'],
    ['--mode', 'credit', '--balance', '1', '--rpm', '1'],
    ['--mode', 'credit', '--balance', '1', '--models', 'gpt-4o-mini'],
  ];
  const made = [];
  for (const spec of specs) made.push(await gw.createKey(spec));
  const [credit, token, suspendedBroke, suspendedExpired, expiredCredit, expiredToken, broke, spent, tokenRate, creditRate, limited, allowlisted] = made;
  ok(t, await gw.cli(['keys', 'suspend', suspendedBroke.id]));
  ok(t, await gw.cli(['keys', 'suspend', suspendedExpired.id]));

  t.test('1 before 2: unknown path without a key is 404', async (t) => {
    expectError(t, await post(`${base}/v1/chat/completion`, null, CHAT), 404, 'unknown_endpoint');
    expectError(t, await post(`${base}/v2/chat/completions`, null, CHAT), 404, 'unknown_endpoint');
    expectError(t, await post(`${base}/v1/chat/completion`, GARBAGE_KEY, CHAT), 404, 'unknown_endpoint');
  });

  t.test('2 before 3 and 8: no key is 401 missing_api_key even with a bad body', async (t) => {
    expectError(t, await post(`${base}/v1/chat/completions`, null, 'not json'), 401, 'missing_api_key');
    expectError(t, await post(`${base}/v1/chat/completions`, null, ''), 401, 'missing_api_key');
  });

  t.test('3 before 5: an unknown key on the token surface is invalid_api_key', async (t) => {
    expectError(t, await post(`${base}/token/v1/chat/completions`, GARBAGE_KEY, CHAT), 401, 'invalid_api_key');
    expectError(t, await post(`${base}/token/v1/chat/completions`, 'not-a-key', CHAT), 401, 'invalid_api_key');
  });

  t.test('4 before 6: a suspended key with zero balance is key_suspended', async (t) => {
    const state = (await usageOf(base, suspendedBroke.key)).key;
    t.same([state.status, state.balanceUsd], ['suspended', '0.000000'], 'suspended and out of credit');
    expectError(t, await post(`${base}/v1/chat/completions`, suspendedBroke.key, CHAT), 403, 'key_suspended');
  });

  t.test('4: suspended and expired at once is key_suspended', async (t) => {
    const state = (await usageOf(base, suspendedExpired.key)).key;
    t.equal(state.status, 'suspended');
    t.ok(Date.parse(state.expiresAt) < Date.now(), 'and past its expiry');
    expectError(t, await post(`${base}/v1/chat/completions`, suspendedExpired.key, CHAT), 403, 'key_suspended');
  });

  t.test('4 before 5: an expired key on the wrong surface is key_expired', async (t) => {
    expectError(t, await post(`${base}/token/v1/chat/completions`, expiredCredit.key, CHAT), 403, 'key_expired');
    expectError(t, await post(`${base}/v1/chat/completions`, expiredToken.key, CHAT), 403, 'key_expired');
  });

  t.test('5 before 6: the wrong surface with zero funds is invalid_api_key', async (t) => {
    expectError(t, await post(`${base}/token/v1/chat/completions`, broke.key, CHAT), 401, 'invalid_api_key');
    expectError(t, await post(`${base}/v1/chat/completions`, broke.key, CHAT), 402, 'insufficient_credit');
    expectError(t, await post(`${base}/v1/chat/completions`, spent.key, CHAT), 401, 'invalid_api_key');
    expectError(t, await post(`${base}/token/v1/chat/completions`, spent.key, CHAT), 402, 'token_budget_exhausted');
  });

  t.test('6 before 7: zero funds and over the rate is 402', async (t) => {
    t.equal((await post(`${base}/token/v1/chat/completions`, tokenRate.key, CHAT)).status, 200);
    t.equal((await post(`${base}/v1/chat/completions`, creditRate.key, CHAT)).status, 200);
    expectError(t, await post(`${base}/token/v1/chat/completions`, tokenRate.key, CHAT), 402, 'token_budget_exhausted');
    expectError(t, await post(`${base}/v1/chat/completions`, creditRate.key, CHAT), 402, 'insufficient_credit');
    // Funds restored: now the rate check is the one that fails, so both were failing before.
    const topups = await Promise.all([
      gw.cli(['keys', 'topup', tokenRate.id, '--tokens', '1000']),
      gw.cli(['keys', 'topup', creditRate.id, '--usd', '1']),
    ]);
    for (const r of topups) ok(t, r);
    expectError(t, await post(`${base}/token/v1/chat/completions`, tokenRate.key, CHAT), 429, 'rate_limit_exceeded');
    expectError(t, await post(`${base}/v1/chat/completions`, creditRate.key, CHAT), 429, 'rate_limit_exceeded');
  });

  t.test('7 before 8: over the rate with a bad body is 429 with retry-after', async (t) => {
    expectError(t, await post(`${base}/v1/chat/completions`, limited.key, 'not json'), 400, 'model_required');
    for (const body of ['not json', '', '{"messages":[]}']) {
      const r = await post(`${base}/v1/chat/completions`, limited.key, body);
      expectError(t, r, 429, 'rate_limit_exceeded');
      const retry = Number(r.headers.get('retry-after'));
      t.ok(Number.isInteger(retry) && retry >= 1 && retry <= 60, `retry-after ${r.headers.get('retry-after')} is 1..60 s`);
    }
  });

  t.test('8 before 9: an unreadable model on a key with an allowlist is model_required', async (t) => {
    for (const body of ['not json', '', '{"messages":[]}', '{"model":42}', '[]']) {
      expectError(t, await post(`${base}/v1/chat/completions`, allowlisted.key, body), 400, 'model_required');
    }
  });

  t.test('9 before 10: a model outside the allowlist is model_not_allowed even when unservable', async (t) => {
    for (const model of ['no-such-model', 'switched-off', 'claude-sonnet-4-5']) {
      expectError(t, await post(`${base}/v1/chat/completions`, allowlisted.key, { ...CHAT, model }), 403, 'model_not_allowed');
      // Without an allowlist the same model fails at the catalogue instead.
      expectError(t, await post(`${base}/v1/chat/completions`, credit.key, { ...CHAT, model }), 403, 'model_not_available');
    }
  });

  t.test('10 before 11: an unservable model never reaches the provider', async (t) => {
    const before = gw.mock.requests.length;
    // unknown id, switched off centrally, or not served on this endpoint
    for (const model of ['no-such-model', 'switched-off', 'claude-sonnet-4-5']) {
      expectError(t, await post(`${base}/v1/chat/completions`, credit.key, { ...CHAT, model }), 403, 'model_not_available');
      expectError(t, await post(`${base}/token/v1/chat/completions`, token.key, { ...CHAT, model }), 403, 'model_not_available');
    }
    expectError(t, await post(`${base}/v1/responses`, credit.key, { model: 'chat-only', input: 'hi' }), 403, 'model_not_available');
    t.equal(gw.mock.requests.length, before, 'the provider received nothing');
    t.same((await usageOf(base, credit.key)).requests, [], 'nothing is listed');
  });
});

t.test("previous_response_not_found: after the model checks, after funds and rate, before anything is held", async (t) => {
  const gw = await startGateway(t);
  const owner = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const made = await post(`${gw.base}/v1/responses`, owner.key, { model: 'gpt-4o-mini', input: 'hi' });
  t.equal(made.status, 200);
  const foreign = made.json.id as string;
  const k = await gw.createKey(['--mode', 'credit', '--balance', '1', '--models', 'gpt-4o-mini,gpt-4o,chat-only']);
  const broke = await gw.createKey(['--mode', 'credit', '--balance', '0']);
  const limited = await gw.createKey(['--mode', 'credit', '--balance', '1', '--rpm', '1']);
  const url = `${gw.base}/v1/responses`;
  const continuing = (model: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({ model, input: 'x', previous_response_id: foreign, ...extra });
  const forwarded = gw.mock.requests.length;

  expectError(t, await post(url, broke.key, continuing('gpt-4o-mini')), 402, 'insufficient_credit');
  t.equal((await post(url, limited.key, { model: 'gpt-4o-mini', input: 'x' })).status, 200, 'the one call of the window');
  expectError(t, await post(url, limited.key, continuing('gpt-4o-mini')), 429, 'rate_limit_exceeded');
  const forwardedBefore = gw.mock.requests.length;
  expectError(t, await post(url, k.key, `{"input":"x","previous_response_id":"${foreign}"}`), 400, 'model_required');
  expectError(t, await post(url, k.key, continuing('claude-haiku-4-5')), 403, 'model_not_allowed');
  expectError(t, await post(url, k.key, continuing('chat-only')), 403, 'model_not_available');
  ok(t, await gw.cli(['models', 'disable', 'gpt-4o']));
  expectError(t, await post(url, k.key, continuing('gpt-4o')), 403, 'model_not_available');
  ok(t, await gw.cli(['models', 'enable', 'gpt-4o']));
  // gpt-4o-mini has no price for the flex tier here.
  expectError(t, await post(url, k.key, continuing('gpt-4o-mini', { service_tier: 'flex' })), 400, 'unpriced_option');
  const refused = await post(url, k.key, continuing('gpt-4o'));
  expectError(t, refused, 400, 'previous_response_not_found');
  t.equal(refused.json.error.param, 'previous_response_id');
  t.equal(gw.mock.requests.length, forwardedBefore, 'no refused call reached the provider');
  const u = await usageOf(gw.base, k.key);
  t.same([u.requests.length, u.key.balanceUsd, u.key.heldNanoUsd], [0, '1.000000', 0], 'nothing listed, billed or held');
  t.equal(forwardedBefore, forwarded + 1, 'only the rate-limited key\'s first call went out');
});
