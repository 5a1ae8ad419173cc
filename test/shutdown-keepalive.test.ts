/**
 * Shutdown waits for calls in flight and for nothing else. On SIGTERM the gateway stops
 * accepting, closes every idle keep-alive connection at once, answers a call whose answer has
 * not begun with `connection: close`, closes the connection of a stream already under way after
 * its last byte, and exits 0 as soon as the last call in flight has ended — not when some
 * drain limit runs out. The mock holds the calls in flight until the test releases them, so
 * every step happens in a known order.
 */
import type { Socket } from 'node:net';
import t from 'tap';
import { closed, open, parseResponses, portOf, readUntil } from './helpers/raw-http.js';
import { startGateway } from './helpers/harness.js';

const IDLE_CLIENTS = 50;
const STREAMS = 5;
/** `gateway.close()`'s default limit: a process waiting for it instead of the last call would exit this late. */
const DRAIN_LIMIT_MS = 30_000;

function request(method: string, path: string, key: string, body?: unknown, extra: string[] = []): string {
  const payload = body === undefined ? '' : JSON.stringify(body);
  return [
    `${method} ${path} HTTP/1.1`, 'host: 127.0.0.1', `authorization: Bearer ${key}`,
    ...(body === undefined ? [] : ['content-type: application/json', `content-length: ${Buffer.byteLength(payload)}`]),
    ...extra, '', payload,
  ].join('\r\n');
}

const oneResponse = (d: Buffer): boolean => parseResponses(d).responses.length === 1;

for (const workers of [1, 2]) {
  t.test(`SIGTERM: idle keep-alive connections close at once, exit follows the last call in flight (workers: ${workers})`, async (t) => {
    const gw = await startGateway(t, workers > 1 ? { workers } : {});
    const { key } = await gw.createKey(['--mode', 'credit', '--balance', '5']);
    const port = portOf(gw.base);
    // 'close', not 'exit': its output read to the end as well (the `stopped` line comes last).
    const exited = new Promise<{ code: number | null; at: number }>((resolve) => gw.proc.once('close', (code) => resolve({ code, at: Date.now() })));

    // 50 keep-alive clients, each idle after one call on its own connection.
    const idle: Socket[] = await Promise.all(Array.from({ length: IDLE_CLIENTS }, async () => {
      const socket = await open(port);
      socket.write(request('GET', '/v1/models', key));
      const reply = parseResponses(await readUntil(socket, oneResponse)).responses[0]!;
      t.equal(reply.headers.connection, 'keep-alive');
      return socket;
    }));

    // Five streams under way (headers and first events sent), held by the mock.
    const streams = await Promise.all(Array.from({ length: STREAMS }, async () => {
      const socket = await open(port);
      socket.write(request('POST', '/v1/messages', key, {
        model: 'claude-haiku-4-5', max_tokens: 16, stream: true, messages: [], mock: { chunks: 4, hold: 'streams', holdAfter: 1 },
      }, ['anthropic-version: 2023-06-01']));
      await readUntil(socket, (d) => d.includes('content_block_delta'));
      return socket;
    }));
    // And one plain call whose answer has not begun.
    const plain = await open(port);
    plain.write(request('POST', '/v1/chat/completions', key, { model: 'gpt-4o-mini', messages: [], mock: { hold: 'plain' } }));
    await gw.mock.waitHeld('streams', STREAMS);
    await gw.mock.waitHeld('plain');

    gw.proc.kill('SIGTERM');
    await Promise.all(idle.map(closed));
    t.pass(`all ${IDLE_CLIENTS} idle keep-alive connections were closed while the calls were still held`);
    if (workers === 1) await t.rejects(open(port), { code: 'ECONNREFUSED' }, 'new connections are refused');

    gw.mock.release('plain');
    const answer = parseResponses(await readUntil(plain, oneResponse)).responses[0]!;
    t.equal(answer.status, 200, 'the plain call in flight is answered');
    t.equal(answer.headers.connection, 'close', 'with connection: close');
    await closed(plain);

    gw.mock.release('streams');
    await Promise.all(streams.map(async (socket) => {
      const received = await readUntil(socket, (d) => d.includes('\r\n0\r\n\r\n'));
      t.match(received.toString(), /event: message_stop/, 'each stream ran to its end');
      await closed(socket);
    }));
    const lastEnd = Date.now();
    t.pass('each stream connection was closed after its last byte');

    const { code, at } = await exited;
    t.equal(code, 0, 'exit code 0');
    // The mechanism, not a stopwatch: the exit follows the last call's end, not the drain limit
    // (30 s). The gap itself (tens of ms when idle) is scheduling on a loaded machine, so the
    // bound only tells the two apart; the process's own figure is on its `stopped` line.
    t.ok(at - lastEnd < DRAIN_LIMIT_MS / 3, `exited ${at - lastEnd} ms after the last stream ended, long before the drain limit`);
    const stopped = /\{[^\n]*"event":"stopped"[^\n]*\}/.exec(gw.serverLog())?.[0];
    t.ok(stopped !== undefined, `the stop ran to its end and said so (${stopped})`);

    const shown = await gw.cli(['keys', 'list', '--json']);
    // 5 streams (11 in, 7 out at claude-haiku-4-5: 1000 and 5000 nUSD) and the plain call (gpt-4o-mini: 150 and 600).
    const spent = STREAMS * (11 * 1000 + 7 * 5000) + (11 * 150 + 7 * 600);
    t.equal(JSON.parse(shown.stdout)[0].balanceUsd, ((5e9 - spent) / 1e9).toFixed(6), 'every call in flight was billed');
  });
}

// Right after start: the signal handler is in place before the listening line is printed, so a
// SIGTERM sent the moment it is read stops the process cleanly (exit 0, not killed by the
// signal); with workers, the primary exits whichever order node:cluster reports its workers'
// 'exit' and 'disconnect' in (it used to wait for ever when 'exit' came first).
for (const workers of [1, 2]) {
  t.test(`SIGTERM the moment the listening line is out: exit 0 (workers: ${workers})`, async (t) => {
    const gw = await startGateway(t, workers > 1 ? { workers } : {});
    // 'close', not 'exit': its output read to the end as well (the `stopped` line comes last).
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => gw.proc.once('close', (code, signal) => resolve({ code, signal })));
    gw.proc.kill('SIGTERM');
    const { code, signal } = await exited;
    t.same({ code, signal }, { code: 0, signal: null }, 'exit 0, not ended by the signal\'s default action');
    t.match(gw.serverLog(), /"event":"stopped"/, 'stopped through the drain');
  });
}
