/**
 * Cross-origin use: the gateway answers preflights itself (no key needed, on any path), allows
 * any origin, the methods GET, POST, DELETE, OPTIONS and exactly the spec's request headers;
 * every other response allows any origin and exposes `x-request-id` to scripts.
 */
import t from 'tap';
import { post, startGateway } from './helpers/harness.js';

/** The spec's preflight header list, with the real vendor header names. */
const SPEC_HEADERS = [
  'authorization', 'content-type', 'x-api-key',
  'anthropic-version', 'anthropic-beta', 'openai-beta', 'openai-organization', 'x-request-id',
];

type Asserts = Pick<typeof t, 'equal' | 'ok'>;

const list = (value: string | null): string[] => (value ?? '').split(',').map((s) => s.trim().toLowerCase()).filter((s) => s !== '');

t.test('CORS', async (t) => {
  const gw = await startGateway(t);
  const credit = await gw.createKey(['--mode', 'credit', '--balance', '1']);

  t.test('preflights on real and unknown paths, without a key', async (t) => {
    const paths = ['/v1/chat/completions', '/v1/responses', '/v1/messages', '/v1/models', '/token/v1/chat/completions', '/token/v1/messages', '/usage/api', '/', '/v1', '/nowhere/at/all'];
    const before = gw.mock.requests.length;
    for (const path of paths) {
      for (const asked of ['POST', 'GET', 'DELETE']) {
        const res = await fetch(`${gw.base}${path}`, {
          method: 'OPTIONS',
          headers: {
            origin: 'https://app.example.com',
            'access-control-request-method': asked,
            'access-control-request-headers': 'authorization, content-type, anthropic-version',
          },
        });
        const body = await res.text();
        t.equal(res.status, 204, `${path} (${asked}): 204`);
        t.equal(body, '', `${path}: no body`);
        t.equal(res.headers.get('access-control-allow-origin'), '*', `${path}: any origin`);
        t.match(res.headers.get('x-request-id'), /\S/, `${path}: carries x-request-id`);
        const methods = list(res.headers.get('access-control-allow-methods')).map((m) => m.toUpperCase());
        for (const m of ['GET', 'POST', 'DELETE', 'OPTIONS']) t.ok(methods.includes(m), `${path}: allows ${m}`);
        t.same(list(res.headers.get('access-control-allow-headers')).sort(), [...SPEC_HEADERS].sort(), `${path}: exactly the spec's headers`);
      }
    }
    t.equal(gw.mock.requests.length, before, 'preflights never reach the provider');
  });

  t.test('a preflight with a key is answered the same way and costs nothing', async (t) => {
    const res = await fetch(`${gw.base}/v1/chat/completions`, { method: 'OPTIONS', headers: { authorization: `Bearer ${credit.key}` } });
    await res.arrayBuffer();
    t.equal(res.status, 204);
    t.equal(res.headers.get('access-control-allow-origin'), '*');
  });

  const exposes = (t: Asserts, headers: Headers, what: string): void => {
    t.equal(headers.get('access-control-allow-origin'), '*', `${what}: any origin`);
    t.ok(list(headers.get('access-control-expose-headers')).includes('x-request-id'), `${what}: exposes x-request-id`);
    t.ok(headers.get('x-request-id'), `${what}: carries an x-request-id`);
  };

  t.test('normal responses carry the CORS headers', async (t) => {
    const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };
    const origin = { origin: 'https://app.example.com' };
    const ok = await post(`${gw.base}/v1/chat/completions`, credit.key, chat, origin);
    t.equal(ok.status, 200);
    exposes(t, ok.headers, 'forwarded call');
    const streamed = await post(`${gw.base}/v1/chat/completions`, credit.key, { ...chat, stream: true }, origin);
    t.equal(streamed.status, 200);
    exposes(t, streamed.headers, 'streamed call');
    const providerError = await post(`${gw.base}/v1/chat/completions`, credit.key, { ...chat, mock: { status: 500 } }, origin);
    t.equal(providerError.status, 500);
    exposes(t, providerError.headers, 'provider error');
    const missing = await post(`${gw.base}/v1/chat/completions`, null, chat, origin);
    t.equal(missing.status, 401);
    exposes(t, missing.headers, 'gateway 401');
    const unknown = await post(`${gw.base}/v9/x`, null, chat, origin);
    t.equal(unknown.status, 404);
    exposes(t, unknown.headers, 'gateway 404');
    const models = await fetch(`${gw.base}/v1/models`, { headers: { authorization: `Bearer ${credit.key}`, ...origin } });
    await models.arrayBuffer();
    t.equal(models.status, 200);
    exposes(t, models.headers, 'GET /models');
    const usage = await fetch(`${gw.base}/usage/api`, { headers: { authorization: `Bearer ${credit.key}`, ...origin } });
    await usage.arrayBuffer();
    t.equal(usage.status, 200);
    t.equal(usage.headers.get('access-control-allow-origin'), '*', 'usage api: any origin');
  });
});
