/**
 * A path that does not resolve to a real endpoint (or a real path with a method it does not
 * answer) is 404 unknown_endpoint, decided before authentication: the same answer with no key,
 * an unknown key or a valid key, and nothing reaches the provider. A query string on a real
 * path does not stop it resolving, and is forwarded.
 */
import t from 'tap';
import { readReply, startGateway, usageOf } from './helpers/harness.js';

const CHAT = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });

t.test('unknown endpoints', async (t) => {
  const gw = await startGateway(t);
  const credit = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const token = await gw.createKey(['--mode', 'token', '--budget', '1000']);
  const suspended = await gw.createKey(['--mode', 'credit', '--balance', '0']);
  t.equal((await gw.cli(['keys', 'suspend', suspended.id])).code, 0);

  const call = async (method: string, path: string, headers: Record<string, string>): Promise<{ status: number; json: any }> => {
    const withBody = method === 'POST' || method === 'DELETE';
    const res = await fetch(`${gw.base}${path}`, {
      method,
      headers: withBody ? { ...headers, 'content-type': 'application/json' } : headers,
      ...(withBody ? { body: CHAT } : {}),
    });
    const { status, json } = await readReply(res);
    return { status, json };
  };

  const credentials: Record<string, Record<string, string>> = {
    'no key': {},
    'unknown key': { authorization: 'Bearer gw_live_00000000000000000000000000000000' },
    'malformed key': { 'x-api-key': 'hello' },
    'credit key': { authorization: `Bearer ${credit.key}` },
    'token key': { authorization: `Bearer ${token.key}` },
    'suspended key, zero balance': { 'x-api-key': suspended.key },
  };

  const unknown: Array<[string, string]> = [
    ['POST', '/'],
    ['GET', '/'],
    ['POST', '/v1'],
    ['GET', '/v1'],
    ['POST', '/v1/'],
    ['POST', '/v2/chat/completions'],
    ['POST', '/token/chat/completions'],
    ['POST', '/token/v1'],
    ['POST', '/token/v1/'],
    ['POST', '/v1/chat/completions/extra'],
    ['POST', '/v1/embeddings'],
    ['POST', '/token/v1/embeddings'],
    ['GET', '/v1/chat/completions'],
    ['DELETE', '/v1/messages'],
    ['GET', '/token/v1/responses'],
    ['POST', '/v1/models'],
    ['POST', '/v1?x=1'],
    // Of the Responses API only the stored response, its input items and its deletion are served.
    ['POST', '/v1/responses/compact'],
    ['POST', '/token/v1/responses/compact'],
    ['POST', '/v1/responses/input_tokens'],
    ['POST', '/token/v1/responses/input_tokens'],
    ['POST', '/v1/responses/resp_0123456789abcdef/cancel'],
    ['POST', '/token/v1/responses/resp_0123456789abcdef/cancel'],
    ['GET', '/v1/models/gpt-4o-mini'],
    ['GET', '/token/v1/models/gpt-4o-mini'],
    ['GET', '/v1/responses/'],
    ['GET', '/v1/responses//input_items'],
    ['DELETE', '/v1/responses/resp_0123456789abcdef/input_items'],
    ['GET', '/v1/responses/resp_0123456789abcdef/input_items/x'],
    ['GET', '/v1/responses/resp_0123456789abcdef/output_items'],
    ['POST', '/v1/responses/resp_0123456789abcdef'],
  ];

  const before = gw.mock.requests.length;
  for (const [method, path] of unknown) {
    t.test(`${method} ${path}`, async (t) => {
      for (const [who, headers] of Object.entries(credentials)) {
        const r = await call(method, path, headers);
        t.equal(r.status, 404, `${who}: 404`);
        t.equal(r.json?.error?.code, 'unknown_endpoint', `${who}: unknown_endpoint`);
        t.equal(r.json?.error?.type, 'invalid_request_error', `${who}: invalid_request_error`);
      }
    });
  }

  t.test('nothing was forwarded, listed or billed', async (t) => {
    t.equal(gw.mock.requests.length, before);
    const u = await usageOf(gw.base, credit.key);
    t.same(u.requests, []);
    t.equal(u.key.balanceUsd, '1.000000');
  });

  t.test('a query string on a real path still resolves and is forwarded', async (t) => {
    const n = gw.mock.requests.length;
    const r = await call('POST', '/v1/chat/completions?x=1', { authorization: `Bearer ${credit.key}` });
    t.equal(r.status, 200);
    t.equal(r.json?.object, 'chat.completion');
    t.equal(gw.mock.requests.length, n + 1);
    const seen = gw.mock.requests[n]!;
    t.equal(seen.method, 'POST');
    t.equal(seen.path, '/v1/chat/completions?x=1', 'the provider sees the query');

    // GET /models resolves with a query too; the gateway asks the provider for its whole list
    // (filtered per key), so the client's query is not forwarded there.
    const m = await call('GET', '/token/v1/models?limit=2', { authorization: `Bearer ${token.key}` });
    t.equal(m.status, 200);
    t.equal(gw.mock.requests[n + 1]!.path, '/v1/models');
  });
});
