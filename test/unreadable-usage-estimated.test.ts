import t from 'tap';
import { post, startGateway, usageOf } from './helpers/harness.js';
import { parseMetrics, seriesOf } from './helpers/prometheus.js';

// A 2xx answer whose usage cannot be read completely and unambiguously is never served free:
// it is billed from an estimate, marked `estimated: true`, with the reason in the record. What
// could be read is kept (an answer reporting its input but not its output keeps that input).
// Each shape, in each format, plain and streamed, against the mock provider. The access log and
// the metrics say so too: the call's line carries `estimated` and its reason, and
// tollgate_estimated_total counts it under its endpoint and the reason's kind.

interface Format {
  name: string;
  path: string;
  body: Record<string, unknown>;
  /** The names of the input and output totals in this format's usage. */
  IN: string;
  OUT: string;
}

const FORMATS: Format[] = [
  { name: 'chat', path: '/v1/chat/completions', body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi there' }] }, IN: 'prompt_tokens', OUT: 'completion_tokens' },
  { name: 'responses', path: '/v1/responses', body: { model: 'gpt-4o-mini', input: 'hi there' }, IN: 'input_tokens', OUT: 'output_tokens' },
  { name: 'messages', path: '/v1/messages', body: { model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'hi there' }] }, IN: 'input_tokens', OUT: 'output_tokens' },
];

interface Shape {
  name: string;
  /** Mock switches producing the shape (the usage JSON text may name the totals with {IN} / {OUT}). */
  mock: (f: Format, stream: boolean) => Record<string, unknown> | undefined;
  /** The reason the record must give, or undefined when this shape does not apply. */
  reason: (f: Format, stream: boolean) => string | undefined;
  /** Counts that were read and must be kept as they are. */
  kept?: (f: Format, stream: boolean) => { inputTokens?: number; outputTokens?: number };
  /** Counts reported but not believed: the record's estimate is at most this. */
  dropped?: { inputTokens?: number; outputTokens?: number };
}

/** In a Messages stream the shapes go into message_delta; message_start still reports input 11. */
const delta = (f: Format, stream: boolean): boolean => f.name === 'messages' && stream;

const SHAPES: Shape[] = [
  {
    name: '"usage": {}',
    mock: () => ({ usageJson: '{}' }),
    reason: (f, s) => `usage_field_missing:${delta(f, s) ? f.OUT : f.IN}`,
    kept: (f, s) => (delta(f, s) ? { inputTokens: 11 } : {}),
  },
  {
    name: 'only total_tokens',
    mock: () => ({ usageJson: '{"total_tokens":18}' }),
    reason: (f, s) => `usage_field_missing:${delta(f, s) ? f.OUT : f.IN}`,
  },
  {
    name: 'counts as strings',
    mock: (f) => ({ usageJson: `{"${f.IN}":"11","${f.OUT}":"7"}` }),
    reason: (f) => `usage_field_invalid:${f.IN}`,
  },
  {
    name: 'a negative count',
    mock: (f) => ({ usageJson: `{"${f.IN}":11,"${f.OUT}":-7}` }),
    reason: (f) => `usage_field_invalid:${f.OUT}`,
    kept: () => ({ inputTokens: 11 }),
  },
  {
    name: 'a fractional count',
    mock: (f) => ({ usageJson: `{"${f.IN}":11.5,"${f.OUT}":7}` }),
    reason: (f) => `usage_field_invalid:${f.IN}`,
    kept: () => ({ outputTokens: 7 }),
  },
  {
    name: 'output missing (partial usage)',
    mock: (f) => ({ usageJson: `{"${f.IN}":11}` }),
    reason: (f) => `usage_field_missing:${f.OUT}`,
    kept: () => ({ inputTokens: 11 }),
  },
  {
    name: 'input missing (partial usage)',
    mock: (f) => ({ usageJson: `{"${f.OUT}":7}` }),
    // A Messages stream reported its input in message_start: nothing is missing there.
    reason: (f, s) => (delta(f, s) ? undefined : `usage_field_missing:${f.IN}`),
    kept: () => ({ outputTokens: 7 }),
  },
  {
    // Past what one call can be counted for (a 1 GiB body read as a token per byte): not believed,
    // since a charge beyond it would not be an exact integer.
    name: 'an input count past any call',
    mock: (f) => ({ usageJson: `{"${f.IN}":5000000000,"${f.OUT}":7}` }),
    reason: (f) => `usage_field_invalid:${f.IN}`,
    kept: () => ({ outputTokens: 7 }),
    dropped: { inputTokens: 1000 },
  },
  {
    name: 'an output count past the largest output cap',
    mock: (f) => ({ usageJson: `{"${f.IN}":11,"${f.OUT}":200000000}` }),
    reason: (f) => `usage_field_invalid:${f.OUT}`,
    kept: () => ({ inputTokens: 11 }),
    dropped: { outputTokens: 1000 },
  },
  {
    name: 'usage that is not an object',
    mock: () => ({ usageJson: '"7"' }),
    reason: () => 'usage_malformed',
  },
  {
    name: 'a cached count larger than the input',
    mock: (f) => (f.name === 'messages' ? undefined : { usageJson: `{"${f.IN}":11,"${f.OUT}":7,"${f.IN}_details":{"cached_tokens":50}}` }),
    reason: (f) => (f.name === 'messages' ? undefined : `usage_inconsistent:${f.IN}_details.cached_tokens`),
    kept: () => ({ inputTokens: 11, outputTokens: 7 }),
  },
  {
    // Each part fits the input, but together they pass it: the cache reads (priced below it) are not trusted.
    name: 'cache reads and writes together more than the input',
    mock: (f) => (f.name === 'messages' ? undefined : { usageJson: `{"${f.IN}":100,"${f.OUT}":7,"${f.IN}_details":{"cached_tokens":60,"cache_write_tokens":60}}` }),
    reason: (f) => (f.name === 'messages' ? undefined : `usage_inconsistent:${f.IN}_details.cached_tokens`),
    kept: () => ({ inputTokens: 100, outputTokens: 7 }),
  },
  {
    name: 'a malformed usage event',
    mock: (_f, s) => (s ? { malformedUsageEvent: true } : undefined),
    reason: (_f, s) => (s ? 'usage_malformed' : undefined),
  },
  {
    name: 'no usage at all',
    mock: (f, s) => (!s ? { omitUsage: true } : f.name === 'chat' ? { noUsage: true } : f.name === 'responses' ? { usageJson: 'null' } : { startUsageJson: 'null', usageJson: 'null' }),
    reason: () => 'usage_absent',
  },
];

