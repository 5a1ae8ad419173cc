/**
 * On LMDB, a group commit waits for the end of the event-loop turn only when other calls could
 * join it. A call alone (nothing else queued, no other call of this process in flight) has its
 * hold and its settlement committed as soon as the callback that queued them returns, before the
 * turn's setImmediate callbacks; with another call in flight they wait for the end of the turn.
 * Either way, what was queued before the commit runs goes into the one commit. In process, on a
 * real data directory.
 */
import t from 'tap';
import type { Store } from '../src/store/lmdb/store.js';
import { PLAIN_USAGE_DETAIL, type Hold, type KeyRecord, type UsageRecord } from '../src/domain/types.js';
import { servingStore } from './helpers/lmdb-store.js';

const HOLD: Hold = { amount: 5000, interruptedCharge: 100, interruptedInputTokens: 10, endpoint: 'chat', model: 'm', enabledByDefault: true, stream: false, at: Date.UTC(2027, 0, 1), previousResponses: null };
const CHARGE = 1234;

function record(callId: string): UsageRecord {
  return { at: HOLD.at, callId, requestId: callId, endpoint: 'chat', model: 'm', stream: false, status: 200, inputTokens: 10, outputTokens: 5, cachedInputTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0, costNano: CHARGE, tokensCharged: 15, error: null, estimated: false, clientGone: false, ...PLAIN_USAGE_DETAIL };
}

/**
 * What comes first: the store's answer to `queue` (which queues one entry and is told once it is
 * committed), or a setImmediate callback set just before it, which runs at the end of this turn.
 */
function firstOf(queue: (told: () => void) => void): Promise<'commit' | 'end of turn'> {
  return new Promise((resolve) => {
    const order: Array<'commit' | 'end of turn'> = [];
    const seen = (what: 'commit' | 'end of turn'): void => {
      order.push(what);
      if (order.length === 2) resolve(order[0]!);
    };
    setImmediate(() => seen('end of turn'));
    queue(() => seen('commit'));
  });
}

/** LMDB's id of the last write transaction: one more per commit. */
const lastTxn = (store: Store): number => (store as unknown as { root: { getStats(): { lastTxnId: number } } }).root.getStats().lastTxnId;

t.test('a lone call is committed before the end of its turn; with another in flight, at the end of it', async (t) => {
  const { store } = await servingStore(t, 'lone-commit');
  const key: KeyRecord = await store.createKey({ hash: 'a'.repeat(64), prefix: 'gw_live_aaaa', name: null, mode: 'credit', models: null, rpm: null, concurrency: null, expiresAt: null, amount: 1_000_000 });
  const hold = (callId: string) => (told: () => void): void => store.hold(key, callId, HOLD, told);
  const settle = (callId: string) => (told: () => void): void => store.record(key, record(callId), { nano: CHARGE, tokens: 0 }, { committed: told });

  t.equal(await firstOf(hold('call_1')), 'commit', 'the hold of the only call: committed before the end of the turn');
  t.equal(await firstOf(hold('call_2')), 'end of turn', 'a second call\'s hold, with the first in flight: at the end of the turn');
  t.equal(await firstOf(settle('call_2')), 'end of turn', 'its settlement, with the first still in flight: at the end of the turn');
  t.equal(await firstOf(settle('call_1')), 'commit', 'the settlement of the call left alone: before the end of the turn');

  // Two calls queued in one callback while none is in flight: the first finds itself alone, the
  // second joins it before its commit runs.
  const before = lastTxn(store);
  const held = (callId: string): Promise<unknown> => new Promise((resolve) => store.hold(key, callId, HOLD, resolve));
  t.same(await Promise.all([held('call_3'), held('call_4')]), [null, null], 'both held');
  t.equal(lastTxn(store) - before, 1, 'in one commit');
  await Promise.all([new Promise<void>((resolve) => settle('call_3')(resolve)), new Promise<void>((resolve) => settle('call_4')(resolve))]);

  const account = await store.account(key.account);
  t.same([account?.balanceNano, account?.held], [1_000_000 - 4 * CHARGE, 0], 'four calls charged once each, every hold released');
  t.equal((await store.usageOf(key, 10)).length, 4, 'four records');
});
