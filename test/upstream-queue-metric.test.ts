import t from 'tap';
import { eventually, startCall } from './helpers/client-gone.js';
import { defaultConfig, post, startGateway } from './helpers/harness.js';
import { parseMetrics } from './helpers/prometheus.js';

// A full provider pool queues calls visibly: tollgate_upstream_queued_requests{provider} counts
// the calls waiting for a connection. One connection, a stream held by the mock on it, then
// three more calls: the gauge reads 3, and 0 once the stream is let go and they are answered.

t.test('calls waiting for a connection of a full pool show in tollgate_upstream_queued_requests', async (t) => {
  const gw = await startGateway(t, { admin: true, config: (url) => ({ ...defaultConfig(url), limits: { upstreamConnections: 1 } }) });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '10']);
  const queued = async (): Promise<number | undefined> =>
    parseMetrics(await (await fetch(`${gw.admin}/metrics`)).text()).get('tollgate_upstream_queued_requests{provider="openai"}');

  t.equal(await queued(), 0, 'nothing queued while idle');
  const held = await startCall(`${gw.base}/v1/chat/completions`, key, {
    model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream: true, mock: { hold: 'one', holdAfter: 1 },
  });
  await gw.mock.waitHeld('one');
  const waiting = [1, 2, 3].map(() => post(`${gw.base}/v1/chat/completions`, key, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }));
  t.equal(await eventually(async () => ((await queued()) === 3 ? 3 : undefined)), 3, 'three calls wait for the one connection');

  gw.mock.release('one');
  for (const reply of await Promise.all(waiting)) t.equal(reply.status, 200);
  await held.leave();
  t.equal(await queued(), 0, 'none left waiting');
});
