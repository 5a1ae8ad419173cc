/**
 * Credentials leave the rotation after the provider refuses them, and come back: a 429 rests the
 * (credential, model) pair for its `retry-after`; an origin that cannot be reached rests the
 * credential, 1 s doubling; a 401 or OpenAI's `insufficient_quota` takes it out, with one call a
 * minute sent to it until it is answered. Meanwhile calls go to the other credentials, each
 * billed once; a provider whose only credential is rate limited passes its 429 on, unbilled.
 * The gateway's clock is the test's (helpers/pool-gateway.ts): no test waits for a rest to end.
 */
import t from 'tap';
import { post } from './helpers/harness.js';
import { accessLineOf, affinity, chatBody, metricOf, receivers, recordOf, startPoolGateway, type PoolGateway } from './helpers/pool-gateway.js';

const CHAT = '/v1/chat/completions';

/** A chat call of `key`, marked so that the provider that got it can be told. */
async function call(gw: PoolGateway, key: string, marker: string, extra: Record<string, unknown> = {}) {
  const reply = await post(`${gw.base}${CHAT}`, key, chatBody({ ...extra, mock: { requestId: marker } }));
  return { ...reply, to: receivers(gw, marker) };
}

t.test('a 429 with retry-after: 30 rests that credential for that model 30 s; its calls go to the other, billed once', async (t) => {
  const gw = await startPoolGateway(t, { openai: [{ name: 'org-a' }, { name: 'org-b' }] });
  const mini = await affinity(gw, ['org-a', 'org-b']);
  const big = await affinity(gw, ['org-a'], 'gpt-4o');
  const [onA, alsoOnA] = mini.get('org-a')!;
  const onAForBig = big.get('org-a')![0]!;
  gw.mocks['org-a']!.refuseAll(429, { headers: { 'retry-after': '30' }, model: 'gpt-4o-mini' });

  // The call that finds the limit: refused by org-a, sent again to org-b, answered.
  const plain = (await recordOf(gw, onA!.key, `affinity-${onA!.account}-gpt-4o-mini`)).costNanoUsd as number;
  const first = await call(gw, onA!.key, 'limited-1');
  t.equal(first.status, 200, 'the client gets an answer');
  t.same(first.to.sort(), ['org-a', 'org-b'], 'org-a was asked, then org-b');
  t.equal(gw.mocks['org-a']!.requests.filter((r) => r.body.includes('"limited-1"')).length, 1, 'org-a was asked once (and refused)');
  const record = await recordOf(gw, onA!.key, 'limited-1');
  t.match(record, { status: 200, attempts: 2, costNanoUsd: plain }, 'one record, two sends, billed as one call');
  t.equal(record.credential, undefined, '/usage/api does not name the credential');
  const usage = await (await fetch(`${gw.base}/usage/api`, { headers: { authorization: `Bearer ${onA!.key}` } })).json() as any;
  t.equal(usage.requests.length, 2, 'the account has one record per call (its first call and this one)');
  t.equal(usage.key.balanceNanoUsd, 1e9 - 2 * plain, 'charged once per call');
  t.match(await accessLineOf(gw, 'limited-1'), { status: 200, attempts: 2, credential: 'org-b' }, 'the access log names the answering credential and the attempts');

  // For 30 s of the gateway's clock, org-a gets no call of that model, from any account.
  const askedOfA = gw.mocks['org-a']!.requests.length;
  for (const [i, account] of [onA!, alsoOnA!].entries()) {
    const r = await call(gw, account.key, `resting-${i}`);
    t.match({ status: r.status, to: r.to }, { status: 200, to: ['org-b'] }, `account ${i}'s call goes straight to org-b`);
    t.equal((await recordOf(gw, account.key, `resting-${i}`)).attempts, 1, 'with one send');
  }
  t.equal(gw.mocks['org-a']!.requests.length, askedOfA, 'org-a was not asked');
  t.equal(await metricOf(gw, 'tollgate_upstream_attempts_total', { provider: 'openai', credential: 'org-a', outcome: 'status_429' }), 1, 'its 429 counted');
  t.equal(await metricOf(gw, 'tollgate_upstream_credential_up', { provider: 'openai', credential: 'org-a' }), 0, 'org-a shown resting');
  t.equal(await metricOf(gw, 'tollgate_upstream_credential_up', { provider: 'openai', credential: 'org-b' }), 1, 'org-b in rotation');
  const ready = await gw.readyz();
  t.equal(ready.status, 200, '/readyz stays 200');
  t.match(ready.body.notInRotation, [{ provider: 'openai', credential: 'org-a', reason: 'rate_limited', model: 'gpt-4o-mini' }], '/readyz lists the pair and why');

  // Another model is not limited: org-a still answers it.
  const other = await call(gw, onAForBig.key, 'other-model', { model: 'gpt-4o' });
  t.match({ status: other.status, to: other.to }, { status: 200, to: ['org-a'] }, 'gpt-4o still goes to org-a');

  await gw.advance(29_999);
  const late = await call(gw, onA!.key, 'still-resting');
  t.same(late.to, ['org-b'], 'a millisecond before the 30 s: still org-b');
  gw.mocks['org-a']!.answerAll();
  await gw.advance(1);
  const back = await call(gw, onA!.key, 'rested');
  t.match({ status: back.status, to: back.to }, { status: 200, to: ['org-a'] }, 'after 30 s the account is back on org-a');
  t.equal(await metricOf(gw, 'tollgate_upstream_credential_up', { provider: 'openai', credential: 'org-a' }), 1, 'and org-a is up');
  t.notOk((await gw.readyz()).body.notInRotation, '/readyz lists nothing');
});

