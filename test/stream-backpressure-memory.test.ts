import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect, createServer, type AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import t, { type Test } from 'tap';
import { defaultConfig, startGateway, usageOf } from './helpers/harness.js';

// A slow client never makes the gateway buffer the answer: while the client is behind, the
// provider is paused. The provider's bytes pass through a counting relay; the client stops
// reading after the first 4 MB of a 256 MB stream and waits until the provider has stopped
// sending. A gateway that buffered would let the provider send it all. Every byte then
// arrives, and the call is billed.
//
// What the relay has sent when the provider stops is what every buffer on the way holds: the
// gateway's own and the kernel's (a loopback socket's buffers can grow to tens of MB). Peak
// RSS is reported, not asserted: V8 frees dead socket buffers only at a collection, and one
// may be put off until some 64 MB of them have accumulated, so RSS does not tell garbage from
// a held answer.

const MB = 1024 * 1024;
const SIZE = 256 * MB;

function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m![1]) * 1024;
}

/** A TCP relay to the mock provider that counts the bytes the provider has sent through it. */
async function countingRelay(t: Test): Promise<{ port: number; target: { port: number }; sent: () => number }> {
  const target = { port: 0 };
  let sent = 0;
  const server = createServer((client) => {
    const provider = connect(target.port, '127.0.0.1');
    provider.on('data', (chunk: Buffer) => (sent += chunk.length));
    client.pipe(provider);
    provider.pipe(client); // pauses the provider while the gateway's socket is full
    client.on('error', () => provider.destroy());
    provider.on('error', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { port: (server.address() as AddressInfo).port, target, sent: () => sent };
}

/** Waits until `sent()` has not moved for 300 ms (throws after 30 s): the provider has stopped. */
async function stalled(sent: () => number): Promise<number> {
  const deadline = Date.now() + 30_000;
  for (let last = -1; ; ) {
    const now = sent();
    if (now === last) return now;
    if (Date.now() > deadline) throw new Error(`the provider never stopped: ${now} bytes sent`);
    last = now;
    await sleep(300);
  }
}

t.test('a reader that stops: the provider is paused, not buffered; every byte arrives; the call is billed', async (t) => {
  const relay = await countingRelay(t);
  const gw = await startGateway(t, {
    config: (mockUrl) => {
      relay.target.port = Number(new URL(mockUrl).port);
      return defaultConfig(`http://127.0.0.1:${relay.port}`);
    },
  });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '100']);
  const pid = gw.proc.pid!;
  const baseline = rssOf(pid);
  let peak = baseline;
  const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 20);
  t.teardown(() => clearInterval(sampler));

  const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [], stream: true, stream_options: { include_usage: true }, mock: { bytes: SIZE, outputTokens: SIZE / 4 } });
  const { received, sentAtStop, receivedAtStop } = await new Promise<{ received: number; sentAtStop: number; receivedAtStop: number }>((resolve, reject) => {
    let received = 0;
    let sentAtStop = 0;
    let receivedAtStop = 0;
    const req = request(`${gw.base}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } }, (res) => {
      res.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (receivedAtStop === 0 && received >= 4 * MB) {
          receivedAtStop = received;
          res.pause();
          stalled(relay.sent).then((sent) => {
            sentAtStop = sent;
            res.resume();
          }, reject);
        }
      });
      res.on('end', () => resolve({ received, sentAtStop, receivedAtStop }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
  clearInterval(sampler);

  t.comment(`the provider stopped after ${(sentAtStop / MB).toFixed(1)} MB with ${(receivedAtStop / MB).toFixed(1)} MB read; gateway RSS ${(baseline / MB).toFixed(1)} MB at start, peak growth ${((peak - baseline) / MB).toFixed(1)} MB`);
  t.ok(sentAtStop > 0 && sentAtStop < SIZE / 2, 'while the client read nothing, the provider stopped with less than half of the stream sent');
  t.ok(received > SIZE, 'the stream arrived whole');
  t.ok(relay.sent() > SIZE, 'the provider sent it all once the client read again');

  const u = await usageOf(gw.base, key);
  t.match(u.requests[0], { outputTokens: SIZE / 4, estimated: false, error: null });
});
