/**
 * Every issuer change is in the audit trail with when, what, which key and by whom: the local
 * command line (`cli@HOSTNAME`), the remote one and the admin API (`admin-api` and the
 * caller's address); `tollgate audit [--key] [--json]` lists it, and the admin API serves it.
 */
import { hostname } from 'node:os';
import t from 'tap';
import { ADMIN_TOKEN, runCli, startGateway } from './helpers/harness.js';

t.test('audit entries from all three paths', async (t) => {
  const gw = await startGateway(t, { admin: true });
  const remote = (args: string[]): ReturnType<typeof runCli> => runCli([...args, '--admin-url', gw.admin!], { TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN });
  const started = Date.now();

  const local = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  t.equal((await gw.cli(['keys', 'topup', local.id, '--usd', '2'])).code, 0);
  const r = await remote(['keys', 'suspend', local.id]);
  t.equal(r.code, 0, r.stderr);
  const viaApi = await fetch(`${gw.admin}/admin/v1/keys`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body: JSON.stringify({ mode: 'token', budget: 10 }) });
  const apiKey = await viaApi.json();
  t.equal((await gw.cli(['models', 'disable', 'gpt-4o'])).code, 0);
  t.equal((await remote(['keys', 'set', apiKey.id, '--rpm', '7'])).code, 0);

  const listed = await gw.cli(['audit', '--json']);
  t.equal(listed.code, 0, listed.stderr);
  const entries = JSON.parse(listed.stdout);
  const me = `cli@${hostname()}`;
  t.match(entries, [
    { action: 'key.create', keyId: local.id, actor: me, address: null, detail: { mode: 'credit', balanceUsd: '1.000000' } },
    { action: 'key.topup', keyId: local.id, actor: me, detail: { usd: '2.000000' } },
    { action: 'key.suspend', keyId: local.id, actor: 'admin-api', address: /127\.0\.0\.1/ },
    { action: 'key.create', keyId: apiKey.id, actor: 'admin-api', address: /127\.0\.0\.1/, detail: { mode: 'token', budgetTokens: 10 } },
    { action: 'model.disable', keyId: null, actor: me, detail: { model: 'gpt-4o' } },
    { action: 'key.set', keyId: apiKey.id, actor: 'admin-api', detail: { rpm: 7 } },
  ]);
  t.equal(entries.length, 6, 'one entry per change, nothing else');
  for (const e of entries) t.ok(Date.parse(e.at) >= started - 1000 && Date.parse(e.at) <= Date.now(), 'when');
  t.notOk(listed.stdout.includes(local.key) || listed.stdout.includes(apiKey.key), 'never a secret');

  const byKey = JSON.parse((await gw.cli(['audit', '--key', local.prefix, '--json'])).stdout);
  t.same(byKey.map((e: any) => e.action), ['key.create', 'key.topup', 'key.suspend'], '--key KEY-REF: that key\'s entries only');
  const served = await (await fetch(`${gw.admin}/admin/v1/audit?key=${apiKey.id}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json();
  t.same(served.map((e: any) => e.action), ['key.create', 'key.set'], 'the admin API serves it');
  const remoteList = await remote(['audit', '--json']);
  t.equal(remoteList.stdout, listed.stdout, 'the remote command line prints the same');
  const table = await gw.cli(['audit']);
  t.match(table.stdout, /^AT\s+ACTION\s+KEY\s+BY\s+DETAIL\n/);
  t.equal(table.stdout.trim().split('\n').length, 7);

  const refused = await gw.cli(['keys', 'topup', local.id, '--usd', 'abc']);
  t.equal(refused.code, 2);
  t.equal(JSON.parse((await gw.cli(['audit', '--json'])).stdout).length, 6, 'a refused change leaves no entry');
});