t.test('a provider whose only credential is rate limited: its 429 passes through, unbilled; then answered without a send until the rest ends', async (t) => {
  const gw = await startPoolGateway(t, { openai: [{ name: 'solo' }] });
  const [account] = await gw.keys(1);
  gw.mocks.solo!.refuseAll(429, { headers: { 'retry-after': '30' } });
  const refused = await post(`${gw.base}${CHAT}`, account!.key, chatBody());
  t.equal(refused.status, 429, 'the provider\'s 429');
  t.equal(refused.json?.error?.code, 'rate_limit_exceeded', 'with the provider\'s own body');
  t.equal(gw.mocks.solo!.requests.length, 1, 'sent once: no other credential to send it to');
  const again = await post(`${gw.base}${CHAT}`, account!.key, chatBody());
  t.equal(again.status, 429, 'the next call gets the same 429');
  t.equal(again.text, refused.text, 'the same body');
  t.equal(gw.mocks.solo!.requests.length, 1, 'without a send');
  t.equal(refused.headers.get('retry-after'), null, 'the provider\'s own retry-after is not passed on');
  t.equal(again.headers.get('retry-after'), '30', 'the 429 answered again says when a call can go out: the rest\'s 30 s');
  await gw.advance(12_500);
  const later = await post(`${gw.base}${CHAT}`, account!.key, chatBody());
  t.equal(later.headers.get('retry-after'), '18', '12.5 s later, the 17.5 s left, rounded up');
  t.equal(gw.mocks.solo!.requests.length, 1, 'still without a send');
  const usage = await (await fetch(`${gw.base}/usage/api`, { headers: { authorization: `Bearer ${account!.key}` } })).json() as any;
  t.same(usage.requests.map((r: any) => [r.status, r.costNanoUsd, r.attempts]).sort(), [[429, 0, 0], [429, 0, 0], [429, 0, 1]], 'each recorded at zero cost (those answered again with no send)');
  t.equal(usage.key.balanceNanoUsd, 1e9, 'nothing charged');

  gw.mocks.solo!.answerAll();
  await gw.advance(17_500);
  const ok = await post(`${gw.base}${CHAT}`, account!.key, chatBody());
  t.equal(ok.status, 200, 'after 30 s the call goes out and is answered');
  t.equal(gw.mocks.solo!.requests.length, 2, 'sent');
});

