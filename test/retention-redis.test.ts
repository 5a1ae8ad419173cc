/**
 * storage.retentionDays on the Redis backend: usage records older than that are deleted in
 * batches, recent ones and the daily totals stay. In process, with an injected clock, a real
 * redis-server and the same sweeper as on LMDB (test/retention.test.ts).
 */
import t from 'tap';
import { RedisStore } from '../src/store/redis/store.js';
import { RetentionSweeper } from '../src/store/retention.js';
import { PLAIN_USAGE_DETAIL, type UsageRecord } from '../src/domain/types.js';
import { startRedis } from './helpers/redis.js';

const DAY = 86_400_000;

function record(at: number, i: number): UsageRecord {
  return { at, callId: `req_${at}_${i}`, requestId: `req_${at}_${i}`, endpoint: 'chat', model: 'm', stream: false, status: 200, inputTokens: 1, outputTokens: 1, cachedInputTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0, costNano: 10, tokensCharged: 2, error: null, estimated: false, clientGone: false, ...PLAIN_USAGE_DETAIL };
}

t.test('old records go in batches, recent ones and daily totals stay', async (t) => {
  const redis = await startRedis(t);
  const store = await RedisStore.open(redis.url);
  t.teardown(() => store.close());
  const now = Date.UTC(2027, 5, 15, 12);
  const keys = [];
  for (let k = 0; k < 3; k++) keys.push(await store.createKey({ hash: `${k}`.repeat(64), prefix: `gw_live_000${k}`, name: null, mode: 'credit', models: null, rpm: null, concurrency: null, expiresAt: null, amount: 1e9 }, now - 500 * DAY));
  const committed: Promise<void>[] = [];
  for (const key of keys) {
    for (let i = 0; i < 300; i++) committed.push(new Promise((resolve) => store.record(key, record(now - 401 * DAY - (i % 50) * DAY, i), { nano: 10, tokens: 0 }, { committed: () => resolve() }, false)));
    for (let i = 0; i < 30; i++) committed.push(new Promise((resolve) => store.record(key, record(now - i * 13 * DAY, i), { nano: 10, tokens: 0 }, { committed: () => resolve() }, false)));
  }
  await Promise.all(committed);
  t.equal((await store.account(keys[0]!.account))?.balanceNano, 1e9 - 330 * 10, 'each record charged once');
  const totalsBefore = await store.dailyOf(keys[0]!, '2025-01-01', '2027-12-31');
  let clock = now - 100 * DAY;
  const sweeper = new RetentionSweeper(store, { retentionDays: 400, batch: 100, now: () => clock });
  t.equal(await sweeper.sweep(), 0, 'with the clock 100 days back, nothing is past retention');
  clock = now;
  t.equal(await sweeper.sweep(), 3 * 300, 'every record older than 400 days by the injected clock');
  for (const key of keys) {
    const left = await store.usageOf(key, 1000);
    t.equal(left.length, 30, 'the recent records stay');
    t.ok(left.every((r) => r.at > now - 400 * DAY), 'only those within retention');
  }
  t.same(await store.dailyOf(keys[0]!, '2025-01-01', '2027-12-31'), totalsBefore, 'daily totals are kept, old days included');
  t.equal(await sweeper.sweep(), 0, 'a second sweep finds nothing');
});

t.test('owner records of stored responses expire by themselves: a TTL of storage.responseRetentionDays', async (t) => {
  const redis = await startRedis(t);
  for (const days of [30, 2]) {
    const store = await RedisStore.open(redis.url, { responseRetentionDays: days });
    const key = await store.createKey({ hash: `${days}`.padStart(64, 'a'), prefix: 'gw_live_0000', name: null, mode: 'credit', models: null, rpm: null, concurrency: null, expiresAt: null, amount: 1e9 });
    await new Promise<void>((resolve) => store.record(key, record(Date.now(), days), { nano: 0, tokens: 0 }, { committed: () => resolve() }, false, { id: `resp_ttl${days}`, provider: 'openai', credential: 'default' }));
    const name = `tg:{${key.account}}:rs:resp_ttl${days}`;
    const ttl = Number(await redis.cli('pttl', name));
    t.ok(ttl > days * DAY - 60_000 && ttl <= days * DAY, `${days} days: expires in ${ttl} ms`);
    t.same(JSON.parse(await redis.cli('get', name)).slice(0, 2), ['openai', 'default'], 'the provider and credential recorded');
    const owner = await new Promise((resolve) => store.responseOwner(key.account, `resp_ttl${days}`, (o) => resolve(o)));
    t.match(owner, { provider: 'openai', credential: 'default' });
    await store.close();
  }
});
