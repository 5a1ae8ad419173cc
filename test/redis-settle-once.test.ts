/**
 * On Redis, the hold and the settlement are each one atomic step, idempotent by the call id: a
 * hold placed twice holds once, and a settlement sent again (as after a reply lost to a time-out)
 * charges nothing more and stores no second record. In process, on a real redis-server.
 */
import t from 'tap';
import { RedisStore } from '../src/store/redis/store.js';
import type { Hold } from '../src/domain/types.js';
import { PLAIN_USAGE_DETAIL, type UsageRecord } from '../src/domain/types.js';
import { startRedis } from './helpers/redis.js';

const HOLD: Hold = { amount: 5000, interruptedCharge: 100, interruptedInputTokens: 10, endpoint: 'chat', model: 'm', enabledByDefault: true, stream: false, at: Date.UTC(2027, 0, 1), previousResponses: null };

function record(callId: string): UsageRecord {
  return { at: HOLD.at, callId, requestId: callId, endpoint: 'chat', model: 'm', stream: false, status: 200, inputTokens: 10, outputTokens: 5, cachedInputTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0, costNano: 1234, tokensCharged: 15, error: null, estimated: false, clientGone: false, ...PLAIN_USAGE_DETAIL };
}

t.test('a hold and a settlement sent twice count once', async (t) => {
  const redis = await startRedis(t);
  const store = await RedisStore.open(redis.url);
  t.teardown(() => store.close());
  await store.serveCalls();
  const key = await store.createKey({ hash: 'a'.repeat(64), prefix: 'gw_live_aaaa', name: null, mode: 'credit', models: null, rpm: null, concurrency: null, expiresAt: null, amount: 1_000_000 });
  const hold = (): Promise<string | null> => new Promise((resolve) => store.hold(key, 'call_1', HOLD, resolve));
  t.equal(await hold(), null, 'held');
  t.equal(await hold(), null, 'held again: a no-op');
  t.equal((await store.account(key.account))?.held, 5000, 'one hold, not two');
  const settle = (): Promise<unknown> => new Promise((resolve) => store.record(key, record('call_1'), { nano: 1234, tokens: 0 }, { committed: resolve }));
  t.equal(await settle(), null, 'settled');
  t.equal(await settle(), null, 'settled again: answered, changes nothing');
  const account = await store.account(key.account);
  t.equal(account?.balanceNano, 1_000_000 - 1234, 'charged once');
  t.equal(account?.held, 0, 'the hold released once');
  t.equal((await store.usageOf(key, 10)).length, 1, 'one record');
  const [day] = (await store.dailyOf(key, '2027-01-01', '2027-01-01')).values();
  t.same([day?.requests, day?.costNano], [1, 1234], 'counted once in the day totals');
});