t.test('without retry-after a rest is 1 s, doubling while the refusals follow each other', async (t) => {
  const gw = await startPoolGateway(t, { openai: [{ name: 'solo' }] });
  const [account] = await gw.keys(1);
  const solo = gw.mocks.solo!;
  solo.refuseAll(429);
  const sends = (): number => solo.requests.length;
  t.equal((await post(`${gw.base}${CHAT}`, account!.key, chatBody())).status, 429, 'refused: rests 1 s');
  await gw.advance(999);
  await post(`${gw.base}${CHAT}`, account!.key, chatBody());
  t.equal(sends(), 1, 'not sent before the second is over');
  await gw.advance(1);
  await post(`${gw.base}${CHAT}`, account!.key, chatBody());
  t.equal(sends(), 2, 'sent after 1 s, refused again: rests 2 s');
  await gw.advance(1_999);
  await post(`${gw.base}${CHAT}`, account!.key, chatBody());
  t.equal(sends(), 2, 'not sent before 2 s');
  solo.answerAll();
  await gw.advance(1);
  t.equal((await post(`${gw.base}${CHAT}`, account!.key, chatBody())).status, 200, 'after 2 s: sent and answered');
  t.equal(sends(), 3, 'sent');
});

t.test('an origin that cannot be reached rests its credential (1 s, then 2 s), its calls going to the other; it comes back', async (t) => {
  const gw = await startPoolGateway(t, { openai: [{ name: 'org-a' }, { name: 'org-b' }] });
  // Unreachable before the gateway ever connected to it (no connection of its is left open).
  await gw.mocks['org-a']!.refuseConnections();
  const accounts = await gw.keys(16);
  const attempts: number[] = [];
  for (const [i, a] of accounts.entries()) {
    const r = await call(gw, a.key, `down-${i}`);
    t.equal(r.status, 200, `call ${i} answered`);
    attempts.push((await recordOf(gw, a.key, `down-${i}`)).attempts);
  }
  const found = attempts.indexOf(2);
  t.ok(found >= 0, 'one call found org-a unreachable and was sent again to org-b');
  t.same(attempts.filter((n) => n !== 1), [2], 'only that one: the others went straight to org-b');
  t.equal(gw.mocks['org-b']!.requests.length, 16, 'org-b answered every call');
  const onA = accounts[found]!;
  t.equal(await metricOf(gw, 'tollgate_upstream_attempts_total', { provider: 'openai', credential: 'org-a', outcome: 'connect_error' }), 1, 'the failed connection counted');
  t.match((await gw.readyz()).body.notInRotation, [{ credential: 'org-a', reason: 'unreachable' }], '/readyz: org-a unreachable');
  t.equal(await metricOf(gw, 'tollgate_upstream_credential_up', { provider: 'openai', credential: 'org-a' }), 0, 'org-a down');

  // Still unreachable after its second: tried once more, rests 2 s.
  await gw.advance(1_000);
  t.equal((await call(gw, onA.key, 'down-again')).status, 200, 'answered by org-b');
  t.equal((await recordOf(gw, onA.key, 'down-again')).attempts, 2, 'after org-a failed again');
  await gw.advance(1_999);
  await call(gw, onA.key, 'within-two');
  t.equal((await recordOf(gw, onA.key, 'within-two')).attempts, 1, 'within the 2 s org-a is not tried');
  t.equal(await metricOf(gw, 'tollgate_upstream_attempts_total', { provider: 'openai', credential: 'org-a', outcome: 'connect_error' }), 2, 'two failed connections in all');

  await gw.mocks['org-a']!.acceptConnections();
  await gw.advance(1);
  const back = await call(gw, onA.key, 'reachable');
  t.match({ status: back.status, to: back.to }, { status: 200, to: ['org-a'] }, 'reachable again: the account\'s calls go to org-a');
  t.equal(await metricOf(gw, 'tollgate_upstream_credential_up', { provider: 'openai', credential: 'org-a' }), 1, 'org-a up');
});

