import { connect, type Socket } from 'node:net';
import t from 'tap';
import { eventually } from './helpers/client-gone.js';
import { allRecords, defaultConfig, post, startGateway } from './helpers/harness.js';

// Clients that stop reading must not pin the provider's connections: a client that accepts no
// bytes for limits.clientStallMs is treated as gone (its call billed as a client-gone call) and
// its provider connection goes back to the pool. Four stalled readers on a pool of four
// connections, then an innocent caller: it is answered within a second of the first stalled
// reader's last accepted byte, where before it waited for as long as the stalled readers chose.
//
// Event-driven: the mock holds every stalled stream before its first delta until all four are
// in (so the four connections are taken), then lets them go; each sends 10 MB, far more than
// the kernel buffers between the gateway and a client that reads nothing (the gateway's send
// buffer tops out at 4 MB here, and a socket that never reads keeps its initial receive buffer).
//
// The second is counted from the moment a stalled reader stopped taking bytes: the gateway's
// `client_stalled` line, less clientStallMs. Before that moment the readers were still taking
// bytes (into kernel buffers), and how long moving those megabytes takes depends on how busy
// the machine is, not on the gateway's limit. Deltas of 64 KiB keep the per-event work small.

const STALLED = 4;
const STALL_MS = 200;

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
    config: (url) => ({ ...defaultConfig(url), limits: { upstreamConnections: 4, clientStallMs: STALL_MS } }),
  });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '100']);
  const sockets: Socket[] = [];
  t.teardown(() => sockets.forEach((s) => s.destroy()));
  const stream = {
    model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true },
    mock: { inputTokens: 100, outputTokens: 4000, bytes: 10 * 1024 * 1024, chunks: 160, hold: 'stall', holdAfter: 0 },
  };
  for (let i = 0; i < STALLED; i++) sockets.push(await stalledCall(gw.base, key, stream));
  await gw.mock.waitHeld('stall', STALLED);
  gw.mock.release('stall');

  // Every connection of the pool is taken by a stalled reader's stream now.
  const started = Date.now();
  const innocent = await post(`${gw.base}/v1/chat/completions`, key, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
  const answeredAt = Date.now();
  t.equal(innocent.status, 200, 'the innocent call is answered');
  // The log is read from the gateway's stderr, which may arrive after the answer.
  const stalls = await eventually(async () => {
    const times = gw.serverLog().split('\n').filter((l) => l.includes('"client_stalled"')).map((l) => Date.parse(JSON.parse(l).time as string));
    return times.length > 0 ? times : undefined;
  });
  // The pool was full: the innocent call got a connection only once a stalled reader was dropped.
  t.ok(Math.min(...stalls) <= answeredAt, 'answered after the first stalled reader was dropped');
  const stoppedTaking = Math.min(...stalls) - STALL_MS;
  const delayed = answeredAt - stoppedTaking;
  t.ok(delayed < 1000, `answered ${delayed} ms after the first stalled reader stopped taking bytes (< 1000 ms; ${answeredAt - started} ms after the streams began)`);

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
