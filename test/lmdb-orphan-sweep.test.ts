/**
 * On LMDB, the sweep for calls whose process is gone: a serving process alone with calls of its
 * own in flight settles none of them (and finds so by a count, without reading each entry); a
 * call left in flight by a process that stopped is settled by the next sweep, even while calls
 * of the sweeping process's own are in flight beside it. In process, two stores (two serving
 * processes' views) on one environment.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { Store } from '../src/store/lmdb/store.js';
import { PLAIN_USAGE_DETAIL, type Hold, type UsageRecord } from '../src/domain/types.js';

const HOLD: Hold = { amount: 5000, interruptedCharge: 100, interruptedInputTokens: 10, endpoint: 'chat', model: 'm', enabledByDefault: true, stream: false, at: Date.UTC(2027, 0, 1), previousResponses: null };

function record(callId: string): UsageRecord {
  return { at: HOLD.at, callId, requestId: callId, endpoint: 'chat', model: 'm', stream: false, status: 200, inputTokens: 10, outputTokens: 5, cachedInputTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0, costNano: 1234, tokensCharged: 15, error: null, estimated: false, clientGone: false, ...PLAIN_USAGE_DETAIL };
}

type Key = Parameters<Store['hold']>[0];
const hold = (store: Store, key: Key, callId: string): Promise<unknown> => new Promise((resolve) => store.hold(key, callId, HOLD, resolve));
const settle = (store: Store, key: Key, callId: string): Promise<unknown> => new Promise((resolve) => store.record(key, record(callId), { nano: 1234, tokens: 0 }, { committed: resolve }));

/** Counts the store's reads of the entries in flight (a range over `calls` that is not only counted). */
function countFullReads(store: Store): () => number {
  const calls = (store as unknown as { calls: { getRange: (options?: { onlyCount?: boolean }) => unknown } }).calls;
  const getRange = calls.getRange.bind(calls);
  let reads = 0;
  calls.getRange = (options) => {
    if (options?.onlyCount !== true) reads++;
    return getRange(options);
  };
  return () => reads;
}

async function served(t: Tap.Test, dir: string): Promise<Store> {
  const store = Store.open(dir, { fsync: 'interval', fsyncIntervalMs: 1000 });
  let closed = false;
  t.teardown(() => (closed ? undefined : store.close()));
  await store.serveCalls();
  const close = store.close.bind(store);
  store.close = () => {
    closed = true;
    return close();
  };
  return store;
}

function dataDir(t: Tap.Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-orphan-sweep-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Two serving processes on one environment, each with a call of a key of `letter` in flight: `call_mine` and `call_left`. */
async function twoProcesses(t: Tap.Test, letter: string): Promise<{ mine: Store; other: Store; key: Key }> {
  const dir = dataDir(t);
  const mine = await served(t, dir);
  const key = await mine.createKey({ hash: letter.repeat(64), prefix: `gw_live_${letter.repeat(4)}`, name: null, mode: 'credit', models: null, rpm: null, concurrency: null, expiresAt: null, amount: 1_000_000 });
  t.equal(await hold(mine, key, 'call_mine'), null, 'a call of this process held');
  const other = await served(t, dir);
  t.equal(await hold(other, key, 'call_left'), null, 'a call of the other process held');
  return { mine, other, key };
}

t.test('a process alone with its own calls in flight settles none, without reading them', async (t) => {
  const store = await served(t, dataDir(t));
  const key = await store.createKey({ hash: 'a'.repeat(64), prefix: 'gw_live_aaaa', name: null, mode: 'credit', models: null, rpm: null, concurrency: null, expiresAt: null, amount: 1_000_000 });
  for (let i = 0; i < 3; i++) t.equal(await hold(store, key, `call_${i}`), null, `call_${i} held`);
  const reads = countFullReads(store);
  t.equal(store.settleOrphans(Date.now()), 0, 'nothing settled');
  t.equal(reads(), 0, 'the calls in flight were counted, not read one by one');
  t.equal((await store.account(key.account))?.held, 15_000, 'every hold still placed');
  for (let i = 0; i < 3; i++) t.equal(await settle(store, key, `call_${i}`), null, `call_${i} settled by its own process`);
  const account = await store.account(key.account);
  t.same([account?.balanceNano, account?.held], [1_000_000 - 3 * 1234, 0], 'each charged once at its price, no hold left');
  t.same((await store.usageOf(key, 10)).map((r) => r.error), [null, null, null], 'three answered records, none interrupted');
});

t.test('a call left by a process that stopped is settled beside calls of the sweeping process', async (t) => {
  const { mine, other, key } = await twoProcesses(t, 'b');
  // The other process stops with its call in flight: its registration goes, its entry stays.
  await other.close();
  const reads = countFullReads(mine);
  t.equal(mine.settleOrphans(Date.now()), 1, 'the call left behind is settled at once');
  t.ok(reads() > 0, 'the entries were read: they are not all this process\'s');
  let account = await mine.account(key.account);
  t.same([account?.balanceNano, account?.held], [1_000_000 - 100, 5000], 'charged its input estimate; only this process\'s hold is left');
  t.equal(mine.settleOrphans(Date.now()), 0, 'settled once');
  t.equal(await settle(mine, key, 'call_mine'), null, 'this process\'s own call settles as usual');
  account = await mine.account(key.account);
  t.same([account?.balanceNano, account?.held], [1_000_000 - 100 - 1234, 0], 'charged its price, no hold left');
  t.same((await mine.usageOf(key, 10)).map((r) => [r.callId, r.error]).sort(), [['call_left', 'interrupted'], ['call_mine', null]], 'one record each');
});

t.test('an entry of this process that another process ended hides no orphan once the call ends', async (t) => {
  const { mine, other, key } = await twoProcesses(t, 'c');
  // Ten minutes on in the other's view, this process's heartbeat is stale: it settles this one's call.
  t.equal(other.settleOrphans(Date.now() + 600_000), 1, 'the other process took this one for dead');
  await other.close();
  // This process's next heartbeat registers it again; it goes into the group commit of the settlement below.
  (mine as unknown as { heartbeatDue: boolean }).heartbeatDue = true;
  t.equal(await settle(mine, key, 'call_mine'), null, 'this process ends its call (already settled: not charged again)');
  t.equal(mine.settleOrphans(Date.now()), 1, 'then the call left behind is settled');
  const account = await mine.account(key.account);
  t.same([account?.balanceNano, account?.held], [1_000_000 - 200, 0], 'both charged their input estimates once, no hold left');
});