t.test('a revoked credential (401) leaves the rotation, named once on stderr; one call a minute is sent to it; fixed, it comes back', async (t) => {
  const gw = await startPoolGateway(t, { openai: [{ name: 'org-a' }, { name: 'org-b' }] });
  const mini = await affinity(gw, ['org-a', 'org-b']);
  const onA = mini.get('org-a')![0]!;
  const onB = mini.get('org-b')![0]!;
  const orgA = gw.mocks['org-a']!;
  orgA.refuseCredential(gw.secrets['org-a']!, 401);
  const sentToA = (): number => orgA.requests.length;

  const first = await call(gw, onA.key, 'revoked-1');
  t.match({ status: first.status, to: first.to.sort() }, { status: 200, to: ['org-a', 'org-b'] }, 'refused by org-a, the call is answered by org-b');
  t.match(await accessLineOf(gw, 'revoked-1'), { status: 200, attempts: 2, credential: 'org-b' }, 'the access log names org-b');
  t.equal((await recordOf(gw, onA.key, 'revoked-1')).attempts, 2, 'after org-a refused it');
  const named = gw.events('provider_credential_refused');
  t.match(named, [{ provider: 'openai', credential: 'org-a' }], 'named once on stderr');
  t.notOk(gw.serverLog().includes(gw.secrets['org-a']!), 'never its value');
  t.match((await gw.readyz()).body.notInRotation, [{ credential: 'org-a', reason: 'unauthenticated', until: null }], '/readyz: out, until a probe succeeds');

  const before = sentToA();
  for (let i = 0; i < 3; i++) await call(gw, onA.key, `out-${i}`);
  await gw.advance(59_999);
  await call(gw, onA.key, 'out-late');
  t.equal(sentToA(), before, 'within the minute org-a gets no call');

  // A minute on: one call (whichever account's) is sent to it; refused again, it is answered by org-b.
  await gw.advance(1);
  const probe = await call(gw, onB.key, 'probe-1');
  t.match({ status: probe.status, to: probe.to.sort() }, { status: 200, to: ['org-a', 'org-b'] }, 'the probe was refused by org-a and answered by org-b');
  await call(gw, onA.key, 'after-probe');
  t.equal(sentToA(), before + 1, 'one probe a minute, no more');
  t.equal(gw.events('provider_credential_refused').length, 1, 'still named once');

  orgA.acceptCredential(gw.secrets['org-a']!);
  await gw.advance(60_000);
  const fixed = await call(gw, onB.key, 'probe-2');
  t.match({ status: fixed.status, to: fixed.to }, { status: 200, to: ['org-a'] }, 'the next minute\'s probe is answered by org-a');
  t.match(gw.events('provider_credential_back'), [{ credential: 'org-a' }], 'its return is named');
  const home = await call(gw, onA.key, 'home');
  t.same(home.to, ['org-a'], 'the account\'s calls are on org-a again');
  t.equal(await metricOf(gw, 'tollgate_upstream_attempts_total', { provider: 'openai', credential: 'org-a', outcome: 'auth_error' }), 2, 'two refusals counted');
  t.notOk((await gw.readyz()).body.notInRotation, '/readyz lists nothing');
});

t.test('OpenAI\'s insufficient_quota takes the credential out for every model', async (t) => {
  const gw = await startPoolGateway(t, { openai: [{ name: 'org-a' }, { name: 'org-b' }] });
  const mini = await affinity(gw, ['org-a']);
  const big = await affinity(gw, ['org-a'], 'gpt-4o');
  const orgA = gw.mocks['org-a']!;
  orgA.refuseAll(429, { insufficientQuota: true });
  const onA = mini.get('org-a')![0]!;
  const r = await call(gw, onA.key, 'quota');
  t.match({ status: r.status, to: r.to.sort() }, { status: 200, to: ['org-a', 'org-b'] }, 'refused by org-a, answered by org-b');
  t.match(gw.events('provider_credential_quota_exhausted'), [{ provider: 'openai', credential: 'org-a' }], 'named on stderr');
  t.match((await gw.readyz()).body.notInRotation, [{ credential: 'org-a', reason: 'insufficient_quota', until: null }], '/readyz: out');
  const before = orgA.requests.length;
  const other = await call(gw, big.get('org-a')![0]!.key, 'quota-other-model', { model: 'gpt-4o' });
  t.match({ status: other.status, to: other.to }, { status: 200, to: ['org-b'] }, 'another model\'s call goes to org-b too');
  t.equal(orgA.requests.length, before, 'org-a gets nothing');
});

