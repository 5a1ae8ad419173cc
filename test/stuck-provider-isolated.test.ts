import t from 'tap';
import { startMockProvider } from './fixtures/mock-provider.js';
import { defaultConfig, post, startGateway } from './helpers/harness.js';

// Each provider has its own connection pool: a provider that stops answering can fill only its
// own pool, and calls to every other provider keep flowing.

t.test('a stuck provider with its pool full does not hold up another provider', async (t) => {
  const other = await startMockProvider();
  t.teardown(() => other.close());
  const gw = await startGateway(t, {
    config: (url) => {
      const base = defaultConfig(url) as { providers: Record<string, { baseUrl: string }> };
      base.providers.anthropic!.baseUrl = `${other.url}/v1`;
      return { ...base, limits: { upstreamConnections: 4 } };
    },
  });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '5']);
  const order: string[] = [];
  // Ten calls to a provider that holds them: four fill its pool, six wait for a connection.
  const stuck = Array.from({ length: 10 }, () =>
    post(`${gw.base}/v1/chat/completions`, key, { model: 'gpt-4o-mini', messages: [], mock: { hold: 'stuck' } }).then((r) => {
      order.push('stuck');
      return r.status;
    }));
  await gw.mock.waitHeld('stuck', 4);
  const healthy = await post(`${gw.base}/v1/messages`, key, { model: 'claude-haiku-4-5', max_tokens: 8, messages: [] }, { 'anthropic-version': '2023-06-01' });
  order.push('healthy');
  t.equal(healthy.status, 200);
  t.equal(gw.mock.requests.length, 4, 'the stuck provider still holds every connection of its pool');
  gw.mock.release('stuck');
  t.same(await Promise.all(stuck), Array(10).fill(200), 'the stuck calls finish too, once their provider answers');
  t.equal(order[0], 'healthy', 'the other provider answered while the stuck one held every connection of its pool');
});
