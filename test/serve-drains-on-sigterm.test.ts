import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { post, runCli, startGateway } from './helpers/harness.js';
import { closed, open, parseResponses, portOf, readUntil } from './helpers/raw-http.js';

// `tollgate serve` stops on SIGTERM by finishing what is in flight: a slow call that started
// before the signal completes and is billed, new connections are refused, and the exit is 0.

for (const workers of [1, 2]) {
  t.test(`SIGTERM drains requests in flight, then exits 0 (workers: ${workers})`, async (t) => {
    const gw = await startGateway(t, workers > 1 ? { workers } : {});
    const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
    // Idle keep-alive connections (spread over the workers): their closing shows the drain began.
    const idle = await Promise.all([1, 2, 3, 4].map(async () => {
      const socket = await open(portOf(gw.base));
      socket.write(`GET /usage HTTP/1.1\r\nhost: x\r\n\r\n`);
      await readUntil(socket, (d) => parseResponses(d).responses.length === 1);
      return socket;
    }));
    // A plain call and a stream, each held by the mock until the drain has begun.
    const slow = post(`${gw.base}/v1/chat/completions`, key, { model: 'gpt-4o-mini', messages: [], mock: { hold: 'plain', inputTokens: 100, outputTokens: 10 } });
    const stream = post(`${gw.base}/v1/messages`, key, { model: 'claude-haiku-4-5', max_tokens: 8, stream: true, messages: [], mock: { chunks: 10, hold: 'stream', holdAfter: 3 } }, { 'anthropic-version': '2023-06-01' });
    await gw.mock.waitHeld('plain');
    await gw.mock.waitHeld('stream');
    gw.proc.kill('SIGTERM');
    await Promise.all(idle.map(closed));
    gw.mock.release('plain');
    gw.mock.release('stream');
    const [plain, streamed] = await Promise.all([slow, stream]);
    t.equal(plain.status, 200, 'the plain call in flight completed');
    t.equal(plain.json.usage.prompt_tokens, 100);
    t.equal(streamed.status, 200);
    t.match(streamed.text, /event: message_stop/, 'the stream in flight ran to its end');
    t.equal(await gw.stop(), 0, 'exit code 0');
    await t.rejects(fetch(`${gw.base}/v1/models`), 'no longer accepting connections');
    // The records of both calls were committed before their responses ended.
    const shown = await gw.cli(['keys', 'list', '--json']);
    t.equal(JSON.parse(shown.stdout)[0].balanceUsd, ((1e9 - (100 * 150 + 10 * 600) - (11 * 1000 + 7 * 5000)) / 1e9).toFixed(6));
  });
}

for (const workers of [1, 2]) {
  t.test(`serve exits 1 with a clear line when its port is taken (workers: ${workers})`, async (t) => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    t.teardown(() => new Promise<void>((resolve) => blocker.close(() => resolve())));
    const port = (blocker.address() as AddressInfo).port;
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-test-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const args = ['serve', '--host', '127.0.0.1', '--port', String(port), '--data', join(dir, 'data')];
    if (workers > 1) args.push('--workers', String(workers));
    // runCli kills the process after its time-out: a serve that retried forever would fail here.
    const result = await runCli(args, {}, 20_000);
    t.equal(result.code, 1, 'exit code 1');
    t.match(result.stderr, /EADDRINUSE|in use/i, 'says why');
    t.notMatch(result.stdout, /listening on/, 'never claims to be listening');
  });
}
