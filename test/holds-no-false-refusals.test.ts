/**
 * A key whose balance or budget covers all its calls in flight at their caps is never refused:
 * 50 calls held in flight at once (mock.pause) on a key holding $1, and on keys holding
 * exactly 50 holds' worth, all go through. And what is held shows in /usage/api while the
 * calls are in flight, and on the usage page as "held by calls in progress".
 */
import t from 'tap';
import { launchBrowser, openPage, DESKTOP } from './helpers/browser.js';
import { eventually } from './helpers/client-gone.js';
import { post, startGateway, usageOf, type Harness, type Reply } from './helpers/harness.js';

const N = 50;
const BODY = { model: 'gpt-4o-mini', max_tokens: 20, messages: [{ role: 'user', content: 'Say hi.' }] };
const BYTES = Buffer.byteLength(JSON.stringify(BODY));
const HOLD_NANO = BYTES * 150 + 20 * 600;
const HOLD_TOKENS = BYTES + 20;

/** Starts `n` calls and resolves once the provider holds all of them (the replies come after `release`). */
async function inFlight(gw: Harness, path: string, key: string, n: number): Promise<{ replies: Promise<Reply[]> }> {
  gw.mock.pause();
  const replies = Promise.all(Array.from({ length: n }, () => post(`${gw.base}${path}`, key, BODY)));
  let early: Reply[] | undefined;
  void replies.then((r) => (early = r));
  await eventually(async () => (gw.mock.held === n || early !== undefined ? true : undefined));
  // Wrapped: an async function returning the promise itself would wait for it.
  return { replies };
}

t.test('calls covered at their caps all go through, and what they hold is shown', async (t) => {
  const gw = await startGateway(t);
  const dollar = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const exact = await gw.createKey(['--mode', 'credit', '--balance', (N * HOLD_NANO / 1e9).toFixed(9)]);
  const tokens = await gw.createKey(['--mode', 'token', '--budget', String(N * HOLD_TOKENS)]);

  let pending = await inFlight(gw, '/v1/chat/completions', dollar.key, N);
  t.equal(gw.mock.held, N, `all ${N} calls on $1 reached the provider`);
  const during = await usageOf(gw.base, dollar.key);
  t.equal(during.key.heldNanoUsd, N * HOLD_NANO, 'the usage API shows the holds of the calls in flight');
  t.equal(during.key.heldUsd, (N * HOLD_NANO / 1e9).toFixed(6));
  t.equal(during.key.balanceNanoUsd, 1e9, 'the balance itself is untouched until calls end');

  // The page says so in words.
  const browser = await launchBrowser(t);
  const w = await openPage(browser, DESKTOP);
  await w.page.goto(`${gw.base}/usage`);
  await w.page.locator('#key').fill(dollar.key);
  await w.page.locator('#key').press('Enter');
  await w.page.locator('#held').waitFor();
  t.match(await w.page.locator('#held').innerText(), `$${during.key.heldUsd} held by calls in progress`);

  gw.mock.release();
  let replies = await pending.replies;
  t.same(replies.map((r) => r.status), replies.map(() => 200), 'every call on $1 succeeded');
  const after = await usageOf(gw.base, dollar.key);
  t.equal(after.key.heldNanoUsd, 0, 'nothing held once they ended');

  // Reload: nothing held, nothing said.
  await w.page.reload();
  await w.page.locator('#key').fill(dollar.key);
  await w.page.locator('#key').press('Enter');
  await w.page.locator('#balance').waitFor();
  t.equal(await w.page.locator('#held').count(), 0, 'no held line when nothing is held');

  pending = await inFlight(gw, '/v1/chat/completions', exact.key, N);
  t.equal(gw.mock.held, N, 'a balance of exactly 50 holds admits all 50');
  gw.mock.release();
  replies = await pending.replies;
  t.same(replies.map((r) => r.status), replies.map(() => 200));

  pending = await inFlight(gw, '/token/v1/chat/completions', tokens.key, N);
  t.equal(gw.mock.held, N, 'a budget of exactly 50 holds admits all 50');
  const tokenDuring = await usageOf(gw.base, tokens.key);
  t.equal(tokenDuring.key.heldTokens, N * HOLD_TOKENS, 'a token key shows heldTokens');
  gw.mock.release();
  replies = await pending.replies;
  t.same(replies.map((r) => r.status), replies.map(() => 200));
  t.equal((await usageOf(gw.base, tokens.key)).key.heldTokens, 0);
});
