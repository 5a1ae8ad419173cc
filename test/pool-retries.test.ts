/**
 * When a call is sent again: only where the provider cannot have done (and billed) any work —
 * a head with a status both official SDKs retry, or a connection that failed before the request
 * was written — at most `retry.attempts` sends, the same body bytes each time; never after a 2xx
 * head, once a stream has begun, after a time-out once the request was written, or after a 403.
 * When every attempt was refused, the client gets the last provider answer, unbilled.
 */
import t from 'tap';
import { post } from './helpers/harness.js';
import { accessLineOf, affinity, chatBody, metricOf, receivers, recordOf, startPoolGateway } from './helpers/pool-gateway.js';

const CHAT = '/v1/chat/completions';

t.test('every credential refusing with 503: retry.attempts sends of the same bytes, then the last answer, unbilled', async (t) => {
  const gw = await startPoolGateway(t, { openai: [{ name: 'org-a' }, { name: 'org-b' }, { name: 'org-c' }], retry: { attempts: 3 } });
  const [account] = await gw.keys(1);
  const r = await post(`${gw.base}${CHAT}`, account!.key, chatBody({ mock: { status: 503, requestId: 'overloaded' } }));
  t.equal(r.status, 503, 'the provider\'s status');
  t.equal(r.json?.error?.type, 'server_error', 'and its body');
  t.same(receivers(gw, 'overloaded').sort(), ['org-a', 'org-b', 'org-c'], 'each credential asked once');
  const bodies = ['org-a', 'org-b', 'org-c'].map((name) => gw.mocks[name]!.requests.find((q) => q.body.includes('"overloaded"'))!.body);
  t.ok(bodies.every((b) => b === bodies[0]), 'the same body each time');
  t.match(await recordOf(gw, account!.key, 'overloaded'), { status: 503, attempts: 3, costNanoUsd: 0 }, 'one record, three sends, nothing charged');
  let status5xx = 0;
  for (const name of ['org-a', 'org-b', 'org-c']) status5xx += (await metricOf(gw, 'tollgate_upstream_attempts_total', { provider: 'openai', credential: name, outcome: 'status_5xx' })) ?? 0;
  t.equal(status5xx, 3, 'three 5xx sends counted');
  // A 503 rests nothing: the next call goes out again.
  const next = await post(`${gw.base}${CHAT}`, account!.key, chatBody({ mock: { requestId: 'after-503' } }));
  t.equal(next.status, 200, 'the next call is answered');
});

t.test('by default two sends in all; 529 is retried like the SDKs retry it', async (t) => {
  const gw = await startPoolGateway(t, { openai: [{ name: 'org-a' }, { name: 'org-b' }, { name: 'org-c' }] });
  const [account] = await gw.keys(1);
  const r = await post(`${gw.base}${CHAT}`, account!.key, chatBody({ mock: { status: 529, requestId: 'five-twenty-nine' } }));
  t.equal(r.status, 529, 'the last answer');
  t.equal(receivers(gw, 'five-twenty-nine').length, 2, 'sent twice, to two credentials');
  t.match(await recordOf(gw, account!.key, 'five-twenty-nine'), { status: 529, attempts: 2, costNanoUsd: 0 }, 'recorded with two attempts, unbilled');
});

t.test('statuses the SDKs do not retry (400, 404) go straight to the client', async (t) => {
  const gw = await startPoolGateway(t, { openai: [{ name: 'org-a' }, { name: 'org-b' }] });
  const [account] = await gw.keys(1);
  for (const status of [400, 404]) {
    const r = await post(`${gw.base}${CHAT}`, account!.key, chatBody({ mock: { status, requestId: `status-${status}` } }));
    t.equal(r.status, status, `${status} passed on`);
    t.equal(receivers(gw, `status-${status}`).length, 1, 'sent once');
  }
});

t.test('a provider\'s 403 changes nothing: passed on, not retried, the credential stays in rotation', async (t) => {
  const gw = await startPoolGateway(t, { openai: [{ name: 'org-a' }, { name: 'org-b' }] });
  const onA = (await affinity(gw, ['org-a'])).get('org-a')![0]!;
  gw.mocks['org-a']!.refuseCredential(gw.secrets['org-a']!, 403);
  const r = await post(`${gw.base}${CHAT}`, onA.key, chatBody({ mock: { requestId: 'forbidden' } }));
  t.equal(r.status, 403, 'the provider\'s 403');
  t.same(receivers(gw, 'forbidden'), ['org-a'], 'sent to org-a only');
  t.equal(await metricOf(gw, 'tollgate_upstream_credential_up', { provider: 'openai', credential: 'org-a' }), 1, 'org-a still in rotation');
  t.notOk((await gw.readyz()).body.notInRotation, '/readyz lists nothing');
  gw.mocks['org-a']!.acceptCredential(gw.secrets['org-a']!);
  const again = await post(`${gw.base}${CHAT}`, onA.key, chatBody({ mock: { requestId: 'forbidden-no-more' } }));
  t.same(receivers(gw, 'forbidden-no-more'), ['org-a'], 'the account\'s calls still go to org-a');
  t.equal(again.status, 200, 'answered');
});

