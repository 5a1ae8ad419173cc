import t from 'tap';
import { defaultConfig, post, startGateway } from './helpers/harness.js';

// A response that reached the client in full is billed even if the process is killed the
// next instant: the charge and the record are committed before the last byte goes out.

for (const fsync of ['interval', 'commit'] as const) {
  t.test(`storage.fsync ${fsync}: SIGKILL right after each complete response loses no charge`, async (t) => {
    const gw = await startGateway(t, { config: (url) => ({ ...defaultConfig(url), storage: { fsync } }) });
    const { id, key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
    const stream = { model: 'gpt-4o-mini', stream: true, stream_options: { include_usage: true }, messages: [], mock: { inputTokens: 1000, outputTokens: 100 } };
    const plain = { model: 'gpt-4o-mini', messages: [], mock: { inputTokens: 2000, outputTokens: 300 } };
    // Both calls complete; the server is killed (no shutdown, no flush) the moment the second ends.
    t.equal((await post(`${gw.base}/v1/chat/completions`, key, stream)).status, 200);
    const last = await post(`${gw.base}/v1/chat/completions`, key, plain);
    gw.proc.kill('SIGKILL');
    t.equal(last.status, 200);
    await gw.stop();

    const shown = await gw.cli(['keys', 'show', id, '--json']);
    t.equal(shown.code, 0, shown.stderr);
    const spent = (1000 * 150 + 100 * 600) + (2000 * 150 + 300 * 600);
    t.equal(JSON.parse(shown.stdout).balanceUsd, ((1e9 - spent) / 1e9).toFixed(6), 'both calls are charged');
  });
}
