/**
 * The gateway passes the provider's answer through unchanged: for each format, plain and
 * streamed, the bytes the client receives are the bytes the provider sends for the same body;
 * the request body reaches the provider unchanged too. Provider errors come back with their own
 * status and body, and are listed as `upstream_status_<status>` at zero cost.
 *
 * The reference is the same mock provider called directly with the same body. The mock is
 * deterministic except for two things that differ per call: a per-request counter inside ids
 * (`chatcmpl-mock<n>`, `resp_mock<n>`, `msg_mock<n>`; the same n as its `x-request-id:
 * req_mock_<n>`) and the `created`/`created_at` clock in seconds. Before comparing, the
 * reference's counter is replaced by the gateway call's own counter (both read from the
 * x-request-id each received) and both sides' timestamps are set to 0; nothing else is touched.
 */
import t from 'tap';
import { startGateway, usageOf } from './helpers/harness.js';

interface Raw { status: number; headers: Headers; bytes: Buffer }

async function raw(url: string, headers: Record<string, string>, body: string): Promise<Raw> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}

/** The mock's request counter, from its x-request-id. */
function counterOf(r: Raw): string {
  const m = /^req_mock_(\d+)$/.exec(r.headers.get('x-request-id') ?? '');
  if (!m) throw new Error(`no mock request id: ${r.headers.get('x-request-id')}`);
  return m[1]!;
}

/** latin1 maps every byte to one char and back, so this edits bytes, not decoded text. */
function withoutClock(bytes: Buffer): string {
  return bytes.toString('latin1').replace(/"(created|created_at)":\d+/g, '"$1":0');
}

function withCounter(bytes: Buffer, from: string, to: string): Buffer {
  return Buffer.from(bytes.toString('latin1').replace(new RegExp(`(chatcmpl-mock|resp_mock|msg_mock)${from}(?!\\d)`, 'g'), `$1${to}`), 'latin1');
}

const FORMATS = [
  { name: 'chat completions', path: '/chat/completions', body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'héllo ✓' }] }, streamExtra: { stream_options: { include_usage: true } }, headers: {} },
  { name: 'responses', path: '/responses', body: { model: 'gpt-4o-mini', input: 'héllo ✓' }, streamExtra: {}, headers: {} },
  { name: 'messages', path: '/messages', body: { model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'héllo ✓' }] }, streamExtra: {}, headers: { 'anthropic-version': '2023-06-01' } },
] as const;

t.test('byte-for-byte passthrough', async (t) => {
  const gw = await startGateway(t);
  const credit = await gw.createKey(['--mode', 'credit', '--balance', '10']);

  for (const f of FORMATS) {
    for (const variant of ['plain', 'stream', 'large stream', 'large plain'] as const) {
      t.test(`${f.name}, ${variant}`, async (t) => {
        const extra = variant === 'stream' || variant === 'large stream' ? { stream: true, ...f.streamExtra } : {};
        const mock = variant.startsWith('large') ? { mock: { bytes: 300_000, chunks: 40, inputTokens: 5, outputTokens: 9 } } : { mock: { chunks: 7 } };
        const body = JSON.stringify({ ...f.body, ...extra, ...mock });

        const n = gw.mock.requests.length;
        const viaGateway = await raw(`${gw.base}/v1${f.path}`, { authorization: `Bearer ${credit.key}`, ...f.headers }, body);
        t.equal(viaGateway.status, 200);
        t.equal(gw.mock.requests[n]!.body, body, 'the provider received the body unchanged');
        const direct = await raw(`${gw.mock.url}/v1${f.path}`, f.headers, body);
        t.equal(direct.status, 200);

        t.equal(viaGateway.headers.get('content-type'), direct.headers.get('content-type'), 'same content-type');
        const reference = withCounter(direct.bytes, counterOf(direct), counterOf(viaGateway));
        t.equal(viaGateway.bytes.length, reference.length, `same length (${reference.length} bytes)`);
        t.ok(withoutClock(viaGateway.bytes) === withoutClock(reference), 'same bytes');
        if (variant === 'plain') t.equal(withoutClock(viaGateway.bytes), withoutClock(reference));
      });
    }
  }

  t.test('the request body reaches the provider byte for byte', async (t) => {
    // Odd spacing, key order, number spelling, escapes, a field the gateway does not know.
    const body = '{ "messages" : [ {"role":"user","content":"a\\u00e9\\n"} ],\n\t"model":"gpt-4o-mini", "temperature": 1.0e0, "x_unknown": {"z":1,"a":[]} }';
    const n = gw.mock.requests.length;
    const r = await raw(`${gw.base}/v1/chat/completions`, { authorization: `Bearer ${credit.key}` }, body);
    t.equal(r.status, 200);
    t.equal(gw.mock.requests[n]!.body, body);
    t.equal(gw.mock.requests[n]!.path, '/v1/chat/completions');
  });
});

