import t from 'tap';
import { defaultConfig, startGateway } from './helpers/harness.js';
import { open, portOf, postBytes, readUntil } from './helpers/raw-http.js';

// Events that reach the gateway together go to the client together: a stream whose events the
// provider writes one by one in the same tick (each its own chunk of the chunked encoding, sent
// together: one read on loopback, a few KB in one segment) reaches the client as one chunk, not
// one chunk per event; with the usage chunk taken out for a client that did not ask for it, too. The bytes are the stream's, unchanged (passthrough-bytes
// and usage-chunk-filter pin those).

/** The sizes of the chunks of a chunked body, the last (0) left out. */
function chunkSizes(data: Buffer): number[] {
  let at = data.indexOf('\r\n\r\n') + 4;
  const sizes: number[] = [];
  for (;;) {
    const eol = data.indexOf('\r\n', at);
    if (eol === -1) throw new Error(`unterminated chunked body: ${data.toString('latin1').slice(-200)}`);
    const size = parseInt(data.subarray(at, eol).toString('latin1'), 16);
    if (size === 0) return sizes;
    sizes.push(size);
    at = eol + 2 + size + 2;
  }
}

t.test('events the provider sends together reach the client as one chunk', async (t) => {
  const gw = await startGateway(t, { config: defaultConfig });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '10']);
  const cases = [
    ['the client asked for usage', { stream_options: { include_usage: true } }, 24],
    ['the usage chunk taken out', {}, 23],
  ] as const;
  for (const [label, extra, events] of cases) {
    const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream: true, ...extra, mock: { chunks: 20, writePerEvent: true } });
    const socket = await open(portOf(gw.base));
    t.teardown(() => socket.destroy());
    socket.write(postBytes('/v1/chat/completions', key, body));
    const data = await readUntil(socket, (d) => d.subarray(-5).toString('latin1') === '0\r\n\r\n');
    t.match(data.toString('latin1'), /^HTTP\/1\.1 200 /, label);
    const sizes = chunkSizes(data);
    t.equal(sizes.length, 1, `${label}: one chunk (sizes ${sizes.join(', ')})`);
    t.equal(data.toString('utf8').split('\n\n').length - 1, events, `${label}: every event is in it`);
  }
});
