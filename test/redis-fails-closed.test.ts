/**
 * Fails closed: when Redis hangs (SIGSTOP), a call is refused 503 `store_unavailable` within the
 * command timeout (2 s) and nothing is forwarded; /readyz turns 503; when Redis goes on
 * (SIGCONT), calls succeed again without any restart, and the call refused meanwhile is neither
 * billed nor listed.
 */
import t from 'tap';
import { eventually } from './helpers/client-gone.js';
import { post, startGateway, usageOf } from './helpers/harness.js';

const CALL = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };
const COST = 11 * 150 + 7 * 600;

t.test('a hung Redis: refused within the bound, resumed by itself', async (t) => {
  const gw = await startGateway(t, { backend: 'redis' });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1', '--concurrency', '2']);
  t.equal((await post(`${gw.base}/v1/chat/completions`, key, CALL)).status, 200);
  const pid = gw.redis!.pid!;
  process.kill(pid, 'SIGSTOP');
  t.teardown(() => {
    try {
      process.kill(pid, 'SIGCONT');
    } catch { /* gone */ }
  });
  const started = performance.now();
  const refused = await post(`${gw.base}/v1/chat/completions`, key, CALL);
  const took = performance.now() - started;
  t.equal(refused.status, 503);
  t.equal(refused.json.error.code, 'store_unavailable');
  t.equal(refused.json.error.type, 'api_error');
  // The bound is the command timeout (2 s); a generous margin for a loaded machine.
  t.ok(took < 5_000, `refused after ${Math.round(took)} ms, within the bound`);
  t.equal(gw.mock.requests.length, 1, 'nothing forwarded');
  await eventually(async () => ((await fetch(`${gw.base}/readyz`)).status === 503 ? true : undefined));
  process.kill(pid, 'SIGCONT');
  await eventually(async () => ((await post(`${gw.base}/v1/chat/completions`, key, CALL)).status === 200 ? true : undefined));
  await eventually(async () => ((await fetch(`${gw.base}/readyz`)).status === 200 ? true : undefined));
  const u = await eventually(async () => {
    const v = await usageOf(gw.base, key);
    return v.key.heldNanoUsd === 0 ? v : undefined;
  });
  t.equal(u.requests.length, gw.mock.requests.length, 'one record per call forwarded, none for the refused one');
  t.equal(u.key.balanceNanoUsd, 1e9 - u.requests.length * COST, 'billed exactly the calls forwarded');
  // The refused call's concurrency slot was given back: two calls at once still fit.
  const two = await Promise.all([post(`${gw.base}/v1/chat/completions`, key, CALL), post(`${gw.base}/v1/chat/completions`, key, CALL)]);
  t.same(two.map((r) => r.status), [200, 200], 'no slot leaked by the refused call');
});
