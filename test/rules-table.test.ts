/**
 * The rules, pinned on both backends: the same table of cases, each boundary included, answered
 * by the pure module (src/domain/rules.ts), by the LMDB backend (which calls it) and by the Redis
 * backend (whose Lua scripts restate it), and all three must agree with the answer written in the
 * table. Key usable (status, expiry, surface), funds against holds (exactly nothing left, the
 * hold that just fits), the model switch with its default (a model without a switch entry), the
 * hold, and a settlement sent twice. In process, on a real data directory and redis-server.
 *
 * The rate window's last millisecond is pinned on the pure rule only: each backend counts by its
 * own clock (Redis by the server's), which a test cannot hold still; test/rate-limit-burst.test.ts
 * and its run on Redis cover the window end to end.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import type { GatewayStore } from '../src/domain/interfaces.js';
import { fundsRefusal, keyRefusal, modelSwitchedOn, RATE_WINDOW_MS, retryAfterSeconds, windowOver } from '../src/domain/rules.js';
import { PLAIN_USAGE_DETAIL, type Account, type Hold, type KeyMode, type KeyRecord, type UsageRecord } from '../src/domain/types.js';
import { openStore } from '../src/store/store.js';
import { startRedis } from './helpers/redis.js';

const DAY = 86_400_000;
const HOLD = (amount: number, model = 'm', enabledByDefault = true): Hold => ({ amount, interruptedCharge: 1, interruptedInputTokens: 1, endpoint: 'chat', model, enabledByDefault, stream: false, at: Date.now(), previousResponses: null });

interface KeyCase { mode: KeyMode; amount: number; status?: 'active' | 'suspended'; expiresAt?: number | null }

/** A case: a key, holds placed before, then what is asked; `answer` is the table's. */
interface Case {
  name: string;
  key: KeyCase;
  /** Holds placed before the question, in the account's unit. */
  before?: number[];
  /** The model's run-time switch, when it has an entry. */
  switched?: boolean;
  ask: { admit: KeyMode } | { hold: Hold };
  answer: string | null;
}

const CASES: Case[] = [
  { name: 'an active credit key with funds', key: { mode: 'credit', amount: 1000 }, ask: { admit: 'credit' }, answer: null },
  { name: 'a suspended key', key: { mode: 'credit', amount: 1000, status: 'suspended' }, ask: { admit: 'credit' }, answer: 'key_suspended' },
  { name: 'an expired key', key: { mode: 'credit', amount: 1000, expiresAt: Date.now() - DAY }, ask: { admit: 'credit' }, answer: 'key_expired' },
  { name: 'a key expiring tomorrow', key: { mode: 'credit', amount: 1000, expiresAt: Date.now() + DAY }, ask: { admit: 'credit' }, answer: null },
  { name: 'a suspended and expired key: the status first', key: { mode: 'credit', amount: 1000, status: 'suspended', expiresAt: Date.now() - DAY }, ask: { admit: 'credit' }, answer: 'key_suspended' },
  { name: 'a token key on the credit surface', key: { mode: 'token', amount: 1000 }, ask: { admit: 'credit' }, answer: 'invalid_api_key' },
  { name: 'a credit key on the token surface', key: { mode: 'credit', amount: 1000 }, ask: { admit: 'token' }, answer: 'invalid_api_key' },
  { name: 'credit: one nUSD left after the holds', key: { mode: 'credit', amount: 1000 }, before: [999], ask: { admit: 'credit' }, answer: null },
  { name: 'credit: exactly nothing left after the holds', key: { mode: 'credit', amount: 1000 }, before: [400, 600], ask: { admit: 'credit' }, answer: 'insufficient_credit' },
  { name: 'credit: the hold that just fits (one nUSD left, a hold of 5000)', key: { mode: 'credit', amount: 1000 }, before: [999], ask: { hold: HOLD(5000) }, answer: null },
  { name: 'credit: a hold when nothing is left', key: { mode: 'credit', amount: 1000 }, before: [1000], ask: { hold: HOLD(1) }, answer: 'insufficient_credit' },
  { name: 'credit: a zero balance', key: { mode: 'credit', amount: 0 }, ask: { admit: 'credit' }, answer: 'insufficient_credit' },
  { name: 'token: one token left after the holds', key: { mode: 'token', amount: 100 }, before: [99], ask: { admit: 'token' }, answer: null },
  { name: 'token: the budget exactly used by the holds', key: { mode: 'token', amount: 100 }, before: [100], ask: { admit: 'token' }, answer: 'token_budget_exhausted' },
  { name: 'token: the hold that just fits', key: { mode: 'token', amount: 100 }, before: [99], ask: { hold: HOLD(50) }, answer: null },
  { name: 'a model without a switch entry, enabled by default', key: { mode: 'credit', amount: 1000 }, ask: { hold: HOLD(10, 'plain', true) }, answer: null },
  { name: 'a model without a switch entry, disabled by default', key: { mode: 'credit', amount: 1000 }, ask: { hold: HOLD(10, 'off', false) }, answer: 'model_not_available' },
  { name: 'a model switched on, disabled by default', key: { mode: 'credit', amount: 1000 }, switched: true, ask: { hold: HOLD(10, 'on', false) }, answer: null },
  { name: 'a model switched off, enabled by default', key: { mode: 'credit', amount: 1000 }, switched: false, ask: { hold: HOLD(10, 'off2', true) }, answer: 'model_not_available' },
  { name: 'switched off comes before the funds', key: { mode: 'credit', amount: 1000 }, before: [1000], switched: false, ask: { hold: HOLD(1, 'off3', true) }, answer: 'model_not_available' },
];

