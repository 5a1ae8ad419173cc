import t from 'tap';
import { eventually, startCall, type LeavingClient } from './helpers/client-gone.js';
import { allRecords, defaultConfig, startGateway, usageOf, type Harness } from './helpers/harness.js';
import { prng } from './helpers/prng.js';

// Many clients leaving mid-stream at random points: every call ends up billed — exactly, from the
// provider's usage, when the provider finishes within the grace period; as a marked estimate when
// it does not — none is lost, and the balance is the exact sum of the records.
//
// Deterministic: the mock holds each stream at a seeded point, each client leaves after a seeded
// number of the events sent before that point and waits until the gateway has seen it go, and
// only then does the test release the streams (or never, to let the grace period run out).

const PATHS = [
  ['/v1/chat/completions', { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, 1],
  ['/v1/responses', { model: 'gpt-4o-mini', input: 'hi' }, 4],
  ['/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] }, 3],
] as const; // path, body, events each format sends before its first content delta


/** Starts `count` streams of 20 events, each held by the mock at a seeded point; every client leaves before it. */
async function leaveAtRandomPoints(gw: Harness, key: string, count: number, tag: string): Promise<void> {
  const random = prng(42);
  const clients: Array<Promise<LeavingClient>> = [];
  const leaveAfter: number[] = [];
  for (let i = 0; i < count; i++) {
    const [path, body, opening] = PATHS[i % 3]!;
    const holdAfter = 1 + random(19); // content deltas sent before the hold: 1 … 19 of 20
    leaveAfter.push(1 + random(opening + holdAfter)); // whole events the client reads before leaving
    const mock = { inputTokens: 100 + i, outputTokens: 50 + i, chunks: 20, hold: tag, holdAfter };
    clients.push(startCall(gw.base + path, key, { ...body, stream: true, mock }));
  }
  await gw.mock.waitHeld(tag, count);
  await Promise.all(clients.map(async (c, i) => {
    const client = await c;
    await client.events(leaveAfter[i]!);
    await client.leave();
  }));
}

t.test('200 clients leaving at random points, the provider finishing after they left: all billed exactly', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '100']);
  await leaveAtRandomPoints(gw, key, 200, 'rest');
  gw.mock.release('rest');
  const records = await eventually(async () => {
    const { records } = await allRecords(gw.base, key, 500);
    return records.length === 200 ? records : undefined;
  }, 60_000);
  t.same(records.filter((r) => !(r.clientGone && !r.estimated && r.error === null)), [], 'every call: client gone, billed from the provider usage');
  t.same(records.filter((r) => r.outputTokens - r.inputTokens !== -50), [], 'each record carries its own provider usage');
  const spent = records.reduce((s, r) => s + r.costNanoUsd, 0);
  t.equal((await usageOf(gw.base, key)).key.balanceNanoUsd, 100e9 - spent, 'the balance is the exact sum');
});

t.test('100 clients leaving at random points, the provider never finishing: all billed as marked estimates', async (t) => {
  const gw = await startGateway(t, {
    config: (url) => ({ ...defaultConfig(url), limits: { clientGoneGraceMs: 300 } }),
  });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '100']);
  await leaveAtRandomPoints(gw, key, 100, 'never');
  const records = await eventually(async () => {
    const { records } = await allRecords(gw.base, key, 500);
    return records.length === 100 ? records : undefined;
  }, 60_000);
  t.same(records.filter((r) => !(r.clientGone && r.estimated && r.error === null && r.costNanoUsd > 0)), [], 'every call: client gone, an estimate billed and marked');
  const spent = records.reduce((s, r) => s + r.costNanoUsd, 0);
  t.equal((await usageOf(gw.base, key)).key.balanceNanoUsd, 100e9 - spent, 'the balance is the exact sum');
});
