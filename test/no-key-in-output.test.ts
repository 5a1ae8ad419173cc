/**
 * No full key, nor its secret part, ever appears in what the server writes (stdout: start
 * lines and access log; stderr: operational log), across every outcome, a client that leaves,
 * and issuer changes through the admin API that name keys by their full value.
 */
import t from 'tap';
import { ADMIN_TOKEN, startGateway } from './helpers/harness.js';
import { sendEveryOutcome } from './helpers/outcomes.js';

t.test('a run covering every outcome leaves no key in stdout or stderr', async (t) => {
  const gw = await startGateway(t, { cliMode: 'remote', env: { ANTHROPIC_API_KEY: 'sk-ant-test-secret' } });
  const e = await sendEveryOutcome(gw, 1);

  // A client that leaves mid-call (billed later, logged then).
  const gone = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  e.secrets.push(gone.key);
  const ac = new AbortController();
  const pending = fetch(`${gw.base}/v1/chat/completions`, {
    method: 'POST', signal: ac.signal,
    headers: { authorization: `Bearer ${gone.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [], mock: { delayMs: 300 } }),
  }).catch(() => undefined);
  setTimeout(() => ac.abort(), 50);
  await pending;

  // Issuer changes naming keys by their full value, through the remote command line.
  for (const args of [['keys', 'show', gone.key], ['keys', 'suspend', gone.key], ['keys', 'topup', gone.key, '--usd', '1']]) {
    const r = await gw.cli(args);
    t.equal(r.code, 0, `${args.slice(0, 2).join(' ')} FULL-KEY: ${r.stderr}`);
  }
  const bad = await fetch(`${gw.admin}/admin/v1/keys/lookup`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body: JSON.stringify({ key: `${gone.key}x` }) });
  t.equal(bad.status, 400);

  // Wait until the client-gone call was logged (its line comes after the provider's answer).
  for (let i = 0; i < 200 && !gw.serverOut().includes(`"keyPrefix":"${gone.prefix}"`); i++) await new Promise((r) => setTimeout(r, 20));
  t.match(gw.serverOut(), `"keyPrefix":"${gone.prefix}"`, 'the client-gone call was logged (by prefix)');

  const out = gw.serverOut() + gw.serverLog();
  t.ok(out.length > 1000, 'the output searched is not empty');
  for (const secret of e.secrets) {
    t.notOk(out.includes(secret), 'no full key');
    t.notOk(out.includes(secret.slice(8)), 'nor its 32 secret characters');
  }
  t.notOk(out.includes(ADMIN_TOKEN), 'nor the admin token');
  t.notOk(out.includes('sk-ant-test-secret') || out.includes('sk-test-openai-secret'), 'nor a provider credential');
});