/**
 * The access-log lines of the calls chosen by `mine`, once there are `n` of them (a call's line is
 * written in the turn after its record is made; stdout is a pipe).
 */
async function accessLines(gw: { serverOut(): string }, mine: (line: any) => boolean, n: number): Promise<any[]> {
  let lines: any[] = [];
  for (let i = 0; i < 250; i++) {
    lines = gw.serverOut().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).filter(mine);
    if (lines.length >= n) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  return lines;
}

t.test('every unreadable usage shape is estimated, marked, billed, with its reason', async (t) => {
  const gw = await startGateway(t, { admin: true });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '10']);
  let balance = 10_000_000_000;
  let checked = 0;
  /** request id → [endpoint label, reason] of every call sent */
  const sent = new Map<string, [string, string]>();
  for (const f of FORMATS) {
    for (const stream of [false, true]) {
      for (const shape of SHAPES) {
        const switches = shape.mock(f, stream);
        const reason = shape.reason(f, stream);
        if (switches === undefined || reason === undefined) continue;
        const label = `${f.name} ${stream ? 'streamed' : 'plain'}, ${shape.name}`;
        const body = { ...f.body, ...(stream ? { stream: true } : {}), ...(f.name === 'chat' && stream ? { stream_options: { include_usage: true } } : {}), mock: { inputTokens: 11, outputTokens: 7, ...switches } };
        const res = await post(gw.base + f.path, key, body);
        t.equal(res.status, 200, `${label}: the client gets the provider's 200`);
        sent.set(res.headers.get('x-request-id')!, [f.name, reason]);
        const u = await usageOf(gw.base, key);
        const r = u.requests[0];
        t.match(r, { status: 200, error: null, estimated: true, estimateReason: reason }, `${label}: estimated, reason ${reason}`);
        t.ok(r.inputTokens > 0 && r.outputTokens > 0, `${label}: input and output counted (${r.inputTokens}/${r.outputTokens})`);
        t.ok(r.costNanoUsd > 0, `${label}: billed (${r.costNanoUsd} nUSD)`);
        t.equal(u.key.balanceNanoUsd, balance - r.costNanoUsd, `${label}: the balance paid exactly the record`);
        const kept = shape.kept?.(f, stream) ?? {};
        if (kept.inputTokens !== undefined) t.equal(r.inputTokens, kept.inputTokens, `${label}: the input read is kept`);
        if (kept.outputTokens !== undefined) t.equal(r.outputTokens, kept.outputTokens, `${label}: the output read is kept`);
        if (shape.dropped?.inputTokens !== undefined) t.ok(r.inputTokens <= shape.dropped.inputTokens, `${label}: the input reported is not believed (estimated ${r.inputTokens})`);
        if (shape.dropped?.outputTokens !== undefined) t.ok(r.outputTokens <= shape.dropped.outputTokens, `${label}: the output reported is not believed (estimated ${r.outputTokens})`);
        balance = u.key.balanceNanoUsd;
        checked++;
      }
    }
  }
  t.equal(checked, 76, 'every applicable format, mode and shape was tried');

  // The access log: every call's line says it was estimated, and why.
  const lines = await accessLines(gw, (l) => sent.has(l.requestId), sent.size);
  t.equal(lines.length, sent.size, 'one access-log line per call');
  for (const l of lines) {
    const [endpoint, reason] = sent.get(l.requestId)!;
    t.match(l, { endpoint, estimated: true, estimateReason: reason }, `access log: ${endpoint} ${reason}`);
  }
  // The metrics: tollgate_estimated_total by endpoint and reason kind, exactly the calls sent.
  const expected = new Map<string, number>();
  for (const [endpoint, reason] of sent.values()) {
    const series = `${endpoint}|${reason.split(':')[0]}`; // the reason's kind, without the field's path
    expected.set(series, (expected.get(series) ?? 0) + 1);
  }
  const scraped = seriesOf(parseMetrics(await (await fetch(`${gw.admin}/metrics`)).text()), 'tollgate_estimated_total');
  t.same(Object.fromEntries(scraped.map((s) => [`${s.labels.endpoint}|${s.labels.reason}`, s.value])), Object.fromEntries(expected), 'tollgate_estimated_total counts each estimated call under its endpoint and reason');
});

