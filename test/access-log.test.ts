/**
 * The access log: one JSON line per request on stdout with exactly interface.md's fields (then
 * whether and why the call's tokens were estimated, then the sends to the provider and the
 * credential's name), agreeing with the traffic; never a key; `log.access: false` turns it off.
 */
import t from 'tap';
import { defaultConfig, post, startGateway, type Harness } from './helpers/harness.js';
import { sendEveryOutcome } from './helpers/outcomes.js';

const FIELDS = ['time', 'requestId', 'keyPrefix', 'surface', 'endpoint', 'model', 'status', 'code', 'stream', 'inputTokens', 'outputTokens', 'costUsd', 'tokensCharged', 'durationMs', 'clientGone', 'estimated', 'estimateReason', 'attempts', 'credential'];

/** The access-log lines so far (stdout minus the start lines). */
function lines(gw: Harness): any[] {
  return gw.serverOut().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
}

async function waitForLines(gw: Harness, n: number): Promise<any[]> {
  for (let i = 0; i < 200; i++) {
    const l = lines(gw);
    if (l.length >= n) return l;
    await new Promise((r) => setTimeout(r, 20));
  }
  return lines(gw);
}

t.test('one line per request, exactly the fixed fields, counts matching the traffic', async (t) => {
  const gw = await startGateway(t);
  const e = await sendEveryOutcome(gw, 2);
  const log = await waitForLines(gw, e.total);
  t.equal(log.length, e.total, 'as many lines as requests');
  for (const line of log) t.same(Object.keys(line), FIELDS, 'exactly the fixed fields, in order');
  const counts = new Map<string, number>();
  for (const l of log) counts.set(`${l.surface}|${l.endpoint}|${l.status}|${l.code}`, (counts.get(`${l.surface}|${l.endpoint}|${l.status}|${l.code}`) ?? 0) + 1);
  t.same(Object.fromEntries(counts), Object.fromEntries(e.requests), 'surface, endpoint, status and code per line agree with what was sent');
  t.ok(log.every((l) => l.keyPrefix === null || /^gw_live_[0-9a-f]{4}$/.test(l.keyPrefix)), 'only 12-character prefixes');
});

t.test('a metered call\'s line carries its request id, tokens and cost', async (t) => {
  const gw = await startGateway(t);
  const k = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const before = lines(gw).length;
  const r = await post(`${gw.base}/v1/chat/completions`, k.key, { model: 'gpt-4o-mini', messages: [], mock: { inputTokens: 1000, outputTokens: 100 } });
  t.equal(r.status, 200);
  const [line] = (await waitForLines(gw, before + 1)).slice(before);
  t.match(line, {
    requestId: r.headers.get('x-request-id'), keyPrefix: k.prefix, surface: 'credit', endpoint: 'chat', model: 'gpt-4o-mini',
    status: 200, code: 'ok', stream: false, inputTokens: 1000, outputTokens: 100, costUsd: '0.000210', tokensCharged: 1100, clientGone: false,
    estimated: false, estimateReason: null, attempts: 1, credential: 'default',
  });
  t.type(line.durationMs, 'number');
  t.ok(Number.isFinite(Date.parse(line.time)), 'time is an ISO timestamp');
});

t.test('log.access: false writes no access line; operational messages stay on stderr', async (t) => {
  const gw = await startGateway(t, { config: (url) => ({ ...defaultConfig(url), log: { access: false } }) });
  const k = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  for (let i = 0; i < 3; i++) t.equal((await post(`${gw.base}/v1/chat/completions`, k.key, { model: 'gpt-4o-mini', messages: [] })).status, 200);
  t.equal((await post(`${gw.base}/v1/chat/completions`, k.key, { model: 'gpt-4o-mini', messages: [], mock: { status: 500 } })).status, 500);
  t.equal(lines(gw).length, 0, 'nothing but the start line on stdout');
  t.match(gw.serverOut(), /tollgate listening on/);
});

t.test('stderr messages are structured JSON lines too', async (t) => {
  const gw = await startGateway(t, { env: { ANTHROPIC_API_KEY: '' } });
  const warn = gw.serverLog().split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l));
  const missing = warn.find((l) => l.event === 'provider_credential_missing');
  t.match(missing, { level: 'warn', provider: 'anthropic', env: 'ANTHROPIC_API_KEY' }, 'the unusable provider is named at start-up');
  t.ok(Number.isFinite(Date.parse(missing.time)), 'with an ISO time');
});

t.test('the hand-built line is the JSON of its fields, escaping included', async (t) => {
  const { lineText } = await import('../src/observe/access-log.js');
  const base = {
    time: '2026-11-22T01:02:03.456Z', requestId: 'req_0123456789ab000001', keyPrefix: 'gw_live_1a2b', surface: 'credit', endpoint: 'chat', model: 'gpt-4o-mini',
    status: 200, code: 'ok', stream: true, inputTokens: 12, outputTokens: 34, costUsd: '0.000022', tokensCharged: 46, durationMs: 1.234, clientGone: false,
    estimated: false, estimateReason: null, attempts: 1, credential: 'org-a' as string | null,
  };
  for (const line of [base, { ...base, keyPrefix: null, model: null, costUsd: null, attempts: 0, credential: null }, { ...base, estimated: true, estimateReason: 'usage_field_missing:usage.output_tokens' }, { ...base, model: 'we"ird\\\nmodel\u2028é', requestId: 'id with "quotes"' }]) {
    const text = lineText(line);
    t.ok(text.endsWith('\n') && !text.slice(0, -1).includes('\n'), 'one line');
    t.same(JSON.parse(text), line, 'parses back to the same fields');
    t.same(Object.keys(JSON.parse(text)), FIELDS, 'in the fixed order');
  }
});

t.test('the line\'s time and duration are the text toISOString and String would give', async (t) => {
  const { isoTime, millisecondsText } = await import('../src/observe/access-log.js');
  // Random instants in years 0000–9999 and runs of consecutive ones (the cached second), then
  // instants outside those years and fractions of a millisecond, which are formatted the slow way.
  const instants: number[] = [];
  for (let i = 0; i < 20_000; i++) instants.push(Math.floor(Math.random() * 253402300800000) - 62167219200000);
  for (let ms = 1795746909990; ms < 1795746912010; ms += 1) instants.push(ms);
  instants.push(-62167219200001, 253402300800000, 1795746910000.5, 0, -1);
  const wrongTimes = instants.filter((ms) => isoTime(ms) !== new Date(ms).toISOString());
  t.same(wrongTimes, [], `${instants.length} instants`);

  const durations: number[] = [0, 0.001, 0.01, 0.1, 0.045, 1, 7.05, 10, 12.345, 100.1, 1e9 + 0.001, -1, 1.2345, 1e-7, 2 ** 60];
  for (let i = 0; i < 20_000; i++) durations.push(Math.round(Math.random() * (i % 2 === 0 ? 1e4 : 1e10)) / 1e3);
  const wrongDurations = durations.filter((d) => millisecondsText(d) !== String(d));
  t.same(wrongDurations, [], `${durations.length} durations`);
});