t.test('never sent again once a 2xx head came: a stream cut after it began, an error event inside a 200 stream', async (t) => {
  const gw = await startPoolGateway(t, { openai: [{ name: 'org-a' }, { name: 'org-b' }] });
  const [account] = await gw.keys(1);
  const cut = await fetch(`${gw.base}${CHAT}`, {
    method: 'POST', headers: { authorization: `Bearer ${account!.key}`, 'content-type': 'application/json' },
    body: JSON.stringify(chatBody({ stream: true, mock: { cutAfter: 1, requestId: 'cut-stream' } })),
  });
  t.equal(cut.status, 200, 'the stream began');
  const read = await cut.text().then(() => 'complete', () => 'cut');
  t.equal(read, 'cut', 'the client sees the stream cut, not a complete one');
  t.equal(receivers(gw, 'cut-stream').length, 1, 'sent once');
  t.match(await accessLineOf(gw, 'cut-stream'), { attempts: 1 }, 'one attempt');

  // The stream's error event ends it as a stream error (the client's connection is cut, as
  // before pools): it is never a reason to send the call again.
  const errored = await fetch(`${gw.base}${CHAT}`, {
    method: 'POST', headers: { authorization: `Bearer ${account!.key}`, 'content-type': 'application/json' },
    body: JSON.stringify(chatBody({ stream: true, mock: { errorEvent: true, requestId: 'error-event' } })),
  });
  t.equal(errored.status, 200, 'a 200 stream');
  await errored.text().catch(() => undefined);
  t.match(await accessLineOf(gw, 'error-event'), { attempts: 1 }, 'one attempt');
  t.equal(receivers(gw, 'error-event').length, 1, 'sent once');
});

t.test('never sent again after a time-out once the request was written', async (t) => {
  const gw = await startPoolGateway(t, { openai: [{ name: 'org-a' }, { name: 'org-b' }], limits: { upstreamHeadersTimeoutMs: 300 } });
  const [account] = await gw.keys(1);
  // Held by the provider (never answered) until released: the gateway's head time-out ends it.
  const r = await post(`${gw.base}${CHAT}`, account!.key, chatBody({ mock: { hold: 'stuck', requestId: 'timed-out' } }));
  t.equal(r.status, 502, 'the gateway\'s 502');
  t.equal(receivers(gw, 'timed-out').length, 1, 'sent once: the provider may have begun the work');
  for (const mock of Object.values(gw.mocks)) mock.release('stuck');
  const line = await accessLineOf(gw, r.headers.get('x-request-id')!);
  t.match(line, { attempts: 1 }, 'one attempt');
});

t.test('a stream through a pool whose first credential is rate limited: the whole stream from the other, billed once', async (t) => {
  const gw = await startPoolGateway(t, { openai: [{ name: 'org-a' }, { name: 'org-b' }] });
  const onA = (await affinity(gw, ['org-a'])).get('org-a')![0]!;
  gw.mocks['org-a']!.refuseAll(429, { headers: { 'retry-after-ms': '5000' } });
  const r = await post(`${gw.base}${CHAT}`, onA.key, chatBody({ stream: true, stream_options: { include_usage: true }, mock: { requestId: 'stream-retried' } }));
  t.equal(r.status, 200, 'a 200 stream');
  t.match(r.text, /data: \[DONE\]/, 'complete');
  const record = await recordOf(gw, onA.key, 'stream-retried');
  t.match(record, { status: 200, stream: true, attempts: 2, inputTokens: 11, outputTokens: 7 }, 'one record, two sends, the answered stream\'s usage');
  t.ok(record.costNanoUsd > 0, 'billed');
  t.equal(record.credential, undefined, 'the tenant is not told the credential');
  // The operator's export names the credential that answered, never its value: JSON and CSV.
  const exported = (url: string): Promise<Response> => fetch(`${gw.admin}/admin/v1/keys/${onA.key.slice(0, 12)}/usage${url}`, { headers: { authorization: 'Bearer test-admin-token' } });
  const json = (await (await exported('')).json()) as { requests: any[] };
  t.match(json.requests.find((r) => r.requestId === 'stream-retried'), { attempts: 2, credential: 'org-b' }, 'admin export (JSON): attempts and the credential that answered');
  const csv = await (await exported('?format=csv')).text();
  const [header, ...lines] = csv.trim().split(/\r?\n/);
  const columns = header!.split(',');
  const row = lines.find((l) => l.includes('stream-retried'))!.split(',');
  t.same([row[columns.indexOf('attempts')], row[columns.indexOf('credential')]], ['2', 'org-b'], 'admin export (CSV): the same');
  t.notOk(csv.includes(gw.secrets['org-b']!) || JSON.stringify(json).includes(gw.secrets['org-b']!), 'never the credential\'s value');
  // retry-after-ms rests the pair 5 s.
  await gw.advance(4_999);
  const before = gw.mocks['org-a']!.requests.length;
  await post(`${gw.base}${CHAT}`, onA.key, chatBody({ mock: { requestId: 'within-5s' } }));
  t.equal(gw.mocks['org-a']!.requests.length, before, 'org-a not asked within its retry-after-ms');
  gw.mocks['org-a']!.answerAll();
  await gw.advance(1);
  await post(`${gw.base}${CHAT}`, onA.key, chatBody({ mock: { requestId: 'after-5s' } }));
  t.same(receivers(gw, 'after-5s'), ['org-a'], 'asked again after it');
});
