/**
 * A body that cannot be read is refused at the byte that settles it, while the rest is still on
 * its way — nesting past `limits.maxJsonDepth`, a byte that breaks the JSON, a second top-level
 * `model` — with 400 `model_required`, never after waiting for (and holding) megabytes that
 * would be refused anyway. The rest of the body is read and dropped, so the connection stays
 * usable. Nothing reaches the provider.
 */
import t from 'tap';
import { open, parseResponses, portOf, readUntil } from './helpers/raw-http.js';
import { startGateway, usageOf } from './helpers/harness.js';

const DECLARED = 2_000_000;
const MB = 'x'.repeat(1_000_000);

t.test('hostile bodies are refused before they have arrived', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const port = portOf(gw.base);
  const head = `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\ncontent-length: ${DECLARED}\r\n\r\n`;
  const beginnings: Record<string, string> = {
    'nested past the limit (128)': `{"model":"gpt-4o-mini","messages":${'['.repeat(129)}`,
    'a broken byte after 1 MB': `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"${MB}"}],}`,
    'a second model after 1 MB': `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"${MB}"}],"model":"gpt-4o"`,
  };
  for (const [name, beginning] of Object.entries(beginnings)) {
    const socket = await open(port);
    socket.write(head + beginning); // the rest of the declared 2 MB is not sent yet
    const first = parseResponses(await readUntil(socket, (d) => parseResponses(d).responses.length === 1)).responses[0]!;
    t.equal(first.status, 400, `${name}: answered before the body ended`);
    t.equal(JSON.parse(first.body.toString()).error.code, 'model_required', `${name}: model_required`);
    // The rest arrives and is dropped; the next request on the connection is served.
    socket.write(Buffer.alloc(DECLARED - Buffer.byteLength(beginning), ' '));
    socket.write(`GET /usage/api HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${key}\r\n\r\n`);
    const next = parseResponses(await readUntil(socket, (d) => parseResponses(d).responses.length === 1)).responses[0]!;
    t.equal(next.status, 200, `${name}: the connection stays usable`);
    socket.destroy();
  }
  t.equal(gw.mock.requests.length, 0, 'nothing reached the provider');
  t.same((await usageOf(gw.base, key)).requests, [], 'nothing billed or listed');
});
