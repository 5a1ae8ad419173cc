/**
 * What is on disk and in Redis does not change with the code: the stores of test/fixtures/store
 * (an LMDB data directory and a Redis RDB file written by an earlier build, made by
 * scripts/make-store-fixtures.mjs) are opened with this checkout's code, and every key, account,
 * usage record, day total, model switch, audit entry and owner record reads back field by field
 * as that build read it; on LMDB the whole dump too (calls in flight included, as `store
 * migrate` reads them). Then the calls the killed gateway left in flight (a process gone for
 * good, known only by its old registration) are settled by this code exactly as its entries
 * say: each held call billed its interrupted charge as an `interrupted` record, each slot freed,
 * nothing left held, nothing settled twice.
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import type { GatewayStore } from '../src/domain/interfaces.js';
import type { Account, KeyRecord, ResponseOwner, UsageRecord } from '../src/domain/types.js';
import { openMigrationSource, openStore } from '../src/store/store.js';
import { startRedis } from './helpers/redis.js';

const FIXTURES = fileURLToPath(new URL('./fixtures/store/', import.meta.url));

interface Expected {
  keys: KeyRecord[];
  accounts: Record<string, Account>;
  usage: Record<string, UsageRecord[]>;
  daily: Record<string, Record<string, unknown>>;
  audit: unknown[];
  switches: Record<string, boolean | null>;
  responses: Array<{ account: string; id: string; owner: ResponseOwner | null }>;
}

/** A call left in flight, as the fixture's writer stored it. */
interface Flight { keyId: string; callId: string; account: string; phase: 0 | 1; held: number; interruptedCharge: number; interruptedInputTokens: number; endpoint: string; model: string; stream: boolean; at: number }

const plain = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

async function readsBack(t: Test, store: GatewayStore, expected: Expected): Promise<void> {
  const keys = await store.allKeys();
  t.strictSame(plain(keys), expected.keys, 'every key, field by field');
  // The days every record falls on, and one either side: on Redis a day is one read, and a
  // century of them (36,525 per key) outlasts the command timeout on a busy machine.
  const ats = Object.values(expected.usage).flat().map((u) => u.at);
  const day = (at: number): string => new Date(at).toISOString().slice(0, 10);
  const [fromDay, toDay] = [day(Math.min(...ats) - 86_400_000), day(Math.max(...ats) + 86_400_000)];
  t.ok(keys.some((k) => k.rotatedFrom !== null) && keys.some((k) => k.status === 'suspended') && keys.some((k) => k.mode === 'token'), 'rotated, suspended and token keys among them');
  for (const key of keys) {
    t.strictSame(plain(await store.account(key.account)), expected.accounts[key.account], `account of ${key.name ?? key.id}`);
    t.strictSame(plain(await store.usageOf(key, 1000)), expected.usage[key.id], `usage records of ${key.name ?? key.id}`);
    t.strictSame(plain(Object.fromEntries(await store.dailyOf(key, fromDay, toDay))), expected.daily[key.id], `day totals of ${key.name ?? key.id}`);
  }
  t.ok(Object.values(expected.accounts).some((a) => a.held > 0), 'accounts with holds among them');
  t.ok(Object.values(expected.usage).flat().some((u) => u.callId === 'req_old_1' && u.requestId === 'req_old_1'), 'a record of the oldest shape among them');
  t.strictSame(plain(await store.auditTrail(undefined, 1e6)), expected.audit, 'every audit entry, in order');
  for (const [model, on] of Object.entries(expected.switches)) t.equal((await store.modelSwitch(model)) ?? null, on, `the switch of ${model}`);
  t.ok(expected.responses.length >= 3, 'owner records among them');
  for (const r of expected.responses) {
    const owner = await new Promise((resolve, reject) => store.responseOwner(r.account, r.id, (o, failure) => (failure ? reject(failure) : resolve(o ?? null))));
    t.strictSame(plain(owner), r.owner, `owner record of ${r.id}`);
  }
}

/**
 * Serving settles what the dead process left: each held call's interrupted record, the account
 * charged exactly that, nothing held any more; a call that held a slot only leaves no record.
 */
