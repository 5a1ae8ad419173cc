/**
 * Only listed headers cross the gateway.
 * Upstream: the provider gets its own credential (from the gateway's environment), the
 * format's version/beta headers and the content type; never the client's key, cookies,
 * forwarding or encoding headers, or anything else the client made up.
 * Downstream: the client gets content-type, x-request-id (the provider's, or the gateway's own
 * when the provider sends none), the CORS headers, and `cache-control: no-cache, no-transform`
 * on streams; none of the provider's other headers.
 */
import { createServer } from 'node:http';
import t from 'tap';
import { defaultConfig, post, PROVIDER_ENV, startGateway, usageOf } from './helpers/harness.js';

const CHAT = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };
const MESSAGES = { model: 'claude-sonnet-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] };

/** Client headers that must not reach the provider. */
const NOT_FORWARDED = {
  cookie: 'session=abc123; theme=dark',
  'x-forwarded-for': '203.0.113.7',
  'x-real-ip': '203.0.113.7',
  'accept-encoding': 'gzip, br',
  'x-random-header': 'random-value',
  'x-stainless-lang': 'js',
  'user-agent': 'client-agent/1.0',
};

/**
 * Response headers a client may see on a forwarded call: the preserved ones, CORS, and HTTP
 * framing/connection headers that belong to the gateway's own connection.
 */
const ALLOWED_DOWNSTREAM = new Set([
  'content-type', 'x-request-id', 'cache-control',
  'access-control-allow-origin', 'access-control-expose-headers',
  'date', 'connection', 'keep-alive', 'transfer-encoding', 'content-length',
]);

type Asserts = Pick<typeof t, 'equal' | 'ok' | 'notOk' | 'same' | 'match'>;

function headerNames(headers: Headers): string[] {
  return [...headers.keys()].map((h) => h.toLowerCase());
}

function checkDownstream(t: Asserts, headers: Headers, stream: boolean, what: string): void {
  const extra = headerNames(headers).filter((h) => !ALLOWED_DOWNSTREAM.has(h));
  t.same(extra, [], `${what}: no other provider headers`);
  for (const h of ['set-cookie', 'server', 'cf-ray', 'openai-processing-ms', 'openai-version', 'openai-organization', 'x-ratelimit-limit-requests', 'x-ratelimit-remaining-tokens', 'anthropic-organization-id', 'anthropic-ratelimit-requests-limit', 'request-id']) {
    t.equal(headers.get(h), null, `${what}: no ${h}`);
  }
  t.equal(headers.get('access-control-allow-origin'), '*', `${what}: CORS origin`);
  t.match(headers.get('access-control-expose-headers') ?? '', /x-request-id/i, `${what}: x-request-id exposed`);
  if (stream) {
    t.equal(headers.get('cache-control'), 'no-cache, no-transform', `${what}: stream cache-control`);
    t.match(headers.get('content-type') ?? '', /^text\/event-stream/, `${what}: stream content-type`);
  } else {
    t.equal(headers.get('cache-control'), null, `${what}: no cache-control on a plain answer`);
    t.match(headers.get('content-type') ?? '', /^application\/json/, `${what}: JSON content-type`);
  }
}

/** Every header value the provider saw, as one string. */
function allValues(headers: Record<string, string | string[] | undefined>): string {
  return Object.values(headers).flat().join('\n');
}

t.test('request and response headers', async (t) => {
  const gw = await startGateway(t);
  const credit = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const token = await gw.createKey(['--mode', 'token', '--budget', '100000']);

  const last = () => gw.mock.requests[gw.mock.requests.length - 1]!;

  t.test('OpenAI-format calls carry the provider bearer credential, never the client key', async (t) => {
    for (const [path, key, body] of [
      ['/v1/chat/completions', credit.key, CHAT],
      ['/v1/responses', credit.key, { model: 'gpt-4o-mini', input: 'hi' }],
      ['/token/v1/chat/completions', token.key, CHAT],
    ] as const) {
      for (const carrier of ['authorization', 'x-api-key'] as const) {
        const auth: Record<string, string> = carrier === 'authorization' ? { authorization: `Bearer ${key}` } : { 'x-api-key': key };
        const n = gw.mock.requests.length;
        const r = await post(`${gw.base}${path}`, null, body, { ...auth, ...NOT_FORWARDED, 'openai-beta': 'assistants=v2' });
        t.equal(r.status, 200, `${path} via ${carrier}`);
        t.equal(gw.mock.requests.length, n + 1);
        const h = last().headers;
        t.equal(h.authorization, `Bearer ${PROVIDER_ENV.OPENAI_API_KEY}`, 'provider credential from the environment');
        t.equal(h['x-api-key'], undefined, 'no x-api-key upstream');
        t.notOk(allValues(h).includes(key.slice(8)), 'the client key appears in no header');
        for (const name of Object.keys(NOT_FORWARDED)) {
          t.not(h[name], NOT_FORWARDED[name as keyof typeof NOT_FORWARDED], `${name} not forwarded`);
        }
        for (const name of ['cookie', 'x-forwarded-for', 'x-real-ip', 'x-random-header', 'x-stainless-lang']) t.equal(h[name], undefined, `no ${name}`);
        t.equal(h['openai-beta'], 'assistants=v2', 'openai-beta forwarded');
        t.match(String(h['content-type']), /^application\/json/, 'content-type forwarded');
      }
    }
  });

  t.test('Messages-format calls carry the provider x-api-key, never the client key', async (t) => {
    for (const [path, key] of [['/v1/messages', credit.key], ['/token/v1/messages', token.key]] as const) {
      for (const carrier of ['x-api-key', 'authorization'] as const) {
        const auth: Record<string, string> = carrier === 'authorization' ? { authorization: `Bearer ${key}` } : { 'x-api-key': key };
        const r = await post(`${gw.base}${path}`, null, MESSAGES, {
          ...auth,
          ...NOT_FORWARDED,
          'anthropic-version': '2023-06-01',
          'anthropic-beta': 'prompt-caching-2024-07-31',
        });
        t.equal(r.status, 200, `${path} via ${carrier}`);
        const h = last().headers;
        t.equal(h['x-api-key'], PROVIDER_ENV.ANTHROPIC_API_KEY, 'provider credential from the environment');
        t.equal(h.authorization, undefined, 'no authorization upstream');
        t.notOk(allValues(h).includes(key.slice(8)), 'the client key appears in no header');
        for (const name of ['cookie', 'x-forwarded-for', 'x-real-ip', 'x-random-header', 'x-stainless-lang']) t.equal(h[name], undefined, `no ${name}`);
        t.not(h['accept-encoding'], NOT_FORWARDED['accept-encoding'], 'accept-encoding not forwarded');
        t.equal(h['anthropic-version'], '2023-06-01', 'anthropic-version forwarded');
        t.equal(h['anthropic-beta'], 'prompt-caching-2024-07-31', 'anthropic-beta forwarded');
      }
    }
  });

  t.test('GET /models carries the provider credential too', async (t) => {
    const res = await fetch(`${gw.base}/v1/models`, { headers: { authorization: `Bearer ${credit.key}`, cookie: 'a=b' } });
    await res.arrayBuffer();
    t.equal(res.status, 200);
    const h = last().headers;
    t.equal(h.authorization, `Bearer ${PROVIDER_ENV.OPENAI_API_KEY}`);
    t.notOk(allValues(h).includes(credit.key.slice(8)));
    t.equal(h.cookie, undefined);
    checkDownstream(t, res.headers, false, 'GET /models');
  });

  t.test('the client sees only the preserved provider headers', async (t) => {
    for (const [path, body, extra] of [
      ['/v1/chat/completions', CHAT, {}],
      ['/v1/responses', { model: 'gpt-4o-mini', input: 'hi' }, {}],
      ['/v1/messages', MESSAGES, { 'anthropic-version': '2023-06-01' }],
    ] as const) {
      for (const stream of [false, true]) {
        const r = await post(`${gw.base}${path}`, credit.key, { ...body, stream }, extra);
        t.equal(r.status, 200);
        checkDownstream(t, r.headers, stream, `${path}${stream ? ' (stream)' : ''}`);
        const id = r.headers.get('x-request-id');
        t.match(id ?? '', /^req_mock_\d+$/, "the provider's x-request-id is preserved");
        const usage = await usageOf(gw.base, credit.key);
        t.equal(usage.requests[0].requestId, id, 'the usage record carries the same request id');
      }
    }
    const failed = await post(`${gw.base}/v1/messages`, credit.key, { ...MESSAGES, mock: { status: 529 } });
    t.equal(failed.status, 529);
    checkDownstream(t, failed.headers, false, 'provider error');
    t.match(failed.headers.get('x-request-id') ?? '', /^req_mock_\d+$/);
    t.equal((await usageOf(gw.base, credit.key)).requests[0].requestId, failed.headers.get('x-request-id'));
  });

  t.test("the gateway's own errors carry an x-request-id of their own", async (t) => {
    const seen = new Set<string>();
    for (const [key, path, body] of [
      [null, '/v1/chat/completions', CHAT],
      ['gw_live_00000000000000000000000000000000', '/v1/chat/completions', CHAT],
      [credit.key, '/v1/nothing', CHAT],
      [credit.key, '/v1/chat/completions', 'not json'],
      [credit.key, '/v1/chat/completions', { ...CHAT, model: 'switched-off' }],
    ] as const) {
      const r = await post(`${gw.base}${path}`, key, body);
      t.ok(r.status >= 400 && r.status < 500, `${path}: refused (${r.status})`);
      const id = r.headers.get('x-request-id');
      t.ok(id !== null && id.length > 0, `${path}: has an x-request-id`);
      t.notOk(seen.has(id!), 'ids are not reused');
      seen.add(id!);
      t.notOk(id!.includes(credit.key.slice(8)), 'the id is not derived from the key');
    }
  });
});

t.test('a provider that sends no x-request-id: the gateway adds its own, and records it', async (t) => {
  // A bare provider answering Chat Completions with no x-request-id and a few leaky headers.
  const seen: Array<Record<string, string | string[] | undefined>> = [];
  const provider = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      seen.push(req.headers);
      const body = JSON.stringify({
        id: 'chatcmpl-bare', object: 'chat.completion', created: 1, model: 'gpt-4o-mini',
        choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
      });
      res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': 'x=y', 'x-powered-by': 'bare', 'openai-processing-ms': '3' });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => {
    provider.close(() => resolve());
    provider.closeAllConnections();
  }));
  const port = (provider.address() as { port: number }).port;
  const gw = await startGateway(t, {
    config: (mockUrl) => {
      const config = defaultConfig(mockUrl) as { providers: Record<string, Record<string, unknown>> };
      config.providers.openai!.baseUrl = `http://127.0.0.1:${port}/v1`;
      return config;
    },
  });
  const k = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const ids = new Set<string>();
  for (let i = 0; i < 2; i++) {
    const r = await post(`${gw.base}/v1/chat/completions`, k.key, CHAT);
    t.equal(r.status, 200);
    t.equal(r.json.id, 'chatcmpl-bare', 'the answer came from the bare provider');
    checkDownstream(t, r.headers, false, 'bare provider');
    t.equal(r.headers.get('x-powered-by'), null);
    const id = r.headers.get('x-request-id');
    t.ok(id !== null && id.length > 0, 'the gateway added an x-request-id');
    t.notOk(ids.has(id!), 'a fresh one per call');
    ids.add(id!);
    const usage = await usageOf(gw.base, k.key);
    t.equal(usage.requests[0].requestId, id, 'the usage record carries the same id');
  }
  t.equal(seen.length, 2);
  t.equal(seen[0]!.authorization, `Bearer ${PROVIDER_ENV.OPENAI_API_KEY}`);
});
