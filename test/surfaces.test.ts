/**
 * Every key belongs to one billing surface: credit keys answer under /v1, token keys under
 * /token/v1. A key on the other surface is 401 invalid_api_key, on every endpoint (chat,
 * responses, messages, models) and with either carrier, and nothing reaches the provider.
 */
import t from 'tap';
import { readReply, startGateway, usageOf } from './helpers/harness.js';

const CHAT = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };
const RESPONSES = { model: 'gpt-4o-mini', input: 'hi' };
const MESSAGES = { model: 'claude-sonnet-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] };

interface Reply { status: number; code: string | undefined; json: any }

t.test('credit and token keys each answer on their own surface only', async (t) => {
  const gw = await startGateway(t);
  const credit = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const token = await gw.createKey(['--mode', 'token', '--budget', '100000']);

  const call = async (method: 'GET' | 'POST', path: string, headers: Record<string, string>, body?: unknown): Promise<Reply> => {
    const init: RequestInit = { method, headers: { ...headers } };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      (init.headers as Record<string, string>)['content-type'] = 'application/json';
    }
    const { status, json } = await readReply(await fetch(`${gw.base}${path}`, init));
    return { status, code: json?.error?.code, json };
  };
  const bearer = (key: string): Record<string, string> => ({ authorization: `Bearer ${key}` });
  const anthropic = (key: string): Record<string, string> => ({ 'x-api-key': key, 'anthropic-version': '2023-06-01' });

  const cases: Array<[string, 'GET' | 'POST', string, unknown, (key: string) => Record<string, string>]> = [
    ['chat completions', 'POST', '/chat/completions', CHAT, bearer],
    ['chat completions via x-api-key', 'POST', '/chat/completions', CHAT, (key) => ({ 'x-api-key': key })],
    ['responses', 'POST', '/responses', RESPONSES, bearer],
    ['messages (x-api-key carrier)', 'POST', '/messages', MESSAGES, anthropic],
    ['messages (Bearer carrier)', 'POST', '/messages', MESSAGES, (key) => ({ ...bearer(key), 'anthropic-version': '2023-06-01' })],
    ['models', 'GET', '/models', undefined, bearer],
    ['models, Messages-format client', 'GET', '/models', undefined, anthropic],
  ];

  for (const [name, method, path, body, headers] of cases) {
    t.test(name, async (t) => {
      const before = gw.mock.requests.length;
      t.equal((await call(method, `/v1${path}`, headers(credit.key), body)).status, 200, 'credit key on /v1');
      t.equal((await call(method, `/token/v1${path}`, headers(token.key), body)).status, 200, 'token key on /token/v1');
      t.equal(gw.mock.requests.length, before + 2, 'both were forwarded');
      const wrongCredit = await call(method, `/token/v1${path}`, headers(credit.key), body);
      t.same([wrongCredit.status, wrongCredit.code], [401, 'invalid_api_key'], 'credit key on /token/v1');
      const wrongToken = await call(method, `/v1${path}`, headers(token.key), body);
      t.same([wrongToken.status, wrongToken.code], [401, 'invalid_api_key'], 'token key on /v1');
      t.equal(gw.mock.requests.length, before + 2, 'neither refused call was forwarded');
      t.equal(wrongCredit.json?.error?.type, 'invalid_request_error');
    });
  }

  t.test('the refusals are not listed and cost nothing', async (t) => {
    const c = await usageOf(gw.base, credit.key);
    const k = await usageOf(gw.base, token.key);
    // Inference calls that succeeded: chat ×2, responses, messages ×2 (GET /models is never listed).
    t.equal(c.requests.length, 5);
    t.equal(k.requests.length, 5);
    t.ok(c.requests.every((r: { status: number }) => r.status === 200), 'only successes are listed for the credit key');
    t.ok(k.requests.every((r: { status: number }) => r.status === 200), 'only successes are listed for the token key');
    t.equal(k.key.usedTokens, 5 * 18, 'the token key was charged for its own five calls only');
  });

  t.test('both kinds of key read the usage checker', async (t) => {
    // The usage checker is not on a surface: both kinds of key read it.
    t.equal((await usageOf(gw.base, credit.key)).key.mode, 'credit');
    t.equal((await usageOf(gw.base, token.key)).key.mode, 'token');
  });
});