t.test('a retry-after that is neither seconds nor a date (a negative number) rests 1 s, as none would', async (t) => {
  const gw = await startPoolGateway(t, { openai: [{ name: 'solo' }] });
  const [account] = await gw.keys(1);
  const solo = gw.mocks.solo!;
  solo.refuseAll(429, { headers: { 'retry-after': '-5' } });
  t.equal((await post(`${gw.base}${CHAT}`, account!.key, chatBody())).status, 429, 'refused');
  t.match((await gw.readyz()).body.notInRotation, [{ credential: 'solo', reason: 'rate_limited' }], 'resting');
  const again = await post(`${gw.base}${CHAT}`, account!.key, chatBody());
  t.equal(solo.requests.length, 1, 'the next call is answered without a send');
  t.equal(again.headers.get('retry-after'), '1', 'the rest is the gateway\'s own 1 s');
  solo.answerAll();
  await gw.advance(1_000);
  t.equal((await post(`${gw.base}${CHAT}`, account!.key, chatBody())).status, 200, 'after 1 s: sent and answered');
});

t.test('one credential out of rotation, the other resting: the 429 answered again says when the rest ends; every one out: no retry can help', async (t) => {
  const gw = await startPoolGateway(t, { openai: [{ name: 'org-a' }, { name: 'org-b' }] });
  const mini = await affinity(gw, ['org-a', 'org-b']);
  const onA = mini.get('org-a')![0]!;
  gw.mocks['org-a']!.refuseAll(429, { insufficientQuota: true });
  gw.mocks['org-b']!.refuseAll(429, { headers: { 'retry-after': '20' }, model: 'gpt-4o-mini' });
  const first = await call(gw, onA.key, 'degraded-1');
  t.equal(first.status, 429, 'org-a out of quota, then org-b rate limited: the 429 passed on');
  t.match((await gw.readyz()).body.notInRotation, [{ credential: 'org-a', reason: 'insufficient_quota' }, { credential: 'org-b', reason: 'rate_limited', until: String }], 'org-a out, org-b resting');
  await gw.advance(5_000);
  const again = await call(gw, onA.key, 'degraded-2');
  t.match({ status: again.status, to: again.to }, { status: 429, to: [] }, 'answered without a send');
  t.equal(again.headers.get('retry-after'), '15', 'when org-b\'s rest ends, though org-a is out');
  t.equal(again.headers.get('x-should-retry'), null, 'a retry then can succeed');

  const solo = await startPoolGateway(t, { openai: [{ name: 'only' }] });
  const [account] = await solo.keys(1);
  solo.mocks.only!.refuseAll(429, { insufficientQuota: true });
  const refused = await post(`${solo.base}${CHAT}`, account!.key, chatBody());
  t.equal(refused.status, 429, 'out of quota: the provider\'s 429');
  const kept = await post(`${solo.base}${CHAT}`, account!.key, chatBody());
  t.match({ status: kept.status, code: kept.json?.error?.code }, { status: 429, code: 'insufficient_quota' }, 'answered again without a send');
  t.equal(solo.mocks.only!.requests.length, 1, 'sent once');
  t.equal(kept.headers.get('x-should-retry'), 'false', 'the client\'s SDK is told not to retry');
  t.equal(kept.headers.get('retry-after'), null, 'and given no time to wait');
});

t.test('a credential out of rotation whose probe is rate limited: that 429 answered again is not marked final', async (t) => {
  const gw = await startPoolGateway(t, { openai: [{ name: 'only' }] });
  const [account] = await gw.keys(1);
  const only = gw.mocks.only!;
  only.refuseAll(429, { insufficientQuota: true });
  t.equal((await post(`${gw.base}${CHAT}`, account!.key, chatBody())).status, 429, 'out of quota: out of rotation');
  await gw.advance(60_000);
  only.refuseAll(429, { headers: { 'retry-after': '30' } });
  const probe = await post(`${gw.base}${CHAT}`, account!.key, chatBody());
  t.match({ status: probe.status, code: probe.json?.error?.code }, { status: 429, code: 'rate_limit_exceeded' }, 'the minute\'s probe is sent and rate limited');
  t.equal(only.requests.length, 2, 'sent');
  const again = await post(`${gw.base}${CHAT}`, account!.key, chatBody());
  t.match({ status: again.status, code: again.json?.error?.code }, { status: 429, code: 'rate_limit_exceeded' }, 'answered again without a send: the latest refusal, a rate limit');
  t.equal(only.requests.length, 2, 'without a send');
  t.equal(again.headers.get('x-should-retry'), null, 'a rate limit is not said final');
});
