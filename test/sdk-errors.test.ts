/**
 * The gateway's errors, and the provider's passed-through ones, surface as the official SDKs'
 * typed errors: 401 AuthenticationError, 403 PermissionDeniedError, 402 APIError, 429
 * RateLimitError, 404 NotFoundError, 400 BadRequestError, 502 InternalServerError, each with
 * the envelope's code and type where the SDK exposes them, and never with the key in the
 * message. With default retries the SDKs retry a provider 529 but stop at once on a 402.
 */
import t from 'tap';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { defaultConfig, rejectionOf, startGateway, usageOf, type Harness } from './helpers/harness.js';
import { unlistenedPort } from './helpers/ports.js';

type Test = Parameters<Parameters<typeof t.test>[1]>[0];


/** A well-formed key that no gateway issued. */
function unknownKey(): string {
  let hex = '';
  for (let i = 0; i < 32; i++) hex += Math.floor(Math.random() * 16).toString(16);
  return `gw_live_${hex}`;
}

/** An OpenAI SDK error carries the gateway's envelope as `error`, and its code and type. */
function checkOpenAIError(t: Test, err: any, cls: any, status: number, code: string, type: string, key: string): void {
  t.ok(err instanceof cls, `${cls.name} (got ${err?.constructor?.name}: ${err?.message})`);
  t.ok(err instanceof OpenAI.APIError);
  t.equal(err.status, status);
  t.equal(err.code, code);
  t.equal(err.type, type);
  t.equal(err.param, null);
  t.equal(err.error?.code, code);
  t.type(err.error?.message, 'string');
  t.ok(err.requestID, 'x-request-id reaches the SDK');
  t.notOk(String(err.message).includes(key), 'the message does not contain the key');
  t.notOk(JSON.stringify(err.error).includes(key), 'the body does not contain the key');
}

/** The Anthropic SDK keeps the whole body as `error` and reads `type` from `error.type`. */
function checkAnthropicError(t: Test, err: any, cls: any, status: number, code: string, type: string, key: string): void {
  t.ok(err instanceof cls, `${cls.name} (got ${err?.constructor?.name}: ${err?.message})`);
  t.ok(err instanceof Anthropic.APIError);
  t.equal(err.status, status);
  t.equal(err.type, type);
  t.equal(err.error?.error?.code, code);
  t.equal(err.error?.error?.type, type);
  t.notOk(String(err.message).includes(key), 'the message does not contain the key');
  t.notOk(JSON.stringify(err.error).includes(key), 'the body does not contain the key');
}

const chatBody = (model = 'gpt-4o-mini', mock?: Record<string, unknown>): any => ({
  model,
  messages: [{ role: 'user', content: 'hello' }],
  ...(mock === undefined ? {} : { mock }),
});
const messagesBody = (model = 'claude-haiku-4-5', mock?: Record<string, unknown>): any => ({
  model,
  max_tokens: 64,
  messages: [{ role: 'user', content: 'hello' }],
  ...(mock === undefined ? {} : { mock }),
});

interface Keys {
  credit: string;
  suspended: string;
  expired: string;
  allowlisted: string;
  zeroCredit: string;
  zeroToken: string;
  rpm1a: string;
  rpm1b: string;
}

async function makeKeys(gw: Harness): Promise<Keys> {
  const credit = ['--mode', 'credit', '--balance', '5'];
  const specs: Record<keyof Keys, string[]> = {
    credit,
    suspended: credit,
    expired: [...credit, '--expires', '2001-01-01'],
    allowlisted: [...credit, '--models', 'gpt-4o-mini,claude-sonnet-4-5'],
    zeroCredit: ['--mode', 'credit', '--balance', '0'],
    zeroToken: ['--mode', 'token', '--budget', '0'],
    rpm1a: [...credit, '--rpm', '1'],
    rpm1b: [...credit, '--rpm', '1'],
  };
  const names = Object.keys(specs) as (keyof Keys)[];
  const made = await Promise.all(names.map((name) => gw.createKey(specs[name])));
  const r = await gw.cli(['keys', 'suspend', made[names.indexOf('suspended')]!.id]);
  if (r.code !== 0) throw new Error(`keys suspend failed: ${r.stderr}`);
  return Object.fromEntries(names.map((name, i) => [name, made[i]!.key])) as unknown as Keys;
}