t.test('readable usage is not estimated (the same calls without a broken shape)', async (t) => {
  const gw = await startGateway(t, { admin: true });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  for (const f of FORMATS) {
    for (const stream of [false, true]) {
      const body = { ...f.body, ...(stream ? { stream: true } : {}), mock: { inputTokens: 11, outputTokens: 7 } };
      await post(gw.base + f.path, key, body);
      const r = (await usageOf(gw.base, key)).requests[0];
      t.match(r, { estimated: false, estimateReason: null, inputTokens: 11, outputTokens: 7 }, `${f.name} ${stream ? 'streamed' : 'plain'}`);
    }
  }
  const lines = await accessLines(gw, (l) => l.endpoint !== 'usage', 6);
  t.equal(lines.length, 6, 'six calls logged');
  t.ok(lines.every((l) => l.estimated === false && l.estimateReason === null), 'none logged as estimated');
  const scraped = seriesOf(parseMetrics(await (await fetch(`${gw.admin}/metrics`)).text()), 'tollgate_estimated_total');
  t.equal(scraped.reduce((n, s) => n + s.value, 0), 0, 'none counted as estimated');
});

t.test('a call read in passes whose usage is then estimated is priced on its totals, the estimate included', async (t) => {
  const { estimateUsage } = await import('../src/meter/estimate.js');
  const { costNano } = await import('../src/meter/charge.js');
  const { emptyUsage, emptyCounts } = await import('../src/formats/types.js');
  // As a Messages stream leaves it when a later usage event cannot be parsed: two passes read
  // (a compaction and the message), then both sides unknown.
  const usage = { ...emptyUsage(), input: 30, output: 4, parts: [{ ...emptyCounts(), input: 20, output: 2 }, { ...emptyCounts(), input: 10, output: 2 }] };
  const reading = { usage, known: { input: false, output: false }, problem: 'usage_malformed' };
  const estimated = await estimateUsage(reading, { messages: [{ role: 'user', content: 'a prompt long enough to count more tokens than the passes reported '.repeat(4) }] }, { stream: true, text: 'some answer text '.repeat(8), chars: 136, bytesSeen: 500 });
  t.ok(estimated.input > 30 && estimated.output > 4, `estimated above what was read (${estimated.input}/${estimated.output})`);
  t.equal(estimated.parts, null, 'the passes no longer describe the call');
  const price = { input: 3000, output: 15000, tiers: new Map(), speed: new Map(), longContext: null, inferenceGeo: new Map(), region: null, toolCalls: new Map(), maxRate: 15000, fallbackToolFee: 0 } as any;
  t.equal(costNano(estimated, price), estimated.input * 3000 + estimated.output * 15000, 'charged for every estimated token');
});
