/**
 * A Redis that loses its data under running gateways (restarted empty, flushed) is noticed: each
 * process checks once a second that the store is the one it opened (its identity, `tg:store`,
 * made by the first process to open it). Once it is not, every call is answered 503
 * `store_unavailable` (not 401 `invalid_api_key`, which would tell every client its key is
 * wrong), /readyz answers 503, and the log says why, once. A process started on the store as it
 * now is serves it as usual.
 */
import t from 'tap';
import { eventually } from './helpers/client-gone.js';
import { post, startGateway } from './helpers/harness.js';
import { startRedis } from './helpers/redis.js';

t.test('a Redis flushed under a running gateway: 503 store_unavailable and not ready, until a restart', async (t) => {
  const redis = await startRedis(t);
  const gw = await startGateway(t, { backend: 'redis', redisServer: redis, admin: true });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const body = { model: 'gpt-4o-mini', messages: [] };
  t.equal((await post(`${gw.base}/v1/chat/completions`, key, body)).status, 200, 'served');
  t.equal((await fetch(`${gw.admin}/readyz`)).status, 200, 'ready');

  await redis.cli('flushall');
  const ready = await eventually(async () => {
    const res = await fetch(`${gw.admin}/readyz`);
    return res.status === 503 ? res.json() : undefined;
  });
  t.same(ready, { status: 'store_unavailable' }, '/readyz: 503 within seconds');
  const forwarded = gw.mock.requests.length;
  const res = await post(`${gw.base}/v1/chat/completions`, key, body);
  t.equal(res.status, 503, 'a call: 503');
  t.equal(res.json?.error?.code, 'store_unavailable', 'store_unavailable, not invalid_api_key');
  t.equal(gw.mock.requests.length, forwarded, 'nothing forwarded');
  const lost = gw.serverLog().split('\n').filter((l) => l.includes('"store_data_lost"'));
  t.equal(lost.length, 1, 'said once');
  t.match(JSON.parse(lost[0]!), { level: 'error', backend: 'redis', found: 'nothing', consequence: /503 store_unavailable until it restarts/ });
  t.equal((await redis.cli('exists', 'tg:store')).trim(), '0', 'the lost store is not made again under the running process');

  // A process started on the store as it now is: an empty store, where the key is unknown.
  const fresh = await startGateway(t, { backend: 'redis', redisServer: redis });
  const unknown = await post(`${fresh.base}/v1/chat/completions`, key, body);
  t.equal(unknown.json?.error?.code, 'invalid_api_key', 'a new process serves the empty store: the key is unknown there');
  const { key: again } = await fresh.createKey(['--mode', 'credit', '--balance', '1']);
  t.equal((await post(`${fresh.base}/v1/chat/completions`, again, body)).status, 200, 'and a key made on it is served');
  t.equal((await post(`${gw.base}/v1/chat/completions`, again, body)).status, 503, 'while the first process still refuses');
});
