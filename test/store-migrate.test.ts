/**
 * `tollgate store migrate --to redis://…`: an LMDB store with keys of both kinds, a rotated
 * key, usage records, day totals, a model switch, audit entries, a stored response's owner
 * record and a call left in flight by a killed server (its hold) is refused while the server
 * still serves it (exit 1), then, once it is killed, copied into an empty Redis and checked; a
 * second run refuses the non-empty target (exit 2) unless --force; a gateway on
 * the Redis copy then serves the same keys with the same balances and records, lets only the
 * owner continue its response, and settles the call the killed server left. Owner records take
 * what is left of storage.responseRetentionDays as their TTL; those past it stay behind.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { Store } from '../src/store/lmdb/store.js';
import { PLAIN_USAGE_DETAIL } from '../src/domain/types.js';
import { eventually } from './helpers/client-gone.js';
import { allRecords, defaultConfig, post, runCli, startGateway, usageOf } from './helpers/harness.js';
import { startRedis } from './helpers/redis.js';

const DAY = 86_400_000;

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
  const made = await post(`${lmdb.base}/v1/responses`, credit.key, { model: 'gpt-4o-mini', input: 'remember me' });
  t.equal(made.status, 200, 'a stored response, made on LMDB');
  const rotated = JSON.parse((await lmdb.cli(['keys', 'rotate', credit.id, '--json'])).stdout) as { id: string; key: string };
  t.equal((await post(`${lmdb.base}/v1/chat/completions`, rotated.key, CALL)).status, 200, 'the rotated key draws on the same balance');
  t.equal((await lmdb.cli(['models', 'disable', 'gpt-4o'])).code, 0);
  // A call in flight when the server is killed: its hold stays in the store, to be settled.
  const res = await fetch(`${lmdb.base}/token/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${token.key}`, 'content-type': 'application/json' }, body: JSON.stringify(LONG) });
  await res.body!.getReader().read();
  const before = { credit: await usageOf(lmdb.base, credit.key), token: await usageOf(lmdb.base, token.key) };
  t.ok(before.token.key.heldTokens > 0, 'a hold in flight');

  const redis = await startRedis(t);
  const migrate = (...extra: string[]) => runCli(['store', 'migrate', '--to', redis.url, '--config', lmdb.configFile, '--data', lmdb.dataDir, ...extra]);
  // While the server serves the store, a copy would miss what it writes next: refused.
  const live = await migrate();
  t.equal(live.code, 1, 'a store being served is not migrated');
  t.match(live.stderr, /^tollgate: \S+ is being served \(a tollgate serve process with a heartbeat in it\); stop serve first, then migrate\n$/);

  lmdb.proc.kill('SIGKILL');
  await lmdb.stop();
  const first = await migrate();
  t.equal(first.code, 0, first.stderr);
  t.match(first.stdout, /copied 3 keys, 2 accounts, 1 calls in flight, 8 usage records, .*, 1 response owners\n/);
  t.match(first.stdout, /verified: counts and balances match/);
  const again = await migrate();
  t.equal(again.code, 2, 'a non-empty target is refused');
  t.match(again.stderr, /already holds tollgate data; --force replaces it/);
  const forced = await migrate('--force');
  t.equal(forced.code, 0, forced.stderr);
  t.match(forced.stdout, /verified/);

  // The same provider as before the move: it keeps the responses made through the LMDB gateway.
  const gw = await startGateway(t, { backend: 'redis', redisServer: redis, config: () => defaultConfig(lmdb.mock.url) });
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
  const ttl = Number(await redis.cli('pttl', `tg:{${(await gw.cli(['keys', 'show', credit.id, '--json'])).stdout.match(/"account":\s*"([^"]+)"/)?.[1]}}:rs:${made.json.id}`));
  t.ok(ttl > 29 * DAY && ttl <= 30 * DAY, `the owner record expires with what is left of 30 days (${ttl} ms)`);
  const continued = await post(`${gw.base}/v1/responses`, rotated.key, { model: 'gpt-4o-mini', input: 'and now?', previous_response_id: made.json.id });
  t.equal(continued.status, 200, 'on Redis, the owner continues its response');
  const stranger = await post(`${gw.base}/token/v1/responses`, token.key, { model: 'gpt-4o-mini', input: 'and now?', previous_response_id: made.json.id });
  t.equal(stranger.json?.error?.code, 'previous_response_not_found', 'another account cannot');
  const audit = JSON.parse((await gw.cli(['audit', '--json'])).stdout) as { action: string }[];
  t.same(audit.map((e) => e.action), ['key.create', 'key.create', 'key.rotate', 'model.disable'], 'the audit trail, in order');
  const bad = await runCli(['store', 'migrate', '--to', 'http://x:1']);
  t.equal(bad.code, 2, 'a bad URL is bad usage');
});

t.test('owner records carry what is left of their retention; those past it stay behind', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-migrate-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const now = Date.now();
  const store = Store.open(join(dir, 'data'));
  const key = await store.createKey({ hash: 'a'.repeat(64), prefix: 'gw_live_aaaa', name: null, mode: 'credit', models: null, rpm: null, concurrency: null, expiresAt: null, amount: 1e9 });
  for (const [id, age] of [['resp_young', 10], ['resp_old', 40]] as const) {
    const at = now - age * DAY;
    const usage = { at, callId: id, requestId: id, endpoint: 'responses' as const, model: 'gpt-4o-mini', stream: false, status: 200, inputTokens: 1, outputTokens: 1, cachedInputTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0, costNano: 0, tokensCharged: 2, error: null, estimated: false, clientGone: false, ...PLAIN_USAGE_DETAIL };
    await new Promise<void>((resolve) => store.record(key, usage, { nano: 0, tokens: 0 }, { committed: () => resolve() }, false, { id, provider: 'openai', credential: 'default' }));
  }
  await store.close();
  const config = join(dir, 'tollgate.config.json');
  writeFileSync(config, JSON.stringify({ ...defaultConfig('http://127.0.0.1:9'), storage: { responseRetentionDays: 30 } }));
  const redis = await startRedis(t);
  const r = await runCli(['store', 'migrate', '--to', redis.url, '--config', config, '--data', join(dir, 'data')]);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /1 response owners \(1 past storage\.responseRetentionDays left behind\)/);
  const ttl = Number(await redis.cli('pttl', `tg:{${key.account}}:rs:resp_young`));
  t.ok(ttl > 20 * DAY - 60_000 && ttl <= 20 * DAY, `10 days old of 30: 20 days left (${ttl} ms)`);
  t.equal((await redis.cli('exists', `tg:{${key.account}}:rs:resp_old`)).trim(), '0', '40 days old: not copied');
});
