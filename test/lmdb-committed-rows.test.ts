/**
 * On LMDB, a transaction of the ledger that directly follows the last one reads the rows every
 * call touches (account, rate window, day totals, the model's switch) as that one left them, not from the store
 * (src/store/lmdb/committed-rows.ts). Those rows are never trusted past a transaction that came
 * between, of another process or of this one, nor past a transaction that failed after changing
 * them. In process, on a real data directory, with `tollgate keys topup` run as a process of its
 * own and a second store on the same environment as another serving process.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import t from 'tap';
import { Store } from '../src/store/lmdb/store.js';
import { PLAIN_USAGE_DETAIL, type Hold, type KeyRecord, type UsageRecord } from '../src/domain/types.js';
import { servingBeside, servingStore } from './helpers/lmdb-store.js';

const CLI = join(import.meta.dirname, '..', 'dist', 'cli', 'main.js');
const AT = Date.UTC(2027, 0, 1, 12);
const DAY = '2027-01-01';
const HOLD: Hold = { amount: 5000, interruptedCharge: 100, interruptedInputTokens: 10, endpoint: 'chat', model: 'm', enabledByDefault: true, stream: false, at: AT, previousResponses: null };
const CHARGE = 1234;
const BALANCE = 1_000_000;

function record(callId: string): UsageRecord {
  return { at: AT, callId, requestId: callId, endpoint: 'chat', model: 'm', stream: false, status: 200, inputTokens: 10, outputTokens: 5, cachedInputTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0, costNano: CHARGE, tokensCharged: 15, error: null, estimated: false, clientGone: false, ...PLAIN_USAGE_DETAIL };
}

const admit = (store: Store, key: KeyRecord, callId: string): Promise<string | null> =>
  new Promise((resolve) => store.admit(key.hash, 'credit', callId, (_, refusal) => resolve(refusal)));
const hold = (store: Store, key: KeyRecord, callId: string): Promise<string | null> =>
  new Promise((resolve) => store.hold(key, callId, HOLD, resolve));
const settle = (store: Store, key: KeyRecord, callId: string): Promise<unknown> =>
  new Promise((resolve) => store.record(key, record(callId), { nano: CHARGE, tokens: 0 }, { committed: resolve }));

/** Steps 3–7, 9, 10 and the hold in one commit, as the server admits a call: the refusal or null. */
const admitHolding = (store: Store, key: KeyRecord, callId: string): Promise<string | null> =>
  new Promise((resolve) => store.admitHolding(key.hash, 'credit', callId, { credit: HOLD, token: HOLD }, (_, refusal) => resolve(refusal)));

/** One whole call on `store`: admitted (its rate window counted), held, settled. */
async function call(t: Tap.Test, store: Store, key: KeyRecord, callId: string): Promise<void> {
  t.equal(await admit(store, key, callId), null, `${callId} admitted`);
  t.equal(await hold(store, key, callId), null, `${callId} held`);
  t.equal(await settle(store, key, callId), null, `${callId} settled`);
}

async function opened(t: Tap.Test, rpm: number | null, models: string[] | null = null): Promise<{ dir: string; store: Store; key: KeyRecord }> {
  const { dir, store } = await servingStore(t, 'committed-rows');
  const key = await store.createKey({ hash: 'e'.repeat(64), prefix: 'gw_live_eeee', name: null, mode: 'credit', models, rpm, concurrency: null, expiresAt: null, amount: BALANCE });
  return { dir, store, key };
}

t.test('what another process commits between two calls is read from the store', async (t) => {
  const { dir, store, key } = await opened(t, 4);
  await call(t, store, key, 'call_1');
  // A top-up by the CLI, a process of its own: $0.01 is 10,000,000 nUSD.
  execFileSync(process.execPath, [CLI, 'keys', 'topup', key.id, '--usd', '0.01', '--data', dir], { stdio: 'ignore' });
  // A call served by another process: the same account, rate window and day totals.
  const other = await servingBeside(t, dir);
  await call(t, other, key, 'call_other');
  await call(t, store, key, 'call_2');

  const account = await store.account(key.account);
  t.same([account?.balanceNano, account?.held], [BALANCE + 10_000_000 - 3 * CHARGE, 0], 'the top-up kept, three calls charged, nothing held');
  const day = (await store.dailyOf(key, DAY, DAY)).get(DAY);
  t.same([day?.requests, day?.costNano], [3, 3 * CHARGE], 'the day\'s totals count the other process\'s call');
  t.equal(await admit(store, key, 'call_4'), null, 'the fourth call of the minute admitted');
  t.equal(await admit(store, key, 'call_5'), 'rate_limit_exceeded', 'the fifth refused: the window counted the other process\'s call');
});

