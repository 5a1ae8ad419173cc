/**
 * storage.retentionDays: usage records older than that are deleted in small batches, the daily
 * totals stay; storage.responseRetentionDays: so are the owner records of stored responses
 * older than that. In process, with an injected clock and a real store.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { Store } from '../src/store/lmdb/store.js';
import { RetentionSweeper } from '../src/store/retention.js';
import { PLAIN_USAGE_DETAIL, type KeyRecord, type UsageRecord } from '../src/domain/types.js';

const DAY = 86_400_000;

interface Teardown { teardown(fn: () => unknown): void }

function record(at: number, i: number): UsageRecord {
  return { at, callId: `req_${at}_${i}`, requestId: `req_${at}_${i}`, endpoint: 'chat', model: 'm', stream: false, status: 200, inputTokens: 1, outputTokens: 1, cachedInputTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0, costNano: 10, tokensCharged: 2, error: null, estimated: false, clientGone: false, ...PLAIN_USAGE_DETAIL };
}

/** A store of its own, removed with the test, holding three credit keys made `createdAt`. */
async function storeWithKeys(t: Teardown, createdAt: number): Promise<{ store: Store; keys: KeyRecord[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-retention-'));
  const store = Store.open(dir);
  t.teardown(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const keys = [];
  for (let k = 0; k < 3; k++) keys.push(await store.createKey({ hash: `h${k}`, prefix: `gw_live_000${k}`, name: null, mode: 'credit', models: null, rpm: null, concurrency: null, expiresAt: null, amount: 1e9 }, createdAt));
  return { store, keys };
}

t.test('old records go in batches, recent ones and daily totals stay', async (t) => {
  const now = Date.UTC(2027, 5, 15, 12);
  const { store, keys } = await storeWithKeys(t, now - 500 * DAY);
  // Per key: 700 records 401–450 days old (past retention) and 30 records 0–399 days old.
  // Written as records of their own (no call in flight to settle).
  const committed: Promise<void>[] = [];
  for (const key of keys) {
    for (let i = 0; i < 700; i++) {
      committed.push(new Promise((resolve) => store.record(key, record(now - 401 * DAY - (i % 50) * DAY, i), { nano: 10, tokens: 0 }, { committed: () => resolve() }, false)));
    }
    for (let i = 0; i < 30; i++) {
      committed.push(new Promise((resolve) => store.record(key, record(now - i * 13 * DAY, i), { nano: 10, tokens: 0 }, { committed: () => resolve() }, false)));
    }
  }
  await Promise.all(committed);
  const oldDay = new Date(now - 401 * DAY).toISOString().slice(0, 10);
  const totalsBefore = await store.dailyOf(keys[0]!, '2020-01-01', '2030-01-01');

  let clock = now - 100 * DAY; // nothing is old yet by this clock
  const sweeper = new RetentionSweeper(store, { retentionDays: 400, batch: 250, now: () => clock });
  t.equal(await sweeper.sweep(), 0, 'with the clock 100 days back, nothing is past retention');

  clock = now;
  const batches: number[] = [];
  const original = store.deleteUsageBefore.bind(store);
  store.deleteUsageBefore = async (before, limit, from) => {
    const r = await original(before, limit, from);
    batches.push(r.deleted);
    return r;
  };
  t.equal(await sweeper.sweep(), 3 * 700, 'every record older than 400 days by the injected clock');
  t.ok(batches.every((n) => n <= 250), `in batches of at most 250 (${batches.join(', ')})`);
  t.ok(batches.length >= (3 * 700) / 250, 'many small transactions, not one big one');
  for (const key of keys) {
    const left = await store.usageOf(key, 1000);
    t.equal(left.length, 30, 'the recent records stay');
    t.ok(left.every((r) => r.at > now - 400 * DAY), 'only those within retention');
  }
  t.same(await store.dailyOf(keys[0]!, '2020-01-01', '2030-01-01'), totalsBefore, 'daily totals are kept, old days included');
  t.equal((await store.dailyOf(keys[0]!, oldDay, oldDay)).get(oldDay)?.requests, 14, 'e.g. a day whose records are gone still counts its 14 calls');
  t.equal(await sweeper.sweep(), 0, 'a second sweep finds nothing');
});

t.test('storage.retentionDays is validated, default 400', async (t) => {
  const { compileConfig } = await import('../src/config/load.js');
  t.equal(compileConfig({}, null).storage.retentionDays, 400);
  t.equal(compileConfig({ storage: { retentionDays: 30 } }, null).storage.retentionDays, 30);
  t.throws(() => compileConfig({ storage: { retentionDays: 0 } }, null), /storage\.retentionDays/);
});

t.test('owner records older than responseRetentionDays go in batches; younger ones stay', async (t) => {
  const now = Date.UTC(2027, 5, 15, 12);
  const { store, keys } = await storeWithKeys(t, now - 100 * DAY);
  // Per key: 250 responses 31–40 days old (past a 30-day retention) and 20 made 0–29 days ago.
  const committed: Promise<void>[] = [];
  const made = (key: KeyRecord, at: number, id: string): void => {
    committed.push(new Promise((resolve) => store.record(key, record(at, 0), { nano: 0, tokens: 0 }, { committed: () => resolve() }, false, { id, provider: 'openai', credential: 'default' })));
  };
  for (const [k, key] of keys.entries()) {
    for (let i = 0; i < 250; i++) made(key, now - 31 * DAY - (i % 10) * DAY, `resp_old_${k}_${i}`);
    for (let i = 0; i < 20; i++) made(key, now - i * 1.5 * DAY, `resp_new_${k}_${i}`);
  }
  await Promise.all(committed);
  const owner = (account: string, id: string) => new Promise((resolve) => store.responseOwner(account, id, (o) => resolve(o)));
  t.same(await owner(keys[0]!.account, 'resp_old_0_0'), { provider: 'openai', credential: 'default', at: now - 31 * DAY }, 'recorded with the settlement');

  let clock = now - 10 * DAY;
  const sweeper = new RetentionSweeper(store, { retentionDays: 400, responseRetentionDays: 30, batch: 100, now: () => clock });
  t.equal(await sweeper.sweep(), 0, 'with the clock 10 days back, nothing is past retention');
  clock = now;
  const batches: number[] = [];
  const original = store.deleteResponsesBefore.bind(store);
  store.deleteResponsesBefore = async (before, limit, from) => {
    const r = await original(before, limit, from);
    batches.push(r.deleted);
    return r;
  };
  t.equal(await sweeper.sweep(), 3 * 250, 'every owner record older than 30 days by the injected clock');
  t.ok(batches.length >= (3 * 270) / 100 && batches.every((n) => n <= 100), `in batches of at most 100 (${batches.join(', ')})`);
  for (const [k, key] of keys.entries()) {
    t.equal(await owner(key.account, `resp_old_${k}_0`), undefined, 'an old one is gone');
    t.equal(await owner(key.account, `resp_old_${k}_249`), undefined);
    for (let i = 0; i < 20; i++) t.ok(await owner(key.account, `resp_new_${k}_${i}`), 'a younger one stays');
  }
  t.equal(store.dump().responses.length, 3 * 20, 'only the younger ones are left');
  t.equal(await sweeper.sweep(), 0, 'a second sweep finds nothing');
});

t.test('storage.responseRetentionDays is validated, default 30', async (t) => {
  const { compileConfig } = await import('../src/config/load.js');
  t.equal(compileConfig({}, null).storage.responseRetentionDays, 30);
  t.equal(compileConfig({ storage: { responseRetentionDays: 7 } }, null).storage.responseRetentionDays, 7);
  for (const bad of [0, 1.5, '30', -1, 36_501]) {
    t.throws(() => compileConfig({ storage: { responseRetentionDays: bad } } as never, null), /storage\.responseRetentionDays/, `${JSON.stringify(bad)} refused, the field named`);
  }
});