t.test('provider errors come back unchanged and are listed at zero cost', async (t) => {
  const anthropic = { 'anthropic-version': '2023-06-01' };
  const messages = { model: 'claude-sonnet-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] };
  const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };

  const cases = [
    { name: 'messages 529 (overloaded)', path: '/messages', headers: anthropic, body: { ...messages, mock: { status: 529 } }, status: 529 },
    { name: 'messages 400 (max_tokens missing)', path: '/messages', headers: anthropic, body: { model: 'claude-sonnet-4-5', messages: [] }, status: 400 },
    { name: 'messages streamed 529', path: '/messages', headers: anthropic, body: { ...messages, stream: true, mock: { status: 529 } }, status: 529 },
    { name: 'chat 402 from the provider', path: '/chat/completions', headers: {}, body: { ...chat, mock: { status: 402 } }, status: 402 },
    { name: 'chat 404 from the provider', path: '/chat/completions', headers: {}, body: { ...chat, mock: { status: 404 } }, status: 404 },
    { name: 'chat 422 from the provider', path: '/chat/completions', headers: {}, body: { ...chat, mock: { status: 422 } }, status: 422 },
    { name: 'chat 500 from the provider', path: '/chat/completions', headers: {}, body: { ...chat, mock: { status: 500 } }, status: 500 },
    { name: 'chat 503 from the provider', path: '/chat/completions', headers: {}, body: { ...chat, mock: { status: 503 } }, status: 503 },
    { name: 'responses 400 from the provider', path: '/responses', headers: {}, body: { model: 'gpt-4o-mini', input: 'hi', mock: { status: 400 } }, status: 400 },
    // Last, and each surface on a gateway of its own: a 429 rests the provider credential for
    // its model (a second, as it names no retry-after), and a call in that second would be
    // answered with the 429 kept, without a send.
    { name: 'chat 429 from the provider', path: '/chat/completions', headers: {}, body: { ...chat, mock: { status: 429 } }, status: 429 },
  ];

  for (const [surface, mode] of [['/v1', ['--mode', 'credit', '--balance', '1']], ['/token/v1', ['--mode', 'token', '--budget', '1000']]] as const) {
    t.test(surface, async (t) => {
      const gw = await startGateway(t);
      const key = await gw.createKey([...mode]);
      for (const c of cases) {
        const body = JSON.stringify(c.body);
        const viaGateway = await raw(`${gw.base}${surface}${c.path}`, { authorization: `Bearer ${key.key}`, ...c.headers }, body);
        const direct = await raw(`${gw.mock.url}/v1${c.path}`, c.headers, body);
        t.equal(direct.status, c.status, `${c.name}: the provider answers ${c.status}`);
        t.equal(viaGateway.status, c.status, `${c.name}: same status`);
        t.equal(viaGateway.bytes.toString('latin1'), direct.bytes.toString('latin1'), `${c.name}: same body`);
        t.equal(viaGateway.headers.get('content-type'), direct.headers.get('content-type'), `${c.name}: same content-type`);
        t.equal(viaGateway.headers.get('retry-after'), null, `${c.name}: no retry-after added`);
        const listed = (await usageOf(gw.base, key.key)).requests[0];
        t.equal(listed.error, `upstream_status_${c.status}`, `${c.name}: listed as an error`);
        t.equal(listed.status, c.status);
        t.equal(listed.tokensCharged, 0, `${c.name}: nothing charged`);
        if (surface === '/v1') t.equal(listed.costUsd, '0.000000', `${c.name}: zero cost`);
      }
      const usage = await usageOf(gw.base, key.key);
      t.equal(usage.requests.length, cases.length, 'every forwarded call is listed');
      if (surface === '/v1') t.equal(usage.key.balanceUsd, '1.000000', 'nothing billed');
      else t.equal(usage.key.usedTokens, 0, 'no tokens used');
    });
  }
});