t.test('typed errors in both SDKs', async (t) => {
  const gw = await startGateway(t);
  const keys = await makeKeys(gw);

  await t.test('openai SDK', async (t) => {
    const credit = `${gw.base}/v1`;
    const tokenBase = `${gw.base}/token/v1`;
    const client = (apiKey: string, baseURL = credit, extra: Record<string, unknown> = {}): OpenAI =>
      new OpenAI({ apiKey, baseURL, maxRetries: 0, ...extra });

    await t.test('401 invalid_api_key: unknown key, and a token key on the credit surface (checked before its funds)', async (t) => {
      const stranger = unknownKey();
      const err = await rejectionOf(t, client(stranger).chat.completions.create(chatBody()));
      checkOpenAIError(t, err, OpenAI.AuthenticationError, 401, 'invalid_api_key', 'invalid_request_error', stranger);
      const wrong = await rejectionOf(t, client(keys.zeroToken).chat.completions.create(chatBody()));
      checkOpenAIError(t, wrong, OpenAI.AuthenticationError, 401, 'invalid_api_key', 'invalid_request_error', keys.zeroToken);
    });

    await t.test('401 missing_api_key: the Authorization header left out', async (t) => {
      const noAuth = client('unused', credit, { defaultHeaders: { Authorization: null } });
      const err = await rejectionOf(t, noAuth.chat.completions.create(chatBody()));
      checkOpenAIError(t, err, OpenAI.AuthenticationError, 401, 'missing_api_key', 'invalid_request_error', 'unused');
    });

    await t.test('403 PermissionDeniedError: suspended, expired, not allowed, not available', async (t) => {
      const suspended = await rejectionOf(t, client(keys.suspended).chat.completions.create(chatBody()));
      checkOpenAIError(t, suspended, OpenAI.PermissionDeniedError, 403, 'key_suspended', 'permission_error', keys.suspended);
      const expired = await rejectionOf(t, client(keys.expired).chat.completions.create(chatBody()));
      checkOpenAIError(t, expired, OpenAI.PermissionDeniedError, 403, 'key_expired', 'permission_error', keys.expired);
      const notAllowed = await rejectionOf(t, client(keys.allowlisted).chat.completions.create(chatBody('gpt-4o')));
      checkOpenAIError(t, notAllowed, OpenAI.PermissionDeniedError, 403, 'model_not_allowed', 'permission_error', keys.allowlisted);
      const off = await rejectionOf(t, client(keys.credit).chat.completions.create(chatBody('switched-off')));
      checkOpenAIError(t, off, OpenAI.PermissionDeniedError, 403, 'model_not_available', 'permission_error', keys.credit);
      const wrongEndpoint = await rejectionOf(t, client(keys.credit).responses.create({ model: 'chat-only', input: 'hello' }));
      checkOpenAIError(t, wrongEndpoint, OpenAI.PermissionDeniedError, 403, 'model_not_available', 'permission_error', keys.credit);
    });

    await t.test('402 APIError: zero balance, zero budget', async (t) => {
      const err = await rejectionOf(t, client(keys.zeroCredit).chat.completions.create(chatBody()));
      checkOpenAIError(t, err, OpenAI.APIError, 402, 'insufficient_credit', 'insufficient_quota', keys.zeroCredit);
      const spent = await rejectionOf(t, client(keys.zeroToken, tokenBase).chat.completions.create(chatBody()));
      checkOpenAIError(t, spent, OpenAI.APIError, 402, 'token_budget_exhausted', 'insufficient_quota', keys.zeroToken);
    });

    await t.test('429 RateLimitError: over the key\'s requests per minute', async (t) => {
      const limited = client(keys.rpm1a);
      await limited.chat.completions.create(chatBody());
      const err = await rejectionOf(t, limited.chat.completions.create(chatBody()));
      checkOpenAIError(t, err, OpenAI.RateLimitError, 429, 'rate_limit_exceeded', 'rate_limit_error', keys.rpm1a);
      t.match(err.headers?.get('retry-after'), /^\d+$/, 'retry-after is visible to the SDK');
    });

    await t.test('404 NotFoundError: an endpoint the gateway does not serve', async (t) => {
      const err = await rejectionOf(t, client(keys.credit).embeddings.create({ model: 'gpt-4o-mini', input: 'hello' }));
      checkOpenAIError(t, err, OpenAI.NotFoundError, 404, 'unknown_endpoint', 'invalid_request_error', keys.credit);
    });

    await t.test('400 BadRequestError: the gateway\'s model_required, and a provider 400 passed through', async (t) => {
      const noModel = await rejectionOf(t, client(keys.credit).chat.completions.create({ messages: [{ role: 'user', content: 'hi' }] } as any));
      checkOpenAIError(t, noModel, OpenAI.BadRequestError, 400, 'model_required', 'invalid_request_error', keys.credit);
      const provider = await rejectionOf(t, client(keys.credit).chat.completions.create(chatBody('gpt-4o-mini', { status: 400 })));
      t.ok(provider instanceof OpenAI.BadRequestError);
      t.equal(provider.status, 400);
      // The provider's own body, unchanged: no gateway code in it.
      const direct = await fetch(`${gw.mock.url}/v1/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(chatBody('gpt-4o-mini', { status: 400 })),
      });
      t.same(provider.error, (await direct.json()).error);
      const usage = await usageOf(gw.base, keys.credit);
      t.match(usage.requests[0], { status: 400, error: 'upstream_status_400', costNanoUsd: 0 }, 'recorded as an error at zero cost');
    });
  });

  await t.test('anthropic SDK', async (t) => {
    const client = (apiKey: string, baseURL = gw.base, extra: Record<string, unknown> = {}): Anthropic =>
      new Anthropic({ apiKey, baseURL, maxRetries: 0, ...extra });

    await t.test('401 AuthenticationError: unknown key, key on the other surface, no key', async (t) => {
      const stranger = unknownKey();
      const err = await rejectionOf(t, client(stranger).messages.create(messagesBody()));
      checkAnthropicError(t, err, Anthropic.AuthenticationError, 401, 'invalid_api_key', 'invalid_request_error', stranger);
      const wrong = await rejectionOf(t, client(keys.credit, `${gw.base}/token`).messages.create(messagesBody()));
      checkAnthropicError(t, wrong, Anthropic.AuthenticationError, 401, 'invalid_api_key', 'invalid_request_error', keys.credit);
      const viaHeader = new Anthropic({ baseURL: gw.base, maxRetries: 0, defaultHeaders: { 'X-Api-Key': stranger, Authorization: null } });
      const headerErr = await rejectionOf(t, viaHeader.messages.create(messagesBody()));
      checkAnthropicError(t, headerErr, Anthropic.AuthenticationError, 401, 'invalid_api_key', 'invalid_request_error', stranger);
      const noAuth = client('unused', gw.base, { defaultHeaders: { Authorization: null } });
      const missing = await rejectionOf(t, noAuth.messages.create(messagesBody()));
      checkAnthropicError(t, missing, Anthropic.AuthenticationError, 401, 'missing_api_key', 'invalid_request_error', 'unused');
    });

    await t.test('403 PermissionDeniedError: suspended, expired, not allowed, not available', async (t) => {
      const suspended = await rejectionOf(t, client(keys.suspended).messages.create(messagesBody()));
      checkAnthropicError(t, suspended, Anthropic.PermissionDeniedError, 403, 'key_suspended', 'permission_error', keys.suspended);
      const expired = await rejectionOf(t, client(keys.expired).messages.create(messagesBody()));
      checkAnthropicError(t, expired, Anthropic.PermissionDeniedError, 403, 'key_expired', 'permission_error', keys.expired);
      const notAllowed = await rejectionOf(t, client(keys.allowlisted).messages.create(messagesBody('claude-haiku-4-5')));
      checkAnthropicError(t, notAllowed, Anthropic.PermissionDeniedError, 403, 'model_not_allowed', 'permission_error', keys.allowlisted);
      const wrongEndpoint = await rejectionOf(t, client(keys.credit).messages.create(messagesBody('gpt-4o-mini')));
      checkAnthropicError(t, wrongEndpoint, Anthropic.PermissionDeniedError, 403, 'model_not_available', 'permission_error', keys.credit);
    });

    await t.test('402 APIError: zero balance, zero budget', async (t) => {
      const err = await rejectionOf(t, client(keys.zeroCredit).messages.create(messagesBody()));
      checkAnthropicError(t, err, Anthropic.APIError, 402, 'insufficient_credit', 'insufficient_quota', keys.zeroCredit);
      const spent = await rejectionOf(t, client(keys.zeroToken, `${gw.base}/token`).messages.create(messagesBody()));
      checkAnthropicError(t, spent, Anthropic.APIError, 402, 'token_budget_exhausted', 'insufficient_quota', keys.zeroToken);
    });

    await t.test('429 RateLimitError: over the key\'s requests per minute', async (t) => {
      const limited = client(keys.rpm1b);
      await limited.messages.create(messagesBody());
      const err = await rejectionOf(t, limited.messages.create(messagesBody()));
      checkAnthropicError(t, err, Anthropic.RateLimitError, 429, 'rate_limit_exceeded', 'rate_limit_error', keys.rpm1b);
      t.match(err.headers?.get('retry-after'), /^\d+$/);
    });

    await t.test('404 NotFoundError: an endpoint the gateway does not serve', async (t) => {
      const err = await rejectionOf(t, client(keys.credit).post('/v1/complete', { body: { model: 'claude-haiku-4-5', prompt: 'hi', max_tokens_to_sample: 8 } }));
      checkAnthropicError(t, err, Anthropic.NotFoundError, 404, 'unknown_endpoint', 'invalid_request_error', keys.credit);
    });

    await t.test('400 BadRequestError: the provider\'s own answer to a missing max_tokens, unchanged', async (t) => {
      const body = { model: 'claude-haiku-4-5', messages: [{ role: 'user', content: 'hello' }] };
      const err = await rejectionOf(t, client(keys.credit).messages.create(body as any));
      t.ok(err instanceof Anthropic.BadRequestError, `BadRequestError (got ${err?.constructor?.name})`);
      t.equal(err.status, 400);
      t.equal(err.type, 'invalid_request_error');
      const direct = await fetch(`${gw.mock.url}/v1/messages`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
      });
      t.same(err.error, await direct.json(), 'the provider\'s body, unchanged');
      t.equal(err.error?.error?.code, undefined, 'not a gateway error');
      const usage = await usageOf(gw.base, keys.credit);
      t.match(usage.requests[0], { status: 400, error: 'upstream_status_400', costNanoUsd: 0 }, 'recorded as an error at zero cost');
    });
  });

  await t.test('default retries: a provider 529 is retried, a gateway 402 is not', async (t) => {
    let calls = 0;
    let forwarded = 0;
    const countingFetch = (input: any, init?: any): Promise<Response> => {
      calls++;
      return fetch(input, init);
    };

    await t.test('openai SDK', async (t) => {
      const client = new OpenAI({ apiKey: keys.credit, baseURL: `${gw.base}/v1`, fetch: countingFetch });
      calls = 0;
      const before = gw.mock.requests.length;
      const err = await rejectionOf(t, client.chat.completions.create(chatBody('gpt-4o-mini', { status: 529 })));
      t.ok(err instanceof OpenAI.InternalServerError);
      t.equal(err.status, 529);
      t.ok(calls > 1, `the SDK retried (${calls} attempts)`);
      // Each SDK attempt was sent twice by the gateway (retry.attempts 2, to the one credential).
      t.equal(gw.mock.requests.length - before, calls * 2, 'every attempt was forwarded, and sent again once');
      forwarded += calls;

      const broken = new OpenAI({ apiKey: keys.zeroCredit, baseURL: `${gw.base}/v1`, fetch: countingFetch });
      calls = 0;
      const paid = await rejectionOf(t, broken.chat.completions.create(chatBody()));
      t.equal(paid.status, 402);
      t.equal(paid.code, 'insufficient_credit');
      t.equal(calls, 1, 'a 402 is not retried');
    });

    await t.test('anthropic SDK', async (t) => {
      const client = new Anthropic({ apiKey: keys.credit, baseURL: gw.base, fetch: countingFetch });
      calls = 0;
      const before = gw.mock.requests.length;
      const err = await rejectionOf(t, client.messages.create(messagesBody('claude-haiku-4-5', { status: 529 })));
      t.ok(err instanceof Anthropic.InternalServerError);
      t.equal(err.status, 529);
      t.equal(err.type, 'overloaded_error', 'the provider\'s error body, passed through');
      t.ok(calls > 1, `the SDK retried (${calls} attempts)`);
      // Each SDK attempt was sent twice by the gateway (retry.attempts 2, to the one credential).
      t.equal(gw.mock.requests.length - before, calls * 2, 'every attempt was forwarded, and sent again once');
      forwarded += calls;

      const broken = new Anthropic({ apiKey: keys.zeroCredit, baseURL: gw.base, fetch: countingFetch });
      calls = 0;
      const paid = await rejectionOf(t, broken.messages.create(messagesBody()));
      t.equal(paid.status, 402);
      t.equal(paid.error?.error?.code, 'insufficient_credit');
      t.equal(calls, 1, 'a 402 is not retried');
    });

    const usage = await usageOf(gw.base, keys.credit);
    const overloaded = usage.requests.filter((r: any) => r.status === 529);
    t.equal(overloaded.length, forwarded, 'each SDK attempt is recorded once');
    for (const r of overloaded) t.match(r, { error: 'upstream_status_529', costNanoUsd: 0, attempts: 2 }, 'as an error at zero cost, with its two sends');
  });
});

t.test('502 InternalServerError upstream_unavailable when the provider cannot be reached', async (t) => {
  const port = await unlistenedPort();
  const gw = await startGateway(t, {
    config: (mockUrl) => {
      const config = defaultConfig(mockUrl);
      config.providers = {
        openai: { baseUrl: `http://127.0.0.1:${port}/v1`, auth: 'bearer', apiKeyEnv: 'OPENAI_API_KEY' },
        anthropic: { baseUrl: `http://127.0.0.1:${port}/v1`, auth: 'x-api-key', apiKeyEnv: 'ANTHROPIC_API_KEY' },
      };
      return config;
    },
  });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '5']);

  const openai = new OpenAI({ apiKey: key, baseURL: `${gw.base}/v1`, maxRetries: 0 });
  const err = await rejectionOf(t, openai.chat.completions.create(chatBody()));
  checkOpenAIError(t, err, OpenAI.InternalServerError, 502, 'upstream_unavailable', 'api_error', key);

  const anthropic = new Anthropic({ apiKey: key, baseURL: gw.base, maxRetries: 0 });
  const aerr = await rejectionOf(t, anthropic.messages.create(messagesBody()));
  checkAnthropicError(t, aerr, Anthropic.InternalServerError, 502, 'upstream_unavailable', 'api_error', key);

  const usage = await usageOf(gw.base, key);
  t.equal(usage.requests.length, 2);
  for (const r of usage.requests) t.match(r, { status: 502, error: 'upstream_unavailable', costNanoUsd: 0 });
  t.equal(usage.key.balanceNanoUsd, 5_000_000_000, 'nothing billed');
});
