/**
 * Request heads: more header fields than `limits.maxHeaderCount` (default 200) are answered 431
 * `headers_too_large`, exactly at the limit and alike on Node 20 and 24 (Node 20, left to its own
 * limit, drops the fields past it silently, so an `Authorization` there answered
 * `missing_api_key`); a second `Host` and a request line without an HTTP version are refused
 * with 400 `malformed_request`. Each refusal is the gateway's envelope, the connection closed
 * after it, nothing forwarded or billed. Run on the LTS Node.js too: `npm run test:lts -- test/request-head-limits.test.ts`.
 */
import t, { type Test } from 'tap';
import { defaultConfig, startGateway, usageOf, type Harness } from './helpers/harness.js';
import { open, parseResponses, portOf, readUntil, type RawResponse } from './helpers/raw-http.js';

/** GET /v1/models with `count` header fields in all, the key's `Authorization` the last of them. */
function headWithFields(count: number, key: string, requestLine = 'GET /v1/models HTTP/1.1'): string {
  const padding = Array.from({ length: count - 2 }, (_, i) => `x-pad-${i}: ${i}`);
  return [requestLine, 'host: 127.0.0.1', ...padding, `authorization: Bearer ${key}`].join('\r\n') + '\r\n\r\n';
}

/** The answer to `bytes`, sent on a new connection kept open until the answer is whole. */
async function answer(gw: Harness, bytes: string): Promise<RawResponse | undefined> {
  const socket = await open(portOf(gw.base));
  try {
    socket.write(bytes);
    return parseResponses(await readUntil(socket, (d) => parseResponses(d).responses.length > 0)).responses[0];
  } finally {
    socket.destroy();
  }
}

function refused(t: Test, r: RawResponse | undefined, status: number, code: string, what: string): void {
  t.equal(r?.status, status, `${what}: ${status}`);
  t.equal(r?.headers.connection, 'close', `${what}: the connection is closed after it`);
  t.match(JSON.parse(r?.body.toString('utf8') ?? '{}'), { error: { code, type: 'invalid_request_error', param: null } }, `${what}: the envelope, ${code}`);
}

function accessLines(gw: Harness): any[] {
  return gw.serverOut().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
}

t.test('the default limit, 200 fields: exact', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const at = await answer(gw, headWithFields(200, key));
  t.equal(at?.status, 200, '200 fields: served');
  t.equal(JSON.parse(at!.body.toString('utf8')).object, 'list');
  const sent = gw.mock.requests.length;
  refused(t, await answer(gw, headWithFields(201, key)), 431, 'headers_too_large', '201 fields');
  t.equal(gw.mock.requests.length, sent, 'nothing forwarded');
  for (let i = 0; i < 100 && !accessLines(gw).some((l) => l.code === 'headers_too_large'); i++) await new Promise((r) => setTimeout(r, 20));
  t.match(accessLines(gw).find((l) => l.code === 'headers_too_large'), { status: 431, keyPrefix: null }, 'logged with its code, before any key is read');
  t.equal((await usageOf(gw.base, key)).requests.length, 0);
});

t.test('a configured limit, below and above Node\'s own (1,000 fields on Node 20)', async (t) => {
  const gw = await startGateway(t, { config: (url) => ({ ...defaultConfig(url), limits: { maxHeaderCount: 1500, maxHeaderBytes: 64 * 1024 } }) });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const many = await answer(gw, headWithFields(1500, key));
  t.equal(many?.status, 200, '1,500 fields, the key in the last: served, not missing_api_key');
  refused(t, await answer(gw, headWithFields(1501, key)), 431, 'headers_too_large', '1,501 fields');

  const small = await startGateway(t, { config: (url) => ({ ...defaultConfig(url), limits: { maxHeaderCount: 12 } }) });
  const k = await small.createKey(['--mode', 'credit', '--balance', '1']);
  t.equal((await answer(small, headWithFields(12, k.key)))?.status, 200, '12 of 12');
  refused(t, await answer(small, headWithFields(13, k.key)), 431, 'headers_too_large', '13 of 12');
});

t.test('a second Host, and a request line without an HTTP version: 400 malformed_request', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const auth = `authorization: Bearer ${key}`;
  refused(t, await answer(gw, ['GET /v1/models HTTP/1.1', 'host: 127.0.0.1', 'host: evil.example', auth].join('\r\n') + '\r\n\r\n'), 400, 'malformed_request', 'two Host fields');
  refused(t, await answer(gw, ['GET /v1/models HTTP/1.1', 'Host: 127.0.0.1', 'HOST: 127.0.0.1', auth].join('\r\n') + '\r\n\r\n'), 400, 'malformed_request', 'the same Host twice, in other cases');
  refused(t, await answer(gw, ['GET /v1/models', 'host: 127.0.0.1', auth].join('\r\n') + '\r\n\r\n'), 400, 'malformed_request', 'no HTTP version, with headers');
  refused(t, await answer(gw, 'GET /v1/models\r\n\r\n'), 400, 'malformed_request', 'no HTTP version, no headers');
  t.equal(gw.mock.requests.length, 0, 'nothing forwarded');
  // What stays accepted: one Host; HTTP/1.0, where Host is optional.
  t.equal((await answer(gw, ['GET /v1/models HTTP/1.1', 'host: 127.0.0.1', auth].join('\r\n') + '\r\n\r\n'))?.status, 200);
  t.equal((await answer(gw, ['GET /v1/models HTTP/1.0', auth].join('\r\n') + '\r\n\r\n'))?.status, 200, 'HTTP/1.0 without Host');
});
