import { connect, type Socket } from 'node:net';
import t from 'tap';
import { eventually } from './helpers/client-gone.js';
import { allRecords, defaultConfig, post, startGateway } from './helpers/harness.js';

// Clients that stop reading must not pin the provider's connections: a client that accepts no
// bytes for limits.clientStallMs is treated as gone (its call billed as a client-gone call) and
// its provider connection goes back to the pool. Four stalled readers on a pool of four
// connections, then an innocent caller: it is answered within a second, where before it waited
// for as long as the stalled readers chose.
//
// Event-driven: the mock holds every stalled stream before its first delta until all four are
// in (so the four connections are taken), then lets them go; each sends 16 MB, far more than
// the kernel buffers between the gateway and a client that reads nothing (the gateway's send
// buffer tops out at 4 MB here, and a socket that never reads keeps its initial receive buffer).

const STALLED = 4;

/** Sends a streamed call over a socket that never reads a byte of the answer. */
function stalledCall(base: string, key: string, body: unknown): Promise<Socket> {
  const { hostname, port } = new URL(base);
  const payload = Buffer.from(JSON.stringify(body));
  const head = [
    'POST /v1/chat/completions HTTP/1.1', `host: ${hostname}`, 'content-type: application/json',
    `content-length: ${payload.length}`, `authorization: Bearer ${key}`, '', '',
  ].join('\r\n');
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    // Paused before it connects: Node never starts reading, so nothing is taken off the wire.
    socket.pause();
    socket.once('error', () => undefined);
    socket.once('connect', () => {
      socket.write(Buffer.concat([Buffer.from(head), payload]));
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

t.test('stalled readers on a pool of 4 connections do not delay an innocent caller by more than a second', async (t) => {
  const gw = await startGateway(t, {
    config: (url) => ({ ...defaultConfig(url), limits: { upstreamConnections: 4, clientStallMs: 200 } }),
  });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '100']);
  const sockets: Socket[] = [];
  t.teardown(() => sockets.forEach((s) => s.destroy()));
  const stream = {
    model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true },
    mock: { inputTokens: 100, outputTokens: 4000, bytes: 16 * 1024 * 1024, hold: 'stall', holdAfter: 0 },
  };
  for (let i = 0; i < STALLED; i++) sockets.push(await stalledCall(gw.base, key, stream));
  await gw.mock.waitHeld('stall', STALLED);
  gw.mock.release('stall');

  // Every connection of the pool is taken by a stalled reader's stream now.
  const started = Date.now();
  const innocent = await post(`${gw.base}/v1/chat/completions`, key, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
  const waited = Date.now() - started;
  t.equal(innocent.status, 200, 'the innocent call is answered');
  t.ok(waited < 1000, `it waited ${waited} ms (< 1000 ms)`);

  // The stalled readers' calls end as client-gone calls, billed from the provider's usage.
  const records = await eventually(async () => {
    const { records } = await allRecords(gw.base, key, 10);
    return records.length === STALLED + 1 ? records : undefined;
  });
  const gone = records.filter((r) => r.stream);
  t.equal(gone.length, STALLED);
  t.same(gone.filter((r) => !(r.clientGone && !r.estimated && r.error === null && r.outputTokens === 4000)), [], 'each stalled call: client gone, billed from the provider usage');
  t.match(gw.serverLog(), /client_stalled/, 'the stall is logged');
});