t.test('a transaction that failed after changing the rows does not leave its changes to the next', async (t) => {
  const { store, key } = await opened(t, null);
  await call(t, store, key, 'call_1');
  // The next hold adds to the account row as the last commit left it, then its entry in flight
  // cannot be written (as MDB_MAP_FULL would): the transaction fails and nothing is held.
  const calls = (store as unknown as { calls: { put: (...args: unknown[]) => unknown } }).calls;
  const put = calls.put;
  calls.put = () => {
    throw new Error('injected fault: MDB_MAP_FULL');
  };
  t.equal(await hold(store, key, 'call_2'), 'store_unavailable', 'the hold refused');
  calls.put = put;
  await call(t, store, key, 'call_3');
  const account = await store.account(key.account);
  t.same([account?.balanceNano, account?.held], [BALANCE - 2 * CHARGE, 0], 'two calls charged; the refused hold left nothing held');
});

t.test('a transaction of this process outside the ledger comes between as well', async (t) => {
  const { store, key } = await opened(t, null);
  await call(t, store, key, 'call_1');
  // An issuer change in this process: its own transaction, not the ledger's.
  await store.topUp(key.account, 7_000);
  await call(t, store, key, 'call_2');
  t.equal((await store.account(key.account))?.balanceNano, BALANCE + 7_000 - 2 * CHARGE, 'the top-up kept');
});

t.test('a model switched off or on between two calls is obeyed at the next', async (t) => {
  const { dir, store, key } = await opened(t, null);
  t.equal(await admitHolding(store, key, 'call_1'), null, 'admitted and held while the model is on');
  t.equal(await settle(store, key, 'call_1'), null, 'settled');
  // Switched off by another process (a second store on the environment, as the CLI or a worker).
  const other = Store.open(dir, { fsync: 'interval', fsyncIntervalMs: 1000 });
  t.teardown(() => other.close());
  await other.setModelSwitch('m', false);
  t.equal(await admitHolding(store, key, 'call_2'), 'model_not_available', 'refused once another process switched it off');
  t.equal(await admitHolding(store, key, 'call_3'), 'model_not_available', 'and at the call after, in the transaction that follows');
  // Switched on again in this process (the admin API's way): its own transaction, not the ledger's.
  await store.setModelSwitch('m', true);
  t.equal(await admitHolding(store, key, 'call_4'), null, 'admitted once switched on in this process');
  t.equal(await settle(store, key, 'call_4'), null, 'settled');
  t.equal((await store.account(key.account))?.balanceNano, BALANCE - 2 * CHARGE, 'the two calls admitted charged, the refused ones nothing');
});

t.test('a transaction that wrote nothing leaves the rows to be read again after another process commits', async (t) => {
  // LMDB does not number a transaction that writes nothing: the next one, of any process, takes
  // its id. A call refused at step 9 by a key without a rate or concurrency limit writes nothing.
  const { dir, store, key } = await opened(t, null, ['m']);
  await call(t, store, key, 'call_1');
  const refused = { ...HOLD, model: 'not-on-the-list' };
  const refusal = await new Promise((resolve) => store.admitHolding(key.hash, 'credit', 'call_2', { credit: refused, token: refused }, (_, r) => resolve(r)));
  t.equal(refusal, 'model_not_allowed', 'refused at step 9, nothing written');
  execFileSync(process.execPath, [CLI, 'keys', 'topup', key.id, '--usd', '0.01', '--data', dir], { stdio: 'ignore' });
  await call(t, store, key, 'call_3');
  t.equal((await store.account(key.account))?.balanceNano, BALANCE + 10_000_000 - 2 * CHARGE, 'the top-up kept: the call read the account again');
});
