/**
 * Every issuer change is in the audit trail with when, what, which key and by whom: the local
 * command line (`cli@HOSTNAME`), the remote one and the admin API (`admin-api` and the
 * caller's address); `tollgate audit [--key] [--json]` lists it, and the admin API serves it.
 */
import { hostname } from 'node:os';
import t from 'tap';
import { openStore } from '../src/store/store.js';
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
    { action: 'key.create', keyId: local.id, actor: me, address: null, detail: { mode: 'credit', balanceUsd: '1.000000', balanceNanoUsd: 1_000_000_000 } },
    { action: 'key.topup', keyId: local.id, actor: me, detail: { usd: '2.000000', nanoUsd: 2_000_000_000 } },
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

t.test('amounts are exact in the audit trail, and entries written before read as they were', async (t) => {
  const gw = await startGateway(t);
  // keys create --json gives the key's account as well.
  const k = (await gw.createKey(['--mode', 'credit', '--balance', '0.000000001'])) as { id: string; account: string };
  t.equal((await gw.cli(['keys', 'topup', k.id, '--usd', '0.000000001'])).code, 0);
  t.equal((await gw.cli(['keys', 'topup', k.id, '--usd', '12.345678901'])).code, 0);
  // An entry as top-ups wrote it before the exact amount was added beside the rounded one.
  const store = await openStore(gw.redis === null ? { backend: 'lmdb', dataDir: gw.dataDir } : { backend: 'redis', url: gw.redis.url });
  try {
    await store.audited(() => ({ at: Date.now(), action: 'key.topup', keyId: k.id, actor: 'cli@old', address: null, detail: { usd: '2.000000' } }), () => store.topUp(k.account, 2_000_000_000));
  } finally {
    await store.close();
  }

  const entries = JSON.parse((await gw.cli(['audit', '--key', k.id, '--json'])).stdout);
  t.match(entries, [
    { action: 'key.create', detail: { balanceUsd: '0.000000', balanceNanoUsd: 1 } },
    { action: 'key.topup', detail: { usd: '0.000000', nanoUsd: 1 } },
    { action: 'key.topup', detail: { usd: '12.345679', nanoUsd: 12_345_678_901 } },
    { action: 'key.topup', actor: 'cli@old', detail: { usd: '2.000000' } },
  ], 'the six-decimal amount to read, and the exact one in nano-dollars');
  t.same(entries[3].detail, { usd: '2.000000' }, 'the earlier entry as written');
  t.equal(JSON.parse((await gw.cli(['keys', 'show', k.id, '--json'])).stdout).balanceNanoUsd, 14_345_678_903, 'what the entries add up to');
  const table = (await gw.cli(['audit', '--key', k.id])).stdout.trimEnd().split('\n');
  t.equal(table.length, 5, 'the table lists all four');
  t.match(table[2], /key\.topup .* usd=0\.000000 nanoUsd=1$/);
  t.match(table[4], /key\.topup .* usd=2\.000000$/);
});