/** The pure module's answer to a case. */
function pure(c: Case, now: number): string | null {
  const held = (c.before ?? []).reduce((a, b) => a + b, 0);
  const account: Account = c.key.mode === 'credit'
    ? { mode: 'credit', balanceNano: c.key.amount, budgetTokens: 0, usedTokens: 0, held }
    : { mode: 'token', balanceNano: 0, budgetTokens: c.key.amount, usedTokens: 0, held };
  const key = { status: c.key.status ?? 'active', expiresAt: c.key.expiresAt ?? null, mode: c.key.mode } as KeyRecord;
  if ('admit' in c.ask) return keyRefusal(key, c.ask.admit, now) ?? fundsRefusal(account);
  if (!modelSwitchedOn(c.switched, c.ask.hold.enabledByDefault)) return 'model_not_available';
  return fundsRefusal(account);
}

let keys = 0;

/** A backend's answer to a case, asked through the store's interfaces. */
async function asked(store: GatewayStore, c: Case): Promise<string | null> {
  const n = (keys++).toString(16).padStart(4, '0');
  let key = await store.createKey({ hash: n.repeat(16), prefix: `gw_live_${n}`, name: null, mode: c.key.mode, models: null, rpm: null, concurrency: null, expiresAt: c.key.expiresAt ?? null, amount: c.key.amount });
  for (const [i, amount] of (c.before ?? []).entries()) {
    const placed = await new Promise((resolve) => store.hold(key, `before_${n}_${i}`, HOLD(amount), resolve));
    if (placed !== null) throw new Error(`a hold before the question was refused: ${String(placed)}`);
  }
  if (c.key.status === 'suspended') key = (await store.updateKey(key.id, (k) => ({ ...k, status: 'suspended' })))!;
  if (c.switched !== undefined && 'hold' in c.ask) await store.setModelSwitch(c.ask.hold.model, c.switched);
  if ('admit' in c.ask) {
    const surface = c.ask.admit;
    return new Promise((resolve) => store.admit(key.hash, surface, `call_${n}`, (_, refusal) => resolve(refusal)));
  }
  const hold = c.ask.hold;
  return new Promise((resolve) => store.hold(key, `call_${n}`, hold, (refusal) => resolve(refusal)));
}

async function backends(t: Test): Promise<Array<[string, GatewayStore]>> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-rules-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const lmdb = await openStore({ backend: 'lmdb', dataDir: dir }, { fsync: 'interval' });
  const redis = await openStore({ backend: 'redis', url: (await startRedis(t)).url });
  t.teardown(async () => {
    await lmdb.close();
    await redis.close();
  });
  return [['lmdb', lmdb], ['redis', redis]];
}

t.test('the table: the pure rules, LMDB and Redis give the same answer', async (t) => {
  const stores = await backends(t);
  for (const c of CASES) {
    const answers: Record<string, string | null> = { pure: pure(c, Date.now()) };
    for (const [name, store] of stores) answers[name] = await asked(store, c);
    t.same(answers, { pure: c.answer, lmdb: c.answer, redis: c.answer }, c.name);
  }
});

t.test('a settlement sent twice charges once, on both', async (t) => {
  for (const [name, store] of await backends(t)) {
    const key = await store.createKey({ hash: `${name}`.padEnd(64, 'f'), prefix: 'gw_live_twic', name: null, mode: 'credit', models: null, rpm: null, concurrency: null, expiresAt: null, amount: 10_000 });
    t.equal(await new Promise((resolve) => store.hold(key, 'call_twice', HOLD(5000), resolve)), null, `${name}: held`);
    const usage: UsageRecord = { at: Date.now(), callId: 'call_twice', requestId: 'call_twice', endpoint: 'chat', model: 'm', stream: false, status: 200, inputTokens: 1, outputTokens: 1, cachedInputTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0, costNano: 700, tokensCharged: 2, error: null, estimated: false, clientGone: false, ...PLAIN_USAGE_DETAIL };
    for (let i = 0; i < 2; i++) t.equal(await new Promise((resolve) => store.record(key, usage, { nano: 700, tokens: 0 }, { committed: resolve })), null, `${name}: settlement ${i + 1} answered`);
    const account = await store.account(key.account);
    t.same([account?.balanceNano, account?.held], [10_000 - 700, 0], `${name}: charged once, the hold released`);
    t.equal((await store.usageOf(key, 10)).length, 1, `${name}: one record`);
  }
});

