/**
 * `tollgate store migrate --to redis://…`: an LMDB store with keys of both kinds, a rotated
 * key, usage records, day totals, a model switch, audit entries and a call left in flight by
 * a killed server (its hold) is copied into an empty Redis and checked; a second run refuses
 * the non-empty target (exit 2) unless --force; a gateway on the Redis copy then serves the
 * same keys with the same balances and records, and settles the call the killed server left.
 */
import t from 'tap';
import { eventually } from './helpers/client-gone.js';
import { allRecords, post, runCli, startGateway, usageOf } from './helpers/harness.js';
import { startRedis } from './helpers/redis.js';

const CALL = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };
const LONG = { model: 'gpt-4o-mini', max_tokens: 100, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'Tell me a long story.' }], mock: { chunks: 1000, chunkDelayMs: 50 } };

t.test('LMDB → Redis: everything copied, checked, and served', async (t) => {
  const lmdb = await startGateway(t, { backend: 'lmdb' });
  const credit = await lmdb.createKey(['--mode', 'credit', '--balance', '2', '--rpm', '100', '--name', 'alpha']);
  const token = await lmdb.createKey(['--mode', 'token', '--budget', '5000']);
  for (let i = 0; i < 3; i++) {
    t.equal((await post(`${lmdb.base}/v1/chat/completions`, credit.key, CALL)).status, 200);
    t.equal((await post(`${lmdb.base}/token/v1/chat/completions`, token.key, CALL)).status, 200);
  }
  const rotated = JSON.parse((await lmdb.cli(['keys', 'rotate', credit.id, '--json'])).stdout) as { id: string; key: string };
  t.equal((await post(`${lmdb.base}/v1/chat/completions`, rotated.key, CALL)).status, 200, 'the rotated key draws on the same balance');
  t.equal((await lmdb.cli(['models', 'disable', 'gpt-4o'])).code, 0);
  // A call in flight when the server is killed: its hold stays in the store, to be settled.
  const res = await fetch(`${lmdb.base}/token/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${token.key}`, 'content-type': 'application/json' }, body: JSON.stringify(LONG) });
  await res.body!.getReader().read();
  const before = { credit: await usageOf(lmdb.base, credit.key), token: await usageOf(lmdb.base, token.key) };
  t.ok(before.token.key.heldTokens > 0, 'a hold in flight');
  lmdb.proc.kill('SIGKILL');
  await lmdb.stop();

  const redis = await startRedis(t);
  const migrate = (...extra: string[]) => runCli(['store', 'migrate', '--to', redis.url, '--config', lmdb.configFile, '--data', lmdb.dataDir, ...extra]);
  const first = await migrate();
  t.equal(first.code, 0, first.stderr);
  t.match(first.stdout, /copied 3 keys, 2 accounts, 1 calls in flight, 7 usage records/);
  t.match(first.stdout, /verified: counts and balances match/);
  const again = await migrate();
  t.equal(again.code, 2, 'a non-empty target is refused');
  t.match(again.stderr, /already holds tollgate data; --force replaces it/);
  const forced = await migrate('--force');
  t.equal(forced.code, 0, forced.stderr);
  t.match(forced.stdout, /verified/);

  const gw = await startGateway(t, { backend: 'redis', redisServer: redis });
  const after = await usageOf(gw.base, credit.key);
  t.equal(after.key.balanceNanoUsd, before.credit.key.balanceNanoUsd, 'the same balance');
  t.same(after.requests.map((r: any) => r.callId), before.credit.requests.map((r: any) => r.callId), 'the same records, newest first');
  t.same(after.daily.filter((d: any) => d.requests > 0), before.credit.daily.filter((d: any) => d.requests > 0), 'the same day totals');
  // The call the killed server left: settled once by the gateway on Redis.
  const settled = await eventually(async () => {
    const u = await usageOf(gw.base, token.key);
    return u.key.heldTokens === 0 ? u : undefined;
  });
  const { records } = await allRecords(gw.base, token.key, 50);
  t.equal(records.filter((r: any) => r.error === 'interrupted').length, 1, 'the call in flight: settled as interrupted');
  t.equal(settled.key.usedTokens, records.reduce((s: number, r: any) => s + r.tokensCharged, 0), 'used = the records');
  t.equal((await post(`${gw.base}/v1/chat/completions`, rotated.key, CALL)).status, 200, 'keys work on Redis');
  t.equal((await post(`${gw.base}/v1/chat/completions`, rotated.key, { ...CALL, model: 'gpt-4o' })).json.error.code, 'model_not_available', 'the model switch came along');
  const audit = JSON.parse((await gw.cli(['audit', '--json'])).stdout) as { action: string }[];
  t.same(audit.map((e) => e.action), ['key.create', 'key.create', 'key.rotate', 'model.disable'], 'the audit trail, in order');
  const bad = await runCli(['store', 'migrate', '--to', 'http://x:1']);
  t.equal(bad.code, 2, 'a bad URL is bad usage');
});
