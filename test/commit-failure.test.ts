/**
 * A failed commit has one outcome on both backends (store/retry.ts):
 * - a call whose admission or hold cannot be committed is refused `store_unavailable` and holds
 *   nothing (nothing is forwarded);
 * - a call whose settlement cannot be committed keeps its hold; its charge is tried again, in
 *   order, until it commits, once;
 * - a settlement still failing when the process exits is settled by the next process to serve
 *   as `interrupted`, like any call of a dead process.
 * - a retry that fails says so in the operational log (`store_retry_failed`), with what is still
 *   kept and why, on both backends.
 * Faults are injected, not provoked: on LMDB a write inside the transaction throws (as
 * MDB_MAP_FULL would); on Redis the server refuses the scripts (ACL: EVAL and EVALSHA denied).
 * In process, on a real data directory and a real redis-server.
 */
import fs, { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import type { GatewayStore } from '../src/domain/interfaces.js';
import { PLAIN_USAGE_DETAIL, type Hold, type KeyRecord, type UsageRecord } from '../src/domain/types.js';
import { MAX_PENDING, RetryQueue, type RetryOutcome } from '../src/store/retry.js';
import { openStore, type StorePlan } from '../src/store/store.js';
import { startRedis } from './helpers/redis.js';

const BALANCE = 1_000_000;
const HOLD: Hold = { amount: 5000, interruptedCharge: 100, interruptedInputTokens: 10, endpoint: 'chat', model: 'm', enabledByDefault: true, stream: false, at: Date.UTC(2027, 0, 1), previousResponses: null };
const CHARGE = 1234;

function usage(callId: string): UsageRecord {
  return { at: HOLD.at, callId, requestId: callId, endpoint: 'chat', model: 'm', stream: false, status: 200, inputTokens: 10, outputTokens: 5, cachedInputTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0, costNano: CHARGE, tokensCharged: 15, error: null, estimated: false, clientGone: false, ...PLAIN_USAGE_DETAIL };
}

/** What the tests do to a store beyond its interfaces: retry now (as its timer would). */
type Retrying = GatewayStore & { retryFailed(): Promise<number> };

interface Backend {
  plan: StorePlan;
  /** Makes `what` fail to commit from now on; returns the repair. */
  fault(store: GatewayStore, what: 'admission' | 'settlement'): Promise<() => Promise<void>>;
}

async function lmdb(t: Test): Promise<Backend> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-commit-failure-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return {
    plan: { backend: 'lmdb', dataDir: dir },
    // A put inside the group commit throws, failing the whole transaction: the entry in flight of
    // an admission (a key with a concurrency limit) or a hold; the usage record of a settlement.
    async fault(store, what) {
      const db = (store as unknown as Record<string, { put: (...args: unknown[]) => unknown }>)[what === 'admission' ? 'calls' : 'usage']!;
      const put = db.put;
      db.put = () => {
        throw new Error('injected fault: MDB_MAP_FULL');
      };
      return async () => {
        db.put = put;
      };
    },
  };
}

async function redis(t: Test): Promise<Backend> {
  const server = await startRedis(t);
  return {
    plan: { backend: 'redis', url: server.url },
    async fault() {
      await server.cli('ACL', 'SETUSER', 'default', '-eval', '-evalsha');
      return async () => {
        await server.cli('ACL', 'SETUSER', 'default', '+eval', '+evalsha');
      };
    },
  };
}

const admit = (store: GatewayStore, key: KeyRecord, callId: string): Promise<string | null> =>
  new Promise((resolve) => store.admit(key.hash, 'credit', callId, (_, refusal) => resolve(refusal)));
const hold = (store: GatewayStore, key: KeyRecord, callId: string): Promise<string | null> =>
  new Promise((resolve) => store.hold(key, callId, HOLD, resolve));
const settle = (store: GatewayStore, key: KeyRecord, callId: string): Promise<unknown> =>
  new Promise((resolve) => store.record(key, usage(callId), { nano: CHARGE, tokens: 0 }, { committed: resolve }));

/**
 * The operational log's events written while `run` runs. The logger writes each line to fd 2 at
 * once (pino's synchronous destination, through `fs.writeSync`), so they are read there.
 */