t.test("the rate window's edges, in the pure rule the LMDB backend calls and the Lua script restates", async (t) => {
  const start = Date.UTC(2027, 0, 1);
  t.notOk(windowOver(start, start + RATE_WINDOW_MS - 1), 'its last millisecond is in it');
  t.ok(windowOver(start, start + RATE_WINDOW_MS), 'the next starts a new one');
  t.equal(retryAfterSeconds(start, start), 60, 'refused at its start: 60 s');
  t.equal(retryAfterSeconds(start, start + RATE_WINDOW_MS - 1), 1, 'refused in its last millisecond: at least 1 s');
  t.equal(retryAfterSeconds(start, start + 1500), 59, 'rounded up');
});

/**
 * admitHolding: steps 3–7, then 9, 10's switch, the responses continued and the hold, in one
 * store call. LMDB puts a limited key's step 7 and its hold in one group commit
 * (LmdbLedger.holdOnAdmission), Redis runs one script: both must decide as `admit` then `hold`
 * would, tell the caller exactly once, and leave nothing taken by a refused call (its key,
 * limited to one call at a time, is admitted again at once) and the hold of an admitted one.
 */
t.test('admitHolding: the order after step 7, told once, nothing kept by a refusal', async (t) => {
  for (const [name, store] of await backends(t)) {
    let n = 0;
    const limited = async (amount: number, models: string[] | null = null): Promise<KeyRecord> => {
      const id = `${name}${n++}`.padEnd(12, '0');
      return store.createKey({ hash: id.repeat(8).slice(0, 64), prefix: `gw_live_${id.slice(0, 4)}`, name: null, mode: 'credit', models, rpm: 4, concurrency: 1, expiresAt: null, amount });
    };
    const ask = (key: KeyRecord, call: string, hold: Hold): Promise<{ refusal: string | null; told: number; retryAfter: number }> => new Promise((resolve) => {
      let told = 0;
      const token: Hold = { ...hold, amount: 1, interruptedCharge: 1 };
      store.admitHolding(key.hash, 'credit', call, { credit: hold, token }, (_key, refusal, retryAfter) => {
        told++;
        // Told twice would show here: the second telling lands before this resolves.
        setTimeout(() => resolve({ refusal, told, retryAfter }), 50);
      });
    });
    const held = async (key: KeyRecord): Promise<number> => (await store.account(key.account))!.held;
    const release = (key: KeyRecord, call: string): Promise<void> => new Promise((resolve) => {
      store.release(key, call);
      setTimeout(resolve, 20);
    });
    await store.setModelSwitch('off', false);

    const key = await limited(10_000, ['m', 'off']);
    t.match(await ask(key, 'a1', HOLD(4000)), { refusal: null, told: 1 }, `${name}: admitted and held`);
    t.equal(await held(key), 4000, `${name}: its hold placed`);
    t.match(await ask(key, 'a2', HOLD(10)), { refusal: 'concurrency_limit_exceeded', told: 1 }, `${name}: its slot taken`);
    await release(key, 'a1');
    t.equal(await held(key), 0, `${name}: released`);
    for (const [call, hold, refusal] of [
      ['a3', HOLD(10, 'other'), 'model_not_allowed'],
      ['a4', HOLD(10, 'off'), 'model_not_available'],
      ['a5', { ...HOLD(10), previousResponses: ['resp_nobody_made'] }, 'previous_response_not_found'],
    ] as Array<[string, Hold, string]>) {
      t.match(await ask(key, call, hold), { refusal, told: 1 }, `${name}: ${refusal}, after step 7`);
      t.equal(await held(key), 0, `${name}: nothing held after ${refusal}`);
    }
    // a1, a3, a4 and a5 passed step 7 (a2, refused there, took nothing): the fourth of four.
    t.match(await ask(key, 'a6', HOLD(10)), { refusal: 'rate_limit_exceeded', told: 1 }, `${name}: calls refused after step 7 counted in the rate window`);
    t.equal(await held(key), 0, `${name}: nothing held by a call over the rate`);

    const poor = await limited(100);
    t.match(await ask(poor, 'b1', HOLD(90)), { refusal: null }, `${name}: a hold within the funds`);
    await release(poor, 'b1');
    const other = await limited(100);
    t.match(await ask(other, 'c1', HOLD(100)), { refusal: null }, `${name}: the hold that uses every nUSD`);
    t.match(await ask(other, 'c2', HOLD(1)), { refusal: 'insufficient_credit' }, `${name}: step 6, the funds net of holds, before step 7`);
    await release(other, 'c1');
    t.match(await ask(other, 'c3', HOLD(1)), { refusal: null, told: 1 }, `${name}: its slot free again once released`);
  }
});
