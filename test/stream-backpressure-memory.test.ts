import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import t from 'tap';
import { startGateway, usageOf } from './helpers/harness.js';

// A slow client never makes the gateway buffer the answer: the provider is paused while the
// client is behind. Streams of 25 MB and 100 MB to a reader that keeps stopping must leave the
// gateway's memory flat — the same allowance for both, far below either size — arrive whole,
// and be billed.

const MB = 1024 * 1024;

function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m![1]) * 1024;
}

/** Streams `size` bytes through the gateway to a slow reader; returns bytes received and peak RSS. */
function slowStream(base: string, key: string, size: number, pid: number): Promise<{ received: number; peak: number }> {
  const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [], stream: true, stream_options: { include_usage: true }, mock: { bytes: size, outputTokens: size / 4 } });
  let peak = 0;
  const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 20);
  return new Promise((resolve, reject) => {
    const req = request(`${base}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } }, (res) => {
      let received = 0;
      let sincePause = 0;
      res.on('data', (chunk: Buffer) => {
        received += chunk.length;
        sincePause += chunk.length;
        // The slow reader: after every 4 MB, stop reading for 100 ms.
        if (sincePause >= 4 * MB) {
          sincePause = 0;
          res.pause();
          setTimeout(() => res.resume(), 100);
        }
      });
      res.on('end', () => {
        clearInterval(sampler);
        resolve({ received, peak });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

t.test('a slow reader: gateway RSS stays flat whatever the stream size, every byte arrives, the call is billed', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '100']);
  const pid = gw.proc.pid!;
  await slowStream(gw.base, key, 4 * MB, pid); // warm-up: JIT, pools, buffers
  const baseline = rssOf(pid);

  const small = await slowStream(gw.base, key, 25 * MB, pid);
  const large = await slowStream(gw.base, key, 100 * MB, pid);
  t.ok(small.received > 25 * MB && large.received > 100 * MB, 'both streams arrived whole');
  const growSmall = small.peak - baseline;
  const growLarge = large.peak - baseline;
  t.comment(`RSS after warm-up ${(baseline / MB).toFixed(1)} MB; peak growth ${(growSmall / MB).toFixed(1)} MB for 25 MB, ${(growLarge / MB).toFixed(1)} MB for 100 MB`);
  t.ok(growLarge < 48 * MB, 'streaming 100 MB grows RSS by far less than half of it');
  t.ok(growLarge - growSmall < 20 * MB, 'four times the bytes do not cost more memory: nothing is buffered');

  const u = await usageOf(gw.base, key);
  t.match(u.requests[0], { outputTokens: 25 * MB, estimated: false, error: null });
});
