import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { post, runCli, startGateway } from './helpers/harness.js';

// `tollgate serve` stops on SIGTERM by finishing what is in flight: a slow call that started
// before the signal completes and is billed, new connections are refused, and the exit is 0.

for (const workers of [1, 2]) {
  t.test(`SIGTERM drains requests in flight, then exits 0 (workers: ${workers})`, async (t) => {
    const gw = await startGateway(t, workers > 1 ? { workers } : {});
    const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
    const slow = post(`${gw.base}/v1/chat/completions`, key, { model: 'gpt-4o-mini', messages: [], mock: { delayMs: 1500, inputTokens: 100, outputTokens: 10 } });
    const stream = post(`${gw.base}/v1/messages`, key, { model: 'claude-haiku-4-5', max_tokens: 8, stream: true, messages: [], mock: { chunks: 10, chunkDelayMs: 120 } }, { 'anthropic-version': '2023-06-01' });
    await new Promise((r) => setTimeout(r, 300));
    gw.proc.kill('SIGTERM');
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
