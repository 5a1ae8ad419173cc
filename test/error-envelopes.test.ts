/**
 * Every one of the twelve gateway-raised errors: exact status, `error.type`, `error.code`,
 * `error.param: null`, a human message that never contains the key, `content-type:
 * application/json`, and `retry-after` on the gateway's 429. Refused calls are neither billed
 * nor listed; an unreachable provider (502) is listed as an error at zero cost.
 */
import t from 'tap';
import { defaultConfig, post, startGateway, usageOf } from './helpers/harness.js';
import { unlistenedPort } from './helpers/ports.js';

/** The spec's table of gateway errors. */
const SPEC: Record<string, [number, string]> = {
  missing_api_key: [401, 'invalid_request_error'],
  invalid_api_key: [401, 'invalid_request_error'],
  key_suspended: [403, 'permission_error'],
  key_expired: [403, 'permission_error'],
  model_not_allowed: [403, 'permission_error'],
  model_not_available: [403, 'permission_error'],
  model_required: [400, 'invalid_request_error'],
  insufficient_credit: [402, 'insufficient_quota'],
  token_budget_exhausted: [402, 'insufficient_quota'],
  rate_limit_exceeded: [429, 'rate_limit_error'],
  unknown_endpoint: [404, 'invalid_request_error'],
  upstream_unavailable: [502, 'api_error'],
};

const CHAT = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };

type Reply = Awaited<ReturnType<typeof post>>;
type Asserts = Pick<typeof t, 'equal' | 'ok' | 'notOk' | 'same' | 'match'>;

/** Checks one gateway error response against the spec; `key` is the credential that was sent. */
function checkEnvelope(t: Asserts, r: Reply, code: string, key: string | null): void {
  const [status, type] = SPEC[code]!;
  t.equal(r.status, status, `${code}: status ${status}`);
  t.match(r.headers.get('content-type') ?? '', /^application\/json\b/, `${code}: content-type is JSON`);
  t.ok(r.json && typeof r.json.error === 'object', `${code}: body is an error envelope`);
  const e = r.json?.error ?? {};
  t.equal(e.code, code, `${code}: error.code`);
  t.equal(e.type, type, `${code}: error.type`);
  t.ok('param' in e && e.param === null, `${code}: error.param is null`);
  t.ok(typeof e.message === 'string' && e.message.trim().length > 0, `${code}: non-empty message`);
  if (key !== null) {
    t.notOk(r.text.includes(key), `${code}: body does not contain the key`);
    t.notOk(r.text.includes(key.slice(8)), `${code}: body does not contain the key's hex part`);
    t.notOk(r.text.includes(key.slice(-8)), `${code}: body does not contain the key's tail`);
  }
  if (code === 'rate_limit_exceeded') {
    const retry = r.headers.get('retry-after');
    t.match(retry ?? '', /^\d+$/, `${code}: retry-after is whole seconds`);
    t.ok(Number(retry) >= 1 && Number(retry) <= 60, `${code}: retry-after ${retry} is within the 60 s window`);
  }
}

t.test('the eleven errors a reachable provider leaves to the gateway', async (t) => {
  const gw = await startGateway(t);
  const b = gw.base;
  const [credit, suspended, expired, broke, spent, limited, plain] = await Promise.all([
    gw.createKey(['--mode', 'credit', '--balance', '1', '--models', 'gpt-4o-mini,switched-off']),
    gw.createKey(['--mode', 'credit', '--balance', '1']),
    gw.createKey(['--mode', 'credit', '--balance', '1', '--expires', '2020-01-01']),
    gw.createKey(['--mode', 'credit', '--balance', '0']),
    gw.createKey(['--mode', 'token', '--budget', '0']),
    gw.createKey(['--mode', 'credit', '--balance', '1', '--rpm', '1']),
    gw.createKey(['--mode', 'credit', '--balance', '1']),
  ]);
  t.equal((await gw.cli(['keys', 'suspend', suspended.id])).code, 0);
  const unknown = 'gw_live_0123456789abcdef0123456789abcdef';
  const before = gw.mock.requests.length;

  checkEnvelope(t, await post(`${b}/v1/chat/completions`, null, CHAT), 'missing_api_key', null);
  checkEnvelope(t, await post(`${b}/v1/chat/completions`, unknown, CHAT), 'invalid_api_key', unknown);
  checkEnvelope(t, await post(`${b}/token/v1/chat/completions`, credit.key, CHAT), 'invalid_api_key', credit.key);
  checkEnvelope(t, await post(`${b}/v1/chat/completions`, suspended.key, CHAT), 'key_suspended', suspended.key);
  checkEnvelope(t, await post(`${b}/v1/chat/completions`, expired.key, CHAT), 'key_expired', expired.key);
  checkEnvelope(t, await post(`${b}/v1/chat/completions`, credit.key, { ...CHAT, model: 'gpt-4o' }), 'model_not_allowed', credit.key);
  checkEnvelope(t, await post(`${b}/v1/chat/completions`, credit.key, { ...CHAT, model: 'switched-off' }), 'model_not_available', credit.key);
  checkEnvelope(t, await post(`${b}/v1/chat/completions`, credit.key, '{"messages":'), 'model_required', credit.key);
  checkEnvelope(t, await post(`${b}/v1/chat/completions`, broke.key, CHAT), 'insufficient_credit', broke.key);
  checkEnvelope(t, await post(`${b}/token/v1/chat/completions`, spent.key, CHAT), 'token_budget_exhausted', spent.key);
  t.equal((await post(`${b}/v1/chat/completions`, limited.key, 'not json')).status, 400, 'the one request of the window');
  checkEnvelope(t, await post(`${b}/v1/chat/completions`, limited.key, CHAT), 'rate_limit_exceeded', limited.key);
  checkEnvelope(t, await post(`${b}/v1/chat/completion`, credit.key, CHAT), 'unknown_endpoint', credit.key);
  checkEnvelope(t, await post(`${b}/`, null, CHAT), 'unknown_endpoint', null);

  // The same code always carries the same body, whichever key or path caused it.
  const a = await post(`${b}/v1/chat/completions`, unknown, CHAT);
  const c = await post(`${b}/token/v1/chat/completions`, credit.key, CHAT);
  t.equal(a.text, c.text, 'unknown key and wrong surface give the same body');
  const gone = await post(`${b}/v1/chat/completions`, plain.key, { ...CHAT, model: 'no-such-model' });
  const switchedOff = await post(`${b}/v1/chat/completions`, credit.key, { ...CHAT, model: 'switched-off' });
  t.equal(gone.text, switchedOff.text, 'unknown model and switched-off model give the same body');

  t.equal(gw.mock.requests.length, before, 'no refused call reached the provider');
});

