/**
 * The shutdown's count of calls in flight (src/http/drain.ts) over many calls that start and end
 * in any order: slots are reused, a call ends once however many ways it closes, and the drain
 * ends exactly when the last call in flight ends — not before, not never. Real node:http
 * requests and responses on a real server.
 */
import { once } from 'node:events';
import { Agent, createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { Drain } from '../src/http/drain.js';

interface Held { res: ServerResponse; req: IncomingMessage }

t.test('the drain ends when the last of many calls, ended out of order, ends', async (t) => {
  const drain = new Drain();
  const held: Held[] = [];
  const arrivals: ((h: Held) => void)[] = [];
  const server = createServer((req, res) => {
    drain.track(req, res);
    const h = { req, res };
    held.push(h);
    arrivals.shift()?.(h);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  const { port } = server.address() as AddressInfo;
  const agent = new Agent({ keepAlive: true, maxSockets: 100 });
  t.teardown(() => agent.destroy());
  const answers: Promise<{ status: number; connection: string | undefined }>[] = [];
  const call = async (): Promise<Held> => {
    const arrived = new Promise<Held>((resolve) => arrivals.push(resolve));
    answers.push(new Promise((resolve, reject) => {
      const r = request({ port, host: '127.0.0.1', path: '/', agent }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection }));
      });
      r.on('error', reject);
      r.end();
    }));
    return arrived;
  };
  const end = (h: Held): void => {
    h.res.end('ok');
  };

  // 40 calls in, 30 of them ended in a scrambled order, 20 more in (reusing freed slots).
  const first = [];
  for (let i = 0; i < 40; i++) first.push(await call());
  for (let i = 0; i < 30; i++) {
    const h = first.splice((i * 7) % first.length, 1)[0]!;
    end(h);
    await once(h.res, 'close');
  }
  const second = [];
  for (let i = 0; i < 20; i++) second.push(await call());
  const open = [...first, ...second];
  t.equal(open.length, 30, '30 calls in flight');

  let idle = 0;
  drain.start(() => idle++);
  t.equal(idle, 0, 'the drain does not end while calls are in flight');
  // A response closed twice (its own close, then again) counts once.
  const last = open.pop()!;
  for (const h of open) {
    end(h);
    await once(h.res, 'close');
    h.res.emit('close');
    t.equal(idle, 0, 'not ended while one call is left');
  }
  end(last);
  await once(last.res, 'close');
  t.equal(idle, 1, 'ended once, when the last call ended');
  last.res.emit('close');
  t.equal(idle, 1, 'a second close of the last call does not end it again');

  const results = await Promise.all(answers);
  t.ok(results.every((r) => r.status === 200), 'every call was answered');
  t.equal(results.filter((r) => r.connection === 'close').length, 30, 'the 30 calls in flight at the start of the drain were answered with connection: close');
});

t.test('with no call in flight the drain ends at once', async (t) => {
  const drain = new Drain();
  let idle = 0;
  drain.start(() => idle++);
  t.equal(idle, 1);
});
