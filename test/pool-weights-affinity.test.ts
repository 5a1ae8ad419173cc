/**
 * A pool's calls split by the credentials' weights over many accounts, and each account keeps
 * its credential per model (the provider-side prompt cache of one organisation stays warm): the
 * same (account, model) goes to the same credential every time, whichever process or restart.
 */
import t from 'tap';
import { post } from './helpers/harness.js';
import { accessLineOf, chatBody, receivers, startPoolGateway } from './helpers/pool-gateway.js';

/** Runs `call(i)` for i < n, `width` at a time. */
async function inBatches(n: number, width: number, call: (i: number) => Promise<void>): Promise<void> {
  for (let i = 0; i < n; i += width) await Promise.all(Array.from({ length: Math.min(width, n - i) }, (_, j) => call(i + j)));
}

// 1,400 calls and a thousand keys: longer than tap's default on a shared machine and on Redis.
t.setTimeout(10 * 60_000);

t.test('weights 3:1 over 1,000 accounts: within 5 points of 75 % / 25 %; each (account, model) stays where it went', async (t) => {
  const gw = await startPoolGateway(t, { openai: [{ name: 'org-a', weight: 3 }, { name: 'org-b', weight: 1 }] });
  const accounts = await gw.keys(1000);
  const first: string[] = [];
  await inBatches(accounts.length, 25, async (i) => {
    const r = await post(`${gw.base}/v1/chat/completions`, accounts[i]!.key, chatBody({ mock: { requestId: `first-${i}` } }));
    if (r.status !== 200) throw new Error(`call ${i}: ${r.status} ${r.text}`);
    const got = receivers(gw, `first-${i}`);
    if (got.length !== 1) throw new Error(`call ${i} reached ${got.join(', ') || 'no provider'}`);
    first[i] = got[0]!;
  });
  const onA = first.filter((c) => c === 'org-a').length;
  t.equal(onA + first.filter((c) => c === 'org-b').length, 1000, 'every call went to one credential, once');
  t.ok(Math.abs(onA / 1000 - 0.75) <= 0.05, `org-a (weight 3) got ${onA} of 1,000 calls`);

  // The access log names the credential that answered each call (never its key).
  for (let i = 0; i < 1000; i += 97) t.match(await accessLineOf(gw, `first-${i}`), { status: 200, credential: first[i], attempts: 1 }, `call ${i}'s line names ${first[i]}`);
  t.notOk(gw.serverLog().includes(gw.secrets['org-a']!) || gw.accessLines().some((l) => JSON.stringify(l).includes('sk-pool-')), 'no credential value in any log');

  // Again, for 200 of the accounts, the same model: every one to the same credential.
  await inBatches(200, 25, async (i) => {
    await post(`${gw.base}/v1/chat/completions`, accounts[i]!.key, chatBody({ mock: { requestId: `again-${i}` } }));
  });
  const moved = Array.from({ length: 200 }, (_, i) => i).filter((i) => receivers(gw, `again-${i}`)[0] !== first[i]);
  t.same(moved, [], 'the same account and model: the same credential');

  // Another model is chosen on its own, and as stably: twice the same for every account.
  const other: string[] = [];
  await inBatches(200, 25, async (i) => {
    await post(`${gw.base}/v1/chat/completions`, accounts[i]!.key, chatBody({ model: 'gpt-4o', mock: { requestId: `other-${i}` } }));
    other[i] = receivers(gw, `other-${i}`)[0]!;
  });
  await inBatches(200, 25, async (i) => {
    await post(`${gw.base}/v1/chat/completions`, accounts[i]!.key, chatBody({ model: 'gpt-4o', mock: { requestId: `other-again-${i}` } }));
  });
  t.same(Array.from({ length: 200 }, (_, i) => i).filter((i) => receivers(gw, `other-again-${i}`)[0] !== other[i]), [], 'per model, as stable');
  t.ok(other.some((c, i) => c !== first[i]), 'and not tied to the account\'s choice for the first model');

  // Each provider saw only its own credential.
  for (const [name, mock] of Object.entries(gw.mocks)) {
    t.ok(mock.requests.every((r) => r.headers.authorization === undefined || r.headers.authorization === `Bearer ${gw.secrets[name]}`), `${name}'s provider got ${name}'s key only`);
  }
});
