/**
 * On SIGTERM /readyz answers 503 at once (so a load balancer stops sending) while the call in
 * flight still runs to its end.
 */
import t from 'tap';
import { post, startGateway } from './helpers/harness.js';

t.test('SIGTERM: /readyz 503 at once, the call in flight completes', async (t) => {
  const gw = await startGateway(t, { admin: true });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  t.equal((await fetch(`${gw.admin}/readyz`)).status, 200, 'ready before');
  // A keep-alive connection to the public listener, opened before the signal.
  const agentProbe = await fetch(`${gw.base}/readyz`);
  t.equal(agentProbe.status, 200);
  await agentProbe.arrayBuffer();

  const inFlight = post(`${gw.base}/v1/chat/completions`, key, { model: 'gpt-4o-mini', messages: [], mock: { delayMs: 1500 } });
  // The call has reached the provider when the mock has seen it.
  for (let i = 0; i < 200 && gw.mock.requests.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
  t.equal(gw.mock.requests.length, 1, 'the call is in flight');
  gw.proc.kill('SIGTERM');
  let status = 200;
  let body: any;
  for (let i = 0; i < 100 && status === 200; i++) {
    const r = await fetch(`${gw.admin}/readyz`);
    status = r.status;
    body = await r.json();
    if (status === 200) await new Promise((r) => setTimeout(r, 5));
  }
  t.equal(status, 503, 'not ready once the signal arrived');
  t.same(body, { status: 'draining' });
  t.equal((await fetch(`${gw.admin}/healthz`)).status, 200, 'still healthy: the process serves what it has');
  const done = await inFlight;
  t.equal(done.status, 200, 'the call in flight ran to its end');
  t.equal(await gw.stop(), 0, 'then the process exits 0');
});