async function settlesFlights(t: Test, store: GatewayStore, expected: Expected, flights: Flight[]): Promise<void> {
  t.equal(flights.filter((f) => f.phase === 1).length, 3, 'three calls with holds in flight');
  t.equal(flights.filter((f) => f.phase === 0).length, 2, 'two calls with a concurrency slot only');
  await store.serveCalls();
  const keys = await store.allKeys();
  for (const key of keys) {
    const mine = flights.filter((f) => f.keyId === key.id);
    const records = await store.usageOf(key, 1000);
    const before = expected.usage[key.id]!;
    const interrupted = records.filter((r) => r.error === 'interrupted');
    t.equal(records.length, before.length + mine.filter((f) => f.phase === 1).length, `${key.name}: one record per held call, none for a slot`);
    for (const f of mine.filter((c) => c.phase === 1)) {
      const r = interrupted.find((x) => x.callId === f.callId);
      t.ok(r, `${key.name}: the call ${f.callId} is settled`);
      if (r === undefined) continue;
      const credit = key.mode === 'credit';
      t.strictSame(
        { at: r.at, endpoint: r.endpoint, model: r.model, stream: r.stream, inputTokens: r.inputTokens, costNano: r.costNano, tokensCharged: r.tokensCharged, estimated: r.estimated, status: r.status },
        { at: f.at, endpoint: f.endpoint, model: f.model, stream: f.stream, inputTokens: f.interruptedInputTokens, costNano: credit ? f.interruptedCharge : null, tokensCharged: credit ? 0 : f.interruptedCharge, estimated: true, status: 500 },
        `${key.name}: billed as its entry says`,
      );
    }
  }
  for (const [id, a] of Object.entries(expected.accounts)) {
    const held = flights.filter((f) => f.account === id && f.phase === 1);
    const charged = held.reduce((s, f) => s + f.interruptedCharge, 0);
    const now = await store.account(id);
    t.equal(now?.held, 0, `account ${id}: nothing held any more`);
    if (a.mode === 'credit') t.equal(now?.balanceNano, a.balanceNano - charged, `account ${id}: charged the interrupted calls once`);
    else t.equal(now?.usedTokens, a.usedTokens + charged, `account ${id}: charged the interrupted calls once`);
  }
}

t.test('LMDB: a data directory written by an earlier build', async (t) => {
  const expected = JSON.parse(readFileSync(join(FIXTURES, 'lmdb.expected.json'), 'utf8')) as Expected & { dump: { calls: Flight[] } & Record<string, unknown> };
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-fixture-lmdb-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  copyFileSync(join(FIXTURES, 'lmdb', 'data.mdb'), join(dir, 'data.mdb'));
  const source = await openMigrationSource(dir);
  t.strictSame(plain(source.dump()), expected.dump, 'the whole store, as store migrate reads it (calls in flight included)');
  await source.close();
  const store = await openStore({ backend: 'lmdb', dataDir: dir }, { fsync: 'interval' });
  t.teardown(() => store.close());
  await readsBack(t, store, expected);
  await settlesFlights(t, store, expected, expected.dump.calls);
});

t.test('Redis: an RDB file written by an earlier build (redis-server 7.0 SAVE)', async (t) => {
  const expected = JSON.parse(readFileSync(join(FIXTURES, 'redis.expected.json'), 'utf8')) as Expected & { rawCalls: Record<string, string>; ownerCalls: Record<string, string[]> };
  const redis = await startRedis(t, { rdb: join(FIXTURES, 'redis', 'dump.rdb') });
  t.match(await redis.cli('DBSIZE'), /^[1-9]\d*/, 'the RDB file is loaded');
  const store = await openStore({ backend: 'redis', url: redis.url });
  t.teardown(() => store.close());
  await readsBack(t, store, expected);
  // The calls in flight as the scripts stored them (JSON, numbers as decimal strings).
  const keyIdOf = new Map(expected.keys.map((k) => [k.hash, k.id]));
  const flights: Flight[] = Object.entries(expected.rawCalls).map(([member, raw]) => {
    const [hash, callId] = member.split(' ') as [string, string];
    const c = JSON.parse(raw) as Record<string, string | number>;
    return {
      keyId: keyIdOf.get(hash)!, callId, account: String(c.a), phase: c.p as 0 | 1, held: Number(c.h), interruptedCharge: Number(c.ic ?? 0),
      interruptedInputTokens: Number(c.it ?? 0), endpoint: String(c.e ?? ''), model: String(c.m ?? ''), stream: c.s === '1', at: Number(c.at),
    };
  });
  t.equal(Object.values(expected.ownerCalls).flat().length, flights.length, 'every call in flight is in its owner index');
  await settlesFlights(t, store, expected, flights);
});
