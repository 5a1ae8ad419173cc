/**
 * Where Node's HTTP parser refuses a request — a header with a NUL or a folded line (a key pasted
 * with its line break), bad chunked framing, headers over the limit — the client still gets the
 * gateway's error envelope (400 `malformed_request`, 431 `headers_too_large`), then the
 * connection is closed. A response already begun is never followed by a second status line.
 * Nothing reaches the provider, nothing is billed or listed.
 */
import t from 'tap';
import { closed, exchange, open, parseResponses, portOf, readUntil, type RawResponse } from './helpers/raw-http.js';
import { startGateway, usageOf } from './helpers/harness.js';
import { eventually } from './helpers/client-gone.js';

const CHAT = '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}';

function checkEnvelope(t: Tap.Test, r: RawResponse | undefined, status: number, code: string, key: string): void {
  t.ok(r, `${code}: an answer came`);
  if (r === undefined) return;
  t.equal(r.status, status, `${code}: status ${status}`);
  t.match(r.headers['content-type'], /^application\/json/, `${code}: JSON`);
  t.equal(r.headers['content-length'], String(r.body.length), `${code}: framed by its length`);
  t.equal(r.headers.connection, 'close', `${code}: the connection is closed after it`);
  t.match(r.headers['x-request-id'], /^req_/, `${code}: carries a request id`);
  t.equal(r.headers['access-control-allow-origin'], '*', `${code}: CORS header`);
  const body = JSON.parse(r.body.toString('utf8'));
  t.match(body, { error: { type: 'invalid_request_error', code, param: null, message: String } }, `${code}: the envelope`);
  t.notMatch(r.body.toString('latin1'), key.slice(12), `${code}: no part of the key past its prefix`);
}

t.test('requests Node refuses are answered with the error envelope', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const port = portOf(gw.base);
  const head = (lines: string[]): string => `${lines.join('\r\n')}\r\n\r\n`;

  const cases: Array<[string, string, number, string]> = [
    ['a key pasted with its line break (a folded header)', head([
      'POST /v1/chat/completions HTTP/1.1', 'host: x', 'content-type: application/json', `content-length: ${CHAT.length}`,
      `authorization: Bearer ${key.slice(0, 20)}`, ` ${key.slice(20)}`,
    ]) + CHAT, 400, 'malformed_request'],
    ['a NUL in a header value', head([
      'POST /v1/chat/completions HTTP/1.1', 'host: x', `content-length: ${CHAT.length}`, `authorization: Bearer ${key}\0`,
    ]) + CHAT, 400, 'malformed_request'],
    ['headers over the limit', head([
      'GET /v1/models HTTP/1.1', 'host: x', `authorization: Bearer ${key}`, `x-padding: ${'a'.repeat(20_000)}`,
    ]), 431, 'headers_too_large'],
    ['bad chunked framing in a body being read', head([
      'POST /v1/chat/completions HTTP/1.1', 'host: x', 'content-type: application/json', 'transfer-encoding: chunked', `authorization: Bearer ${key}`,
    ]) + `${CHAT.length.toString(16)}\r\n${CHAT}\r\nzz\r\n\r\n`, 400, 'malformed_request'],
    ['content-length and transfer-encoding together', head([
      'POST /v1/chat/completions HTTP/1.1', 'host: x', 'content-length: 5', 'transfer-encoding: chunked', `authorization: Bearer ${key}`,
    ]) + '0\r\n\r\n', 400, 'malformed_request'],
    ['an HTTP/1.1 request without Host', head([
      'POST /v1/chat/completions HTTP/1.1', `content-length: ${CHAT.length}`, `authorization: Bearer ${key}`,
    ]) + CHAT, 400, 'malformed_request'],
    ['a request line that is not HTTP', 'GET /v1/models HTTP/9.9\r\n\r\n', 400, 'malformed_request'],
  ];
  for (const [name, bytes, status, code] of cases) {
    const { data } = await exchange(port, bytes);
    const { responses, rest } = parseResponses(data);
    t.equal(responses.length, 1, `${name}: one answer`);
    checkEnvelope(t, responses[0], status, code, key);
    t.equal(rest.length, 0, `${name}: nothing after it`);
  }

  t.equal(gw.mock.requests.length, 0, 'nothing reached the provider');
  t.same((await usageOf(gw.base, key)).requests, [], 'nothing billed or listed');
});

t.test('a parse error on a pipelined request: answered after an ended response, never inside one under way', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const port = portOf(gw.base);

  // GET /usage is answered at once, before its (broken) chunked body is read: the envelope follows it.
  const after = await exchange(port, 'GET /usage HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n\r\n');
  const both = parseResponses(after.data).responses;
  t.same(both.map((r) => r.status), [200, 400], 'the page, then the envelope');
  t.equal(JSON.parse(both[1]!.body.toString()).error.code, 'malformed_request');

  // A stream under way, and garbage pipelined behind it: the connection is closed, nothing inserted.
  const body = JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: [], mock: { hold: 'stream', holdAfter: 1 } });
  const streaming = `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`;
  const socket = await open(port);
  socket.write(streaming);
  await readUntil(socket, (d) => d.includes('"content":"tok0 "'));
  const rest: Buffer[] = [];
  socket.on('data', (d: Buffer) => rest.push(d));
  socket.write('NOT HTTP AT ALL\r\n\r\n');
  await closed(socket);
  t.notMatch(Buffer.concat(rest).toString('latin1'), /HTTP\/1\.1/, 'no status line inside the stream');
  gw.mock.release('stream');
});

t.test('a client that ends its side in the middle of a body: its request has one access-log line, the cut no second one', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const port = portOf(gw.base);
  /** A chat request whose body stops at 23 of the 200 bytes it announces; then the client's FIN. */
  const cut = (auth: string): string => `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nauthorization: Bearer ${auth}\r\ncontent-length: 200\r\n\r\n{"model":"gpt-4o-mini",`;
  const left = await exchange(port, cut(key));
  t.same(parseResponses(left.data).responses, [], 'a request cut in its body is not answered');
  const refused = parseResponses((await exchange(port, cut(`gw_live_${'0'.repeat(32)}`))).data).responses;
  t.same(refused.map((r) => r.status), [401], 'an unknown key is refused before its body comes, and only that');
  // A request after both: by its line, every line of theirs has been written.
  const barrier = parseResponses((await exchange(port, 'GET /v1/nope HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n')).data).responses[0]!;
  const accessLines = (): Array<{ requestId: string; status: number; code: string }> =>
    gw.serverOut().split('\n').filter((l) => l.startsWith('{"time"')).map((l) => JSON.parse(l));
  const lines = await eventually(async () => {
    const all = accessLines();
    return all.some((l) => l.requestId === barrier.headers['x-request-id']) && all.some((l) => l.status === 499) ? all : undefined;
  });
  t.same(lines.map((l) => `${l.status} ${l.code}`).sort(), ['401 invalid_api_key', '404 unknown_endpoint', '499 client_gone'], 'one line per request: none for the cuts themselves');
});
