import t from 'tap';
import { post, startGateway, usageOf } from './helpers/harness.js';

t.test('a credit key calls chat through the served gateway and is billed', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const r = await post(`${gw.base}/v1/chat/completions`, key, { model: 'gpt-4o-mini', messages: [], mock: { inputTokens: 12, outputTokens: 34 } });
  t.equal(r.status, 200);
  t.equal(r.json.usage.prompt_tokens, 12);
  const u = await usageOf(gw.base, key);
  t.equal(u.key.balanceUsd, '0.999978');
  t.equal(u.requests[0].costUsd, '0.000022');
});
