/**
 * /metrics agrees exactly with the traffic sent: N requests of every outcome, then one scrape.
 * Names and labels are interface.md's; no key, key id or prefix is ever a label.
 */
import t from 'tap';
import { startGateway } from './helpers/harness.js';
import { sendEveryOutcome } from './helpers/outcomes.js';
import { parseMetrics, seriesOf } from './helpers/prometheus.js';

const N = 3;

t.test('N calls of each outcome, then a scrape: every counter exact', async (t) => {
  const gw = await startGateway(t, { admin: true });
  const e = await sendEveryOutcome(gw, N);
  // The last requests' ends are observed when their responses close: wait for the count, bounded.
  let text = '';
  let all = new Map<string, number>();
  for (let i = 0; i < 100; i++) {
    const res = await fetch(`${gw.admin}/metrics`);
    t.equal(res.status, i === 0 ? 200 : res.status);
    text = await res.text();
    all = parseMetrics(text);
    const counted = seriesOf(all, 'tollgate_requests_total').reduce((s, x) => s + x.value, 0);
    if (counted >= e.total) break;
    await new Promise((r) => setTimeout(r, 20));
  }

  const requests = new Map(seriesOf(all, 'tollgate_requests_total').map((s) => [`${s.labels.surface}|${s.labels.endpoint}|${s.labels.status}|${s.labels.code}`, s.value]));
  t.same(Object.fromEntries(requests), Object.fromEntries(e.requests), 'tollgate_requests_total: one series per outcome, each exactly its count');

  const tokens = new Map(seriesOf(all, 'tollgate_tokens_total').map((s) => [`${s.labels.surface}|${s.labels.endpoint}|${s.labels.kind}`, s.value]));
  t.same(Object.fromEntries(tokens), Object.fromEntries(e.tokens), 'tollgate_tokens_total exact per surface, endpoint and kind');

  const billed = seriesOf(all, 'tollgate_billed_usd_total');
  t.same(Object.fromEntries(billed.map((s) => [s.labels.endpoint, Math.round(s.value * 1e9)])), Object.fromEntries(e.billedNano), 'tollgate_billed_usd_total: the nano-dollars charged');

  const durations = new Map(seriesOf(all, 'tollgate_request_duration_seconds_count').map((s) => [`${s.labels.endpoint}|${s.labels.stream}`, s.value]));
  t.same(Object.fromEntries(durations), Object.fromEntries(e.durations), 'one duration observation per request, by endpoint and stream');

  for (const name of ['tollgate_request_duration_seconds', 'tollgate_upstream_first_byte_seconds']) {
    const buckets = seriesOf(all, `${name}_bucket`);
    for (const c of seriesOf(all, `${name}_count`)) {
      const same = (b: { labels: Record<string, string> }): boolean => Object.entries(c.labels).every(([k, v]) => b.labels[k] === v);
      const mine = buckets.filter(same);
      t.equal(mine.find((b) => b.labels.le === '+Inf')?.value, c.value, `${name}: the +Inf bucket is the count`);
      const values = mine.map((b) => b.value);
      t.ok(values.every((v, i) => i === 0 || v >= values[i - 1]!), `${name}: buckets are cumulative`);
    }
    t.ok(seriesOf(all, `${name}_sum`).every((s) => s.value > 0), `${name}: a positive sum of seconds`);
  }

  const firstByte = seriesOf(all, 'tollgate_upstream_first_byte_seconds_count');
  // The rate-limited key's call, then per round: plain, stream, responses, the 503 (sent twice:
  // retry.attempts 2, to the one credential), cut, models.
  const forwarded = 1 + N * 7;
  t.equal(firstByte.reduce((s, x) => s + x.value, 0), forwarded, 'a first-byte time for every send that was answered');

  const attempts = new Map(seriesOf(all, 'tollgate_upstream_attempts_total').map((s) => [`${s.labels.provider}|${s.labels.credential}|${s.labels.outcome}`, s.value]));
  const expected: Record<string, number> = {};
  for (const provider of ['anthropic', 'openai']) for (const outcome of ['ok', 'status_429', 'status_5xx', 'connect_error', 'auth_error']) expected[`${provider}|default|${outcome}`] = 0;
  expected['openai|default|ok'] = 1 + N * 4;
  expected['openai|default|status_5xx'] = N * 2;
  expected['anthropic|default|ok'] = N;
  t.same(Object.fromEntries(attempts), expected, 'tollgate_upstream_attempts_total: every send by provider, credential and outcome, every series from the start');
  t.same(Object.fromEntries(seriesOf(all, 'tollgate_upstream_credential_up').map((s) => [`${s.labels.provider}|${s.labels.credential}`, s.value])), { 'anthropic|default': 1, 'openai|default': 1 }, 'tollgate_upstream_credential_up: both in rotation (a 503 rests nothing)');
  t.same(firstByte.map((s) => s.labels.provider).sort(), ['anthropic', 'openai'], 'labelled by provider');

  const inflight = seriesOf(all, 'tollgate_inflight_requests');
  t.same(inflight.map((s) => s.labels.surface).sort(), ['credit', 'none', 'token'], 'the in-flight gauge per surface');
  t.ok(inflight.every((s) => s.value === 0), 'nothing in flight after the traffic ended');

  for (const secret of e.secrets) {
    t.notOk(text.includes(secret.slice(0, 12)), 'no key prefix in any label');
  }
  t.notOk(/key_[0-9a-f]{16}/.test(text), 'no key id in any label');
  t.match(text, /# TYPE tollgate_request_duration_seconds histogram/);
  t.match(text, /# TYPE tollgate_inflight_requests gauge/);
});

t.test('with --workers 2 the admin listener sums every worker\'s metrics', async (t) => {
  const gw = await startGateway(t, { admin: true, workers: 2 });
  // $10 covers all 40 calls in flight at once at their caps (no max_tokens: each holds ≈ $0.077).
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '10']);
  const calls = 40;
  await Promise.all(Array.from({ length: calls }, () => fetch(`${gw.base}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [], mock: { inputTokens: 2, outputTokens: 1 } }),
  }).then((r) => r.arrayBuffer())));
  let ok = 0;
  let all = new Map<string, number>();
  for (let i = 0; i < 100 && ok < calls; i++) {
    all = parseMetrics(await (await fetch(`${gw.admin}/metrics`)).text());
    ok = all.get('tollgate_requests_total{surface="credit",endpoint="chat",status="200",code="ok"}') ?? 0;
    if (ok < calls) await new Promise((r) => setTimeout(r, 20));
  }
  t.equal(ok, calls, 'the 200s of both workers, summed');
  t.equal(all.get('tollgate_tokens_total{surface="credit",endpoint="chat",kind="input"}'), calls * 2);
  t.equal(Math.round(all.get('tollgate_billed_usd_total{endpoint="chat"}')! * 1e9), calls * (2 * 150 + 600));
});

t.test('with --workers 2 a credential is shown up only when it is up in every worker (the minimum, not the sum)', async (t) => {
  const gw = await startGateway(t, { admin: true, workers: 2 });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const up = async (): Promise<number | undefined> => parseMetrics(await (await fetch(`${gw.admin}/metrics`)).text()).get('tollgate_upstream_credential_up{provider="openai",credential="default"}');
  t.equal(await up(), 1, 'in rotation in both workers: 1 (a sum would say 2)');
  // One call, so one worker, told to wait a minute: that worker rests the credential for the model.
  gw.mock.refuseAll(429, { headers: { 'retry-after': '60' } });
  const refused = await fetch(`${gw.base}/v1/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-4o-mini', messages: [] }),
  });
  await refused.arrayBuffer();
  t.equal(refused.status, 429, 'the provider\'s 429 passed on');
  gw.mock.answerAll();
  t.equal(await up(), 0, 'resting in one worker: 0 (a sum or a maximum would say 1)');
});
