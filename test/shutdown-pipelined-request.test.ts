/**
 * Shutdown ends when the last call in flight ends, even with connections around that carry no
 * call: a client that has sent half a request head is closed then, not waited for. And a
 * pipelined request cut off with its connection before its turn (Node never closes its waiting
 * response) is not counted as a call in flight.
 */
import t from 'tap';
import { closed, open, portOf } from './helpers/raw-http.js';
import { startGateway } from './helpers/harness.js';

t.test('a half-sent request head and a cut-off pipelined call do not hold up shutdown', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const port = portOf(gw.base);
  const exited = new Promise<{ code: number | null; at: number }>((resolve) => gw.proc.once('exit', (code) => resolve({ code, at: Date.now() })));
  const call = (tag: string): string => {
    const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [], mock: { hold: tag } });
    return `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`;
  };

  // A call and a request pipelined behind it; then the client goes away.
  const cut = await open(port);
  cut.write(`${call('cut')}GET /usage HTTP/1.1\r\nhost: x\r\n\r\n`);
  await gw.mock.waitHeld('cut');
  cut.destroy();
  // A call in flight on a connection that stays, and a client stuck half-way through its head.
  const inFlight = await open(port);
  inFlight.write(call('last'));
  await gw.mock.waitHeld('last');
  const slow = await open(port);
  slow.write('POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n');

  gw.proc.kill('SIGTERM');
  gw.mock.release('cut');
  gw.mock.release('last');
  await closed(inFlight);
  const lastEnded = Date.now();
  await closed(slow);
  const { code, at } = await exited;
  t.equal(code, 0, 'exit code 0');
  // Waiting on either would mean waiting for the 30 s drain limit. (The 1 s bound of
  // shutdown-keepalive.test.ts is not repeated here: this test is about what is waited for.)
  t.ok(at - lastEnded < 5000, `exited ${at - lastEnded} ms after the last call ended, not at the 30 s drain limit`);
});
