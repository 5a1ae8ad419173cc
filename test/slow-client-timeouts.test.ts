/**
 * Slow clients are timed out with the limits of the configuration: a request whose headers are
 * not complete `limits.clientHeadersTimeoutMs` after its first byte, or whose body has not all
 * arrived `limits.clientRequestTimeoutMs` after it, is answered 408 `request_timeout` with the
 * error envelope and its connection closed. Nothing reaches the provider.
 */
import t from 'tap';
import { closed, open, parseResponses, portOf } from './helpers/raw-http.js';
import { defaultConfig, startGateway, usageOf } from './helpers/harness.js';

t.test('slow headers and slow bodies get 408 request_timeout', async (t) => {
  const gw = await startGateway(t, {
    config: (url) => ({ ...defaultConfig(url), limits: { clientHeadersTimeoutMs: 300, clientRequestTimeoutMs: 600 } }),
  });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const port = portOf(gw.base);

  const answerOf = async (first: string): Promise<ReturnType<typeof parseResponses>['responses']> => {
    const socket = await open(port);
    const chunks: Buffer[] = [];
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.write(first); // and nothing more: the server must give up on its own
    await closed(socket);
    return parseResponses(Buffer.concat(chunks)).responses;
  };

  const cases: Array<[string, string]> = [
    ['headers never completed', `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${key}\r\n`],
    ['a body that stops half-way', `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"model":"gpt-4o-mini",`],
  ];
  for (const [name, first] of cases) {
    const responses = await answerOf(first);
    t.equal(responses.length, 1, `${name}: one answer, then the connection closed`);
    t.equal(responses[0]?.status, 408, `${name}: 408`);
    t.match(JSON.parse(responses[0]?.body.toString() ?? '{}'), { error: { code: 'request_timeout', type: 'invalid_request_error', param: null } }, `${name}: the envelope`);
  }
  t.equal(gw.mock.requests.length, 0, 'nothing reached the provider');
  t.same((await usageOf(gw.base, key)).requests, [], 'nothing billed or listed');
});