async function logged<T>(run: () => Promise<T>): Promise<[T, Array<Record<string, unknown>>]> {
  const events: Array<Record<string, unknown>> = [];
  const writeSync = fs.writeSync;
  fs.writeSync = ((fd: number, data: string | NodeJS.ArrayBufferView, ...rest: unknown[]): number => {
    if (fd !== 2) return (writeSync as (...args: unknown[]) => number)(fd, data, ...rest);
    const text = typeof data === 'string' ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8');
    for (const line of text.split('\n')) if (line !== '') events.push(JSON.parse(line) as Record<string, unknown>);
    return Buffer.byteLength(text);
  }) as typeof fs.writeSync;
  try {
    return [await run(), events];
  } finally {
    fs.writeSync = writeSync;
  }
}

async function opened(plan: StorePlan): Promise<Retrying> {
  const store = (await openStore(plan, { fsync: 'interval' })) as Retrying;
  await store.serveCalls();
  return store;
}

const newKey = (store: GatewayStore, concurrency: number | null): Promise<KeyRecord> =>
  store.createKey({ hash: 'c'.repeat(64), prefix: 'gw_live_cccc', name: null, mode: 'credit', models: null, rpm: null, concurrency, expiresAt: null, amount: BALANCE });

for (const [name, make] of [['lmdb', lmdb], ['redis', redis]] as const) {
  t.test(`${name}: an admission or a hold that cannot be committed is refused store_unavailable and holds nothing`, async (t) => {
    const backend = await make(t);
    const store = await opened(backend.plan);
    t.teardown(() => store.close());
    const key = await newKey(store, 1);
    let repair = await backend.fault(store, 'admission');
    t.equal(await admit(store, key, 'call_a'), 'store_unavailable', 'the admission refused 503');
    await repair();
    t.equal(await store.retryFailed(), 0, 'nothing left to retry once the store commits');
    repair = await backend.fault(store, 'admission');
    t.equal(await hold(store, key, 'call_b'), 'store_unavailable', 'the hold refused 503');
    await repair();
    await store.retryFailed();
    const account = await store.account(key.account);
    t.same([account?.balanceNano, account?.held], [BALANCE, 0], 'nothing charged, nothing held');
    t.equal(await admit(store, key, 'call_c'), null, 'the key\'s one concurrency slot is free: the refused calls took none');
    t.equal((await store.usageOf(key, 10)).length, 0, 'no record');
  });

  t.test(`${name}: a settlement that cannot be committed keeps its hold and is committed once by a retry`, async (t) => {
    const backend = await make(t);
    const store = await opened(backend.plan);
    t.teardown(() => store.close());
    const key = await newKey(store, null);
    for (const callId of ['call_1', 'call_2']) {
      t.equal(await admit(store, key, callId), null, `${callId} admitted`);
      t.equal(await hold(store, key, callId), null, `${callId} held`);
    }
    const repair = await backend.fault(store, 'settlement');
    t.ok(await settle(store, key, 'call_1'), 'the first settlement\'s listener is told it failed');
    t.ok(await settle(store, key, 'call_2'), 'and the second\'s');
    let account = await store.account(key.account);
    t.same([account?.balanceNano, account?.held], [BALANCE, 2 * HOLD.amount], 'nothing charged; both holds kept');
    t.equal((await store.usageOf(key, 10)).length, 0, 'no record yet');
    const [kept, events] = await logged(() => store.retryFailed());
    t.equal(kept, 2, 'a retry while the store still fails keeps both');
    const failedRetries = events.filter((e) => e.event === 'store_retry_failed');
    t.equal(failedRetries.length, 1, 'and says so, once');
    t.equal(failedRetries[0]?.level, 'error', 'as an error');
    t.equal(failedRetries[0]?.pending, 2, 'with how many settlements are still kept');
    t.match(failedRetries[0]?.error, name === 'lmdb' ? /injected fault/ : /NOPERM/, 'and why');
    await repair();
    const [left, after] = await logged(() => store.retryFailed());
    t.equal(left, 0, 'a retry once it commits leaves none');
    t.equal(after.filter((e) => e.event === 'store_retry_failed' || e.event === 'call_already_settled').length, 0, 'and logs no failure, nor a settlement taken twice');
    account = await store.account(key.account);
    t.same([account?.balanceNano, account?.held], [BALANCE - 2 * CHARGE, 0], 'each charged once, both holds released');
    t.same((await store.usageOf(key, 10)).map((r) => [r.callId, r.costNano, r.error]).sort(), [['call_1', CHARGE, null], ['call_2', CHARGE, null]], 'one record each, as sent');
    t.equal(await store.retryFailed(), 0, 'nothing more to retry');
  });

  t.test(`${name}: a settlement still failing at exit is settled by the next process as interrupted`, async (t) => {
    const backend = await make(t);
    const first = await opened(backend.plan);
    const key = await newKey(first, null);
    t.equal(await admit(first, key, 'call_x'), null, 'admitted');
    t.equal(await hold(first, key, 'call_x'), null, 'held');
    const repair = await backend.fault(first, 'settlement');
    t.ok(await settle(first, key, 'call_x'), 'the settlement failed');
    await first.close();
    await repair();
    const next = await opened(backend.plan);
    t.teardown(() => next.close());
    const account = await next.account(key.account);
    t.same([account?.balanceNano, account?.held], [BALANCE - HOLD.interruptedCharge, 0], 'charged its interrupted charge, the hold released');
    t.same((await next.usageOf(key, 10)).map((r) => [r.callId, r.error, r.estimated, r.costNano]), [['call_x', 'interrupted', true, HOLD.interruptedCharge]], 'recorded interrupted, once');
  });
}