t.test('upstream_unavailable: listed at zero cost, while refused calls are not listed', async (t) => {
  const port = await unlistenedPort();
  const gw = await startGateway(t, {
    config: (mockUrl) => {
      const config = defaultConfig(mockUrl) as { providers: Record<string, Record<string, unknown>> };
      config.providers.openai!.baseUrl = `http://127.0.0.1:${port}/v1`;
      return config;
    },
  });
  const b = gw.base;
  const [k, broke, paused] = await Promise.all([
    gw.createKey(['--mode', 'credit', '--balance', '1', '--models', 'gpt-4o-mini,switched-off']),
    gw.createKey(['--mode', 'credit', '--balance', '0']),
    gw.createKey(['--mode', 'credit', '--balance', '1']),
  ]);

  // Refused by the gateway: 404, 401 (wrong surface), 403, 403, 400, then 429.
  t.equal((await post(`${b}/v1/chat/completion`, k.key, CHAT)).status, 404);
  t.equal((await post(`${b}/token/v1/chat/completions`, k.key, CHAT)).status, 401);
  t.equal((await post(`${b}/v1/chat/completions`, k.key, { ...CHAT, model: 'gpt-4o' })).status, 403);
  t.equal((await post(`${b}/v1/chat/completions`, k.key, { ...CHAT, model: 'switched-off' })).status, 403);

  const r = await post(`${b}/v1/chat/completions`, k.key, CHAT);
  checkEnvelope(t, r, 'upstream_unavailable', k.key);
  const streamed = await post(`${b}/v1/chat/completions`, k.key, { ...CHAT, stream: true });
  checkEnvelope(t, streamed, 'upstream_unavailable', k.key);

  t.equal((await gw.cli(['keys', 'set', k.id, '--rpm', '1'])).code, 0);
  t.equal((await post(`${b}/v1/chat/completions`, k.key, 'not json')).status, 400);
  t.equal((await post(`${b}/v1/chat/completions`, k.key, CHAT)).status, 429);

  const usage = await usageOf(b, k.key);
  t.equal(usage.key.balanceUsd, '1.000000', 'nothing billed');
  t.equal(usage.requests.length, 2, 'only the two forwarded calls are listed');
  for (const rec of usage.requests) {
    t.equal(rec.error, 'upstream_unavailable');
    t.equal(rec.costUsd, '0.000000', 'at zero cost');
    t.equal(rec.model, 'gpt-4o-mini');
    t.equal(rec.tokensCharged, 0);
  }
  t.same(usage.requests.map((x: { stream: boolean }) => x.stream), [true, false], 'newest first, with the stream flag asked for');

  // A zero-balance key (402) and a suspended key (403) have nothing listed either.
  t.equal((await post(`${b}/v1/chat/completions`, broke.key, CHAT)).status, 402);
  t.same((await usageOf(b, broke.key)).requests, []);
  t.equal((await gw.cli(['keys', 'suspend', paused.id])).code, 0);
  t.equal((await post(`${b}/v1/chat/completions`, paused.key, CHAT)).status, 403);
  t.same((await usageOf(b, paused.key)).requests, []);
});
