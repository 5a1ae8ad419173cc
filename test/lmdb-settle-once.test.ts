/**
 * On LMDB, a call is settled exactly once: a settlement sent twice charges once, and a call that
 * another process settled (taking this one for dead) is neither charged again nor has its hold
 * released twice when this process settles it after all. In process, two stores (two serving
 * processes' views) on one environment.
 */
import t from 'tap';
import type { Store } from '../src/store/lmdb/store.js';
import { PLAIN_USAGE_DETAIL, type Hold, type UsageRecord } from '../src/domain/types.js';
import { servingBeside, servingStore } from './helpers/lmdb-store.js';

const HOLD: Hold = { amount: 5000, interruptedCharge: 100, interruptedInputTokens: 10, endpoint: 'chat', model: 'm', enabledByDefault: true, stream: false, at: Date.UTC(2027, 0, 1), previousResponses: null };

function record(callId: string): UsageRecord {
  return { at: HOLD.at, callId, requestId: callId, endpoint: 'chat', model: 'm', stream: false, status: 200, inputTokens: 10, outputTokens: 5, cachedInputTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0, costNano: 1234, tokensCharged: 15, error: null, estimated: false, clientGone: false, ...PLAIN_USAGE_DETAIL };
}

const hold = (store: Store, key: Parameters<Store['hold']>[0], callId: string): Promise<unknown> => new Promise((resolve) => store.hold(key, callId, HOLD, resolve));
const settle = (store: Store, key: Parameters<Store['hold']>[0], callId: string): Promise<unknown> => new Promise((resolve) => store.record(key, record(callId), { nano: 1234, tokens: 0 }, { committed: resolve }));

t.test('a settlement sent twice charges once', async (t) => {
  const { store } = await servingStore(t, 'settle-once');
  const key = await store.createKey({ hash: 'a'.repeat(64), prefix: 'gw_live_aaaa', name: null, mode: 'credit', models: null, rpm: null, concurrency: null, expiresAt: null, amount: 1_000_000 });
  t.equal(await hold(store, key, 'call_1'), null, 'held');
  t.equal((await store.account(key.account))?.held, 5000, 'the hold is placed');
  t.equal(await settle(store, key, 'call_1'), null, 'settled');
  t.equal(await settle(store, key, 'call_1'), null, 'settled again: answered, changes nothing');
  const account = await store.account(key.account);
  t.equal(account?.balanceNano, 1_000_000 - 1234, 'charged once');
  t.equal(account?.held, 0, 'the hold released once');
  t.equal((await store.usageOf(key, 10)).length, 1, 'one record');
});

t.test('a call another process settled is not charged again, nor its hold released twice', async (t) => {
  const { dir, store } = await servingStore(t, 'settle-once');
  const key = await store.createKey({ hash: 'b'.repeat(64), prefix: 'gw_live_bbbb', name: null, mode: 'credit', models: null, rpm: null, concurrency: null, expiresAt: null, amount: 1_000_000 });
  t.equal(await hold(store, key, 'call_2'), null, 'held by the first process');
  t.equal(await hold(store, key, 'call_3'), null, 'a second call held');
  const other = await servingBeside(t, dir);
  // Ten minutes on, the first process's heartbeat is stale: the other takes it for dead.
  t.equal(other.settleOrphans(Date.now() + 600_000), 2, 'the other process settled both calls as interrupted');
  let account = await store.account(key.account);
  t.same([account?.balanceNano, account?.held], [1_000_000 - 200, 0], 'charged their input estimates, holds released');
  t.equal(await settle(store, key, 'call_2'), null, 'the first process settles call_2 after all: answered');
  account = await store.account(key.account);
  t.equal(account?.balanceNano, 1_000_000 - 200, 'not charged again');
  t.equal(account?.held, 0, 'the hold not released a second time');
  const records = await store.usageOf(key, 10);
  t.same(records.map((r) => [r.callId, r.error]).sort(), [['call_2', 'interrupted'], ['call_3', 'interrupted']], 'one record per call, the sweep\'s');
});