t.test('the retry queue: in order, stopping at the first failure, bounded', async (t) => {
  const committed: string[] = [];
  let failing = 'b';
  const queue = new RetryQueue<string>(async (items): Promise<RetryOutcome> => {
    let n = 0;
    for (const item of items) {
      if (item === failing) return { committed: n, failure: new Error(`${item} refused`) };
      committed.push(item);
      n++;
    }
    return { committed: n, failure: null };
  });
  for (const item of ['a', 'b', 'c']) queue.add(item, item);
  const [kept, events] = await logged(() => queue.retry());
  t.equal(kept, 2, 'b failed: b and c are kept');
  t.same(committed, ['a'], 'a committed; c not before b');
  t.same(events.map((e) => [e.event, e.pending, e.error]), [['store_retry_failed', 2, 'Error: b refused']], 'the try that stopped short is logged with what is kept and why');
  failing = '';
  t.equal(await queue.retry(), 0, 'then both');
  t.same(committed, ['a', 'b', 'c'], 'in order');
  for (let i = 0; i < MAX_PENDING; i++) queue.add(String(i), String(i));
  t.notOk(queue.add('over', 'over'), 'past the bound, not kept');
  t.equal(queue.pending, MAX_PENDING, 'the bound holds');
  await queue.close();
});

t.test('the retry queue: releases give way to settlements, even while a try is under way', async (t) => {
  // As while the store fails: every refused admission keeps a release, the settlements are few.
  let tries = 0;
  let letGo: () => void = () => undefined;
  const tried: string[][] = [];
  const queue = new RetryQueue<string>(async (items): Promise<RetryOutcome> => {
    tried.push(items.slice());
    // The first try hangs until let go, then commits its first two items and fails at the third.
    if (tries++ === 0) await new Promise<void>((resolve) => (letGo = resolve));
    return { committed: tries === 1 ? 2 : items.length, failure: tries === 1 ? new Error('down') : null };
  });
  t.ok(queue.add('settle-0', 'settle-0'), 'a settlement');
  for (let i = 0; i < MAX_PENDING - 1; i++) queue.add(`release-${i}`, `release-${i}`, 'release');
  const [dropped, events] = await logged(async () => queue.add('release-over', 'release-over', 'release'));
  t.notOk(dropped, 'full: a new release is not kept');
  t.match(events, [{ event: 'store_retry_full', requestId: 'release-over', kind: 'release' }], 'and said so');
  const first = queue.retry();
  const [kept, made] = await logged(async () => queue.add('settle-1', 'settle-1'));
  t.ok(kept, 'full, with a try under way: a settlement is kept');
  t.match(made, [{ event: 'store_retry_full', requestId: 'release-0', kind: 'release' }], 'in place of the oldest release, which is said');
  t.equal(queue.pending, MAX_PENDING, 'the bound holds');
  letGo();
  t.equal(await first, MAX_PENDING - 1, 'the try committed settle-0 and release-0 (given way meanwhile), and failed at release-1: the rest kept');
  t.same(tried[0]!.slice(0, 3), ['settle-0', 'release-0', 'release-1'], 'as tried');
  await queue.retry();
  t.equal(tried[1]![0], 'release-1', 'the next try starts where the first stopped');
  t.equal(tried[1]!.at(-1), 'settle-1', 'and keeps the settlement that came meanwhile');
  t.equal(tried[1]!.length, MAX_PENDING - 1, 'nothing twice, nothing lost');
  await queue.close();
});
