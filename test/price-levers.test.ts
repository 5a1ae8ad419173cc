/**
 * Each price lever, on each format that carries it, plain and streamed:
 * - named and priced: billed at the lever's rates, and held at them while in flight;
 * - named and unpriced: refused (400 unpriced_option) before anything is forwarded;
 * - not named but reported by the answer: billed by what the answer reports; when the price has
 *   no rate for it, every token at the price's highest rate, the record estimated and naming
 *   it, and counted in tollgate_unpriced_levers_total{provider, lever}.
 * Levers: OpenAI service tiers (fast and priority one tier, flex, ultrafast), extended cache
 * retention, cache writes, the long-context band and its combination with a tier, regional
 * processing; Anthropic speed, inference geography, the context-1m window, usage in parts
 * (`usage.iterations`, each pass with its own long-context band); server tool fees.
 *
 * Rates are USD per million tokens (× 1000 = nUSD per token); every expected amount below is
 * worked out by hand from them.
 */
import t, { type Test } from 'tap';
import { eventually } from './helpers/client-gone.js';
import { defaultConfig, post, startGateway, usageOf, type Harness } from './helpers/harness.js';
import { parseMetrics } from './helpers/prometheus.js';

const MODELS = {
  // Every OpenAI lever priced. Standard 1 / 0.50 cached / 1.25 write / 2 extended write / 4 out;
  // above 1,000 input tokens 2 / 1 / 2.50 / 4 / 6.
  'oa-levers': {
    provider: 'openai', endpoints: ['chat', 'responses'],
    price: {
      input: 1, cachedInput: 0.5, cacheWrite: 1.25, cacheWriteExtended: 2, output: 4,
      longContext: { threshold: 1000, input: 2, cachedInput: 1, cacheWrite: 2.5, cacheWriteExtended: 4, output: 6 },
      tiers: {
        fast: { input: 2, cachedInput: 1, cacheWrite: 2.5, cacheWriteExtended: 4, output: 8, longContext: { input: 4, cachedInput: 2, cacheWrite: 5, cacheWriteExtended: 8, output: 12 } },
        flex: { input: 0.5, cachedInput: 0.25, cacheWrite: 0.625, cacheWriteExtended: 1, output: 2 },
        ultrafast: { input: 6, cachedInput: 3, cacheWrite: 7.5, cacheWriteExtended: 12, output: 24 },
      },
      regionalProcessing: 1.1,
      toolCalls: { web_search: 10, file_search: 2.5 },
    },
  },
  // No lever priced: the highest rate is the output's, 4.
  'oa-plain': { provider: 'openai', endpoints: ['chat', 'responses'], price: { input: 1, output: 4 } },
  // Every Anthropic lever priced. 3 / 0.30 read / 3.75 5-minute / 6 1-hour write / 15 out; fast
  // 6 / 0.60 / 7.50 / 12 / 30; US 1.1×; above a 1,000-token prompt 6 / 0.60 / 7.50 / 12 / 22.50.
  'cl-levers': {
    provider: 'anthropic', endpoints: ['messages'],
    price: {
      input: 3, cachedInput: 0.3, cacheWrite: 3.75, cacheWrite1h: 6, output: 15,
      speed: { fast: { input: 6, cachedInput: 0.6, cacheWrite: 7.5, cacheWrite1h: 12, output: 30 } },
      inferenceGeo: { us: 1.1 },
      longContext: { threshold: 1000, input: 6, cachedInput: 0.6, cacheWrite: 7.5, cacheWrite1h: 12, output: 22.5 },
      toolCalls: { web_search: 10 },
    },
  },
  // A fast speed without 1-hour cache writes of its own, though the standard rates have them.
  'cl-fast-5m': {
    provider: 'anthropic', endpoints: ['messages'],
    price: { input: 3, cachedInput: 0.3, cacheWrite: 3.75, cacheWrite1h: 6, output: 15, speed: { fast: { input: 6, cachedInput: 0.6, cacheWrite: 7.5, output: 30 } } },
  },
  // Extended retention priced, but not above the long-context threshold: highest rate 6.
  'oa-long-no-ext': {
    provider: 'openai', endpoints: ['chat', 'responses'],
    price: { input: 1, cachedInput: 0.5, cacheWriteExtended: 2, output: 4, longContext: { threshold: 1000, input: 2, cachedInput: 1, output: 6 } },
  },
  // Cache rates only: speed, geography, the 1M window and web search unpriced; highest rate 15.
  'cl-plain': { provider: 'anthropic', endpoints: ['messages'], price: { input: 3, cachedInput: 0.3, cacheWrite: 3.75, cacheWrite1h: 6, output: 15 } },
};

function leverConfig(region: string | null): (mockUrl: string) => Record<string, unknown> {
  return (mockUrl) => {
    const c = defaultConfig(mockUrl) as { providers: Record<string, Record<string, unknown>> };
    if (region !== null) c.providers.openai!.region = region;
    return { ...c, models: MODELS };
  };
}

const MODES = [false, true];
const mode = (stream: boolean): string => (stream ? 'streamed' : 'plain');

// ── OpenAI ───────────────────────────────────────────────────────────────────────────────────

type OpenAiFormat = 'chat' | 'responses';
const OPENAI: OpenAiFormat[] = ['chat', 'responses'];

/** Usage counts an OpenAI answer reports: prompt (cache reads and writes inside) and output. */
interface Counts { input: number; cached: number; write: number; output: number }
/** An 800-token prompt (300 fresh, 400 read, 100 written) and 100 out. */
const SHORT: Counts = { input: 800, cached: 400, write: 100, output: 100 };
/** A 2,000-token prompt (1,000 fresh, 800 read, 200 written): above the 1,000 threshold. */
const LONG: Counts = { input: 2000, cached: 800, write: 200, output: 100 };

function openAiUsage(f: OpenAiFormat, c: Counts): string {
  const details = { cached_tokens: c.cached, cache_write_tokens: c.write };
  return JSON.stringify(f === 'chat'
    ? { prompt_tokens: c.input, completion_tokens: c.output, total_tokens: c.input + c.output, prompt_tokens_details: details, completion_tokens_details: { reasoning_tokens: 0 } }
    : { input_tokens: c.input, input_tokens_details: details, output_tokens: c.output, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: c.input + c.output });
}

/** A request on `f`, capped at 100 output tokens; `mock` is what the answer reports. */
function openAi(f: OpenAiFormat, stream: boolean, model: string, fields: Record<string, unknown>, mock: Record<string, unknown>): { path: string; body: Record<string, unknown> } {
  const body = f === 'chat'
    ? { model, messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 100, ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}) }
    : { model, input: 'hi', max_output_tokens: 100, ...(stream ? { stream: true } : {}) };
  return { path: f === 'chat' ? '/v1/chat/completions' : '/v1/responses', body: { ...body, ...fields, mock } };
}

// ── Anthropic ────────────────────────────────────────────────────────────────────────────────

/** Messages counts: fresh input, cache reads, 5-minute writes, output. */
interface MsgCounts { fresh: number; read: number; write: number; output: number }
const MSG_SHORT: MsgCounts = { fresh: 300, read: 400, write: 100, output: 100 };
const MSG_LONG: MsgCounts = { fresh: 1000, read: 800, write: 200, output: 100 };

function msgCounts(c: MsgCounts): Record<string, unknown> {
  return { input_tokens: c.fresh, cache_read_input_tokens: c.read, cache_creation_input_tokens: c.write, cache_creation: { ephemeral_5m_input_tokens: c.write, ephemeral_1h_input_tokens: 0 }, output_tokens: c.output };
}

/**
 * A Messages request capped at 100 output tokens, answered with `usage` (counts and levers). A
 * stream reports the levers in message_start (with a placeholder input, as the API does) and the
 * counts in message_delta.
 */
function messages(stream: boolean, model: string, fields: Record<string, unknown>, usage: Record<string, unknown>, extraMock: Record<string, unknown> = {}): { path: string; body: Record<string, unknown> } {
  const { speed, inference_geo, service_tier, ...counts } = usage;
  const levers = { ...(speed === undefined ? {} : { speed }), ...(inference_geo === undefined ? {} : { inference_geo }), service_tier: service_tier ?? 'standard' };
  const mock = stream
    ? { startUsageJson: JSON.stringify({ input_tokens: 7, output_tokens: 1, ...levers }), usageJson: JSON.stringify(counts), ...extraMock }
    : { usageJson: JSON.stringify({ ...counts, ...levers }), ...extraMock };
  return { path: '/v1/messages', body: { model, max_tokens: 100, messages: [{ role: 'user', content: 'hi' }], ...(stream ? { stream: true } : {}), ...fields, mock } };
}

// ── Helpers ──────────────────────────────────────────────────────────────────────────────────

async function lastRecord(gw: Harness, key: string): Promise<any> {
  return (await usageOf(gw.base, key)).requests[0];
}

/** Sends a call, checks it was answered, returns its record. */
async function billed(t: Test, gw: Harness, key: string, call: { path: string; body: Record<string, unknown> }, label: string, headers: Record<string, string> = {}): Promise<any> {
  const res = await post(gw.base + call.path, key, call.body, headers);
  t.equal(res.status, 200, `${label}: answered`);
  return lastRecord(gw, key);
}

/** Sends a call that must be refused as unpriced, naming `option`, with nothing forwarded or billed. */
async function refused(t: Test, gw: Harness, key: string, call: { path: string; body: Record<string, unknown> }, option: RegExp, label: string, headers: Record<string, string> = {}): Promise<void> {
  const before = gw.mock.requests.length;
  const records = (await usageOf(gw.base, key)).requests.length;
  const res = await post(gw.base + call.path, key, call.body, headers);
  t.equal(res.status, 400, `${label}: 400`);
  t.match(res.json, { error: { code: 'unpriced_option' } }, label);
  t.match(res.json?.error?.message, option, `${label}: the message names the option`);
  t.equal(gw.mock.requests.length, before, `${label}: nothing forwarded`);
  t.equal((await usageOf(gw.base, key)).requests.length, records, `${label}: nothing recorded`);
}

let holdTag = 0;
/**
 * The amount held for a call while the provider keeps its answer (mock `hold`), then the call
 * let go: `bytes × input + 100 × output` at the rates the hold must use.
 */
async function heldFor(t: Test, gw: Harness, key: string, call: { path: string; body: Record<string, unknown> }, rates: { input: number; output: number }, label: string, headers: Record<string, string> = {}): Promise<void> {
  const tag = `hold-${++holdTag}`;
  const body = { ...call.body, mock: { ...(call.body.mock as object), hold: tag } };
  const answer = post(gw.base + call.path, key, body, headers);
  await gw.mock.waitHeld(tag);
  const held = (await usageOf(gw.base, key)).key.heldNanoUsd;
  gw.mock.release(tag);
  t.equal((await answer).status, 200, `${label}: answered once let go`);
  const bytes = Buffer.byteLength(JSON.stringify(body));
  t.equal(held, bytes * rates.input + 100 * rates.output, `${label}: held ${bytes} bytes × ${rates.input} + 100 × ${rates.output} nUSD`);
}

/** tollgate_unpriced_levers_total, read once the calls sent are counted (their ends are observed as their responses close). */
async function unpricedCounted(gw: Harness, expected: Record<string, number>): Promise<Map<string, number>> {
  return eventually(async () => {
    const all = parseMetrics(await (await fetch(`${gw.admin}/metrics`)).text());
    const ok = Object.entries(expected).every(([series, n]) => all.get(series) === n);
    return ok ? all : undefined;
  });
}

// ── Tests ────────────────────────────────────────────────────────────────────────────────────

t.test('OpenAI service tiers, Chat and Responses, plain and streamed', async (t) => {
  const gw = await startGateway(t, { config: leverConfig(null), admin: true });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1000']);
  // Short prompt: 300 fresh, 400 read, 100 written, 100 out.
  const short = {
    fast: 300 * 2000 + 400 * 1000 + 100 * 2500 + 100 * 8000, // 2,050,000
    flex: 300 * 500 + 400 * 250 + 100 * 625 + 100 * 2000, // 512,500
    ultrafast: 300 * 6000 + 400 * 3000 + 100 * 7500 + 100 * 24000, // 6,150,000
  };
  // Hold rates: the named tier's table and long-context rates (the tier's own, else the model's).
  const holds = {
    fast: { input: 8000, output: 12000 }, // fast long: extended write 8, output 12
    priority: { input: 8000, output: 12000 },
    flex: { input: 4000, output: 6000 }, // the model's long-context extended write 4 and output 6
    ultrafast: { input: 12000, output: 24000 }, // extended write 12, output 24
  };
  const cost = { fast: short.fast, priority: short.fast, flex: short.flex, ultrafast: short.ultrafast };
  let reportedUnpriced = 0;
  for (const f of OPENAI) {
    for (const stream of MODES) {
      for (const tier of ['fast', 'priority', 'flex', 'ultrafast'] as const) {
        const label = `${f} ${mode(stream)} ${tier}`;
        // Named and priced: billed and held at the tier's rates; the record says which name.
        const call = openAi(f, stream, 'oa-levers', { service_tier: tier }, { usageJson: openAiUsage(f, SHORT), serviceTier: tier });
        const r = await billed(t, gw, key, call, `${label}, named`);
        t.equal(r.costNanoUsd, cost[tier], `${label}, named: billed at the tier's rates`);
        t.match(r, { serviceTier: tier, estimated: false, worstCase: null }, `${label}, named: record`);
        await heldFor(t, gw, key, call, holds[tier], `${label}, named`);
        // Named and unpriced: refused.
        await refused(t, gw, key, openAi(f, stream, 'oa-plain', { service_tier: tier }, {}), new RegExp(`service_tier "${tier}"`), `${label}, unpriced`);
        // Not named, reported (a project's default tier): billed by the report.
        const reported = await billed(t, gw, key, openAi(f, stream, 'oa-levers', {}, { usageJson: openAiUsage(f, SHORT), serviceTier: tier }), `${label}, reported`);
        t.equal(reported.costNanoUsd, cost[tier], `${label}, reported: billed at the reported tier's rates`);
        t.match(reported, { serviceTier: tier, estimated: false, worstCase: null }, `${label}, reported: record`);
        // Not named, reported, unpriced: all 900 tokens at oa-plain's highest rate (4), flagged.
        const worst = await billed(t, gw, key, openAi(f, stream, 'oa-plain', {}, { serviceTier: tier }), `${label}, reported unpriced`);
        t.equal(worst.costNanoUsd, (11 + 7) * 4000, `${label}, reported unpriced: every token at 4000`);
        t.match(worst, { serviceTier: tier, estimated: true, estimateReason: 'unpriced_lever', worstCase: `service_tier:${tier}` }, `${label}, reported unpriced: flagged`);
        reportedUnpriced++;
      }
      // The standard names are the standard price: named, never refused.
      for (const tier of ['auto', 'default']) {
        const r = await billed(t, gw, key, openAi(f, stream, 'oa-plain', { service_tier: tier }, { usageJson: openAiUsage(f, { input: 800, cached: 0, write: 0, output: 100 }) }), `${f} ${mode(stream)} ${tier}`);
        t.equal(r.costNanoUsd, 800 * 1000 + 100 * 4000, `${f} ${mode(stream)} ${tier}: the base rates`);
      }
    }
  }
  const counted = await unpricedCounted(gw, {
    'tollgate_unpriced_levers_total{provider="openai",lever="service_tier:flex"}': reportedUnpriced / 4,
    'tollgate_unpriced_levers_total{provider="openai",lever="service_tier:fast"}': reportedUnpriced / 4,
    'tollgate_unpriced_levers_total{provider="openai",lever="service_tier:priority"}': reportedUnpriced / 4,
    'tollgate_unpriced_levers_total{provider="openai",lever="service_tier:ultrafast"}': reportedUnpriced / 4,
  });
  t.ok(counted, 'each reported unpriced tier counted once per call, by provider and lever');
  // A tier in the provider's own odd words: recorded as reported, counted under its kind, never a label of its own.
  const odd = await billed(t, gw, key, openAi('chat', false, 'oa-plain', {}, { serviceTier: '=HYPERLINK("x")' }), 'an oddly named tier, reported unpriced');
  t.match(odd, { serviceTier: '=HYPERLINK("x")', estimated: true, worstCase: 'service_tier:=HYPERLINK("x")' }, 'the record keeps what the provider said');
  const after = await unpricedCounted(gw, { 'tollgate_unpriced_levers_total{provider="openai",lever="service_tier:other"}': 1 });
  t.notOk([...after.keys()].some((series) => series.includes('HYPERLINK')), 'the provider\'s text is no label value');
});

t.test('OpenAI long context, cache writes and extended retention, Chat and Responses, plain and streamed', async (t) => {
  const gw = await startGateway(t, { config: leverConfig(null), admin: true });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1000']);
  let combos = 0;
  for (const f of OPENAI) {
    for (const stream of MODES) {
      const label = `${f} ${mode(stream)}`;
      // Cache writes at their own rate: 300 × 1 + 400 × 0.50 + 100 × 1.25 + 100 × 4 (USD/M).
      const r = await billed(t, gw, key, openAi(f, stream, 'oa-levers', {}, { usageJson: openAiUsage(f, SHORT) }), `${label} cache writes`);
      t.equal(r.costNanoUsd, 300 * 1000 + 400 * 500 + 100 * 1250 + 100 * 4000, `${label}: cache writes at 1.25`);
      t.match(r, { cacheWriteTokens: 100, cachedInputTokens: 400, longContext: false, worstCase: null });
      // A price without a cache-write rate: those tokens at its highest rate (a kind of token, not a lever).
      const kind = await billed(t, gw, key, openAi(f, stream, 'oa-plain', {}, { usageJson: openAiUsage(f, SHORT) }), `${label} cache writes unpriced`);
      t.equal(kind.costNanoUsd, 300 * 1000 + 400 * 1000 + 100 * 4000 + 100 * 4000, `${label}: unpriced cache writes at 4, reads at input`);
      t.match(kind, { worstCase: 'cacheWrite', estimated: true, estimateReason: 'unpriced_lever' }, `${label}: flagged as any lever the price cannot price`);
      // Long context, reported by the counts: 1,000 × 2 + 800 × 1 + 200 × 2.50 + 100 × 6.
      const long = await billed(t, gw, key, openAi(f, stream, 'oa-levers', {}, { usageJson: openAiUsage(f, LONG) }), `${label} long`);
      t.equal(long.costNanoUsd, 3_900_000, `${label}: long-context rates`);
      t.match(long, { longContext: true, worstCase: null, estimated: false });
      // A tier with its own long-context rates: 1,000 × 4 + 800 × 2 + 200 × 5 + 100 × 12.
      const fastLong = await billed(t, gw, key, openAi(f, stream, 'oa-levers', { service_tier: 'priority' }, { usageJson: openAiUsage(f, LONG), serviceTier: 'priority' }), `${label} fast long`);
      t.equal(fastLong.costNanoUsd, 7_800_000, `${label}: the fast tier's long-context rates`);
      t.match(fastLong, { longContext: true, worstCase: null });
      // A tier without them: the higher of its rates and the long-context ones (here the
      // long-context ones), named, flagged and counted.
      const flexLong = await billed(t, gw, key, openAi(f, stream, 'oa-levers', { service_tier: 'flex' }, { usageJson: openAiUsage(f, LONG), serviceTier: 'flex' }), `${label} flex long`);
      t.equal(flexLong.costNanoUsd, 3_900_000, `${label}: flex above the threshold at the long-context rates`);
      t.match(flexLong, { longContext: true, worstCase: 'service_tier:flex+long_context', estimated: true });
      combos++;
      // Extended retention named and priced: writes at 2 (fast: 4); held at the extended write rate.
      const ext = openAi(f, stream, 'oa-levers', { prompt_cache_retention: '24h' }, { usageJson: openAiUsage(f, SHORT) });
      const e = await billed(t, gw, key, ext, `${label} extended`);
      t.equal(e.costNanoUsd, 300 * 1000 + 400 * 500 + 100 * 2000 + 100 * 4000, `${label}: extended writes at 2`);
      await heldFor(t, gw, key, ext, { input: 4000, output: 6000 }, `${label} extended`);
      const extFast = await billed(t, gw, key, openAi(f, stream, 'oa-levers', { prompt_cache_retention: '24h', service_tier: 'fast' }, { usageJson: openAiUsage(f, SHORT), serviceTier: 'fast' }), `${label} extended fast`);
      t.equal(extFast.costNanoUsd, 300 * 2000 + 400 * 1000 + 100 * 4000 + 100 * 8000, `${label}: extended writes of the fast tier at 4`);
      // The in-memory retention is the standard one.
      const mem = await billed(t, gw, key, openAi(f, stream, 'oa-plain', { prompt_cache_retention: 'in_memory' }, { usageJson: openAiUsage(f, { input: 800, cached: 0, write: 0, output: 100 }) }), `${label} in-memory`);
      t.equal(mem.costNanoUsd, 800 * 1000 + 100 * 4000);
      await refused(t, gw, key, openAi(f, stream, 'oa-plain', { prompt_cache_retention: '24h' }, {}), /extended prompt-cache retention/, `${label} extended unpriced`);
    }
  }
  await unpricedCounted(gw, {
    'tollgate_unpriced_levers_total{provider="openai",lever="service_tier:flex+long_context"}': combos,
    'tollgate_unpriced_levers_total{provider="openai",lever="token:cache_write"}': combos,
  });
  t.pass('the unpriced combination and the unpriced kind of token counted');
});

t.test('OpenAI regional processing: the provider\'s region priced on the entries that have it, held at it; refused on the others', async (t) => {
  const gw = await startGateway(t, { config: leverConfig('eu') });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1000']);
  for (const f of OPENAI) {
    for (const stream of MODES) {
      const label = `${f} ${mode(stream)} in the EU`;
      const call = openAi(f, stream, 'oa-levers', {}, { usageJson: openAiUsage(f, SHORT) });
      const r = await billed(t, gw, key, call, label);
      t.equal(r.costNanoUsd, 1_127_500, `${label}: (300 × 1 + 400 × 0.50 + 100 × 1.25 + 100 × 4) × 1.1`);
      t.match(r, { inferenceGeo: 'eu', worstCase: null, estimated: false });
      await heldFor(t, gw, key, call, { input: 4400, output: 6600 }, label);
      const fast = await billed(t, gw, key, openAi(f, stream, 'oa-levers', { service_tier: 'fast' }, { usageJson: openAiUsage(f, SHORT), serviceTier: 'fast' }), `${label} fast`);
      t.equal(fast.costNanoUsd, 2_255_000, `${label}: the fast tier × 1.1`);
      // Audio input, which oa-levers has no rate for: those tokens at the highest rate, the
      // ultrafast output 24 × 1.1 = 26.40, which carries the region already (not × 1.1 again).
      const usage = JSON.parse(openAiUsage(f, SHORT));
      const prompt = f === 'chat' ? 'prompt_tokens' : 'input_tokens';
      usage[prompt] += 100;
      usage.total_tokens += 100;
      usage[f === 'chat' ? 'prompt_tokens_details' : 'input_tokens_details'].audio_tokens = 100;
      const audio = await billed(t, gw, key, openAi(f, stream, 'oa-levers', {}, { usageJson: JSON.stringify(usage) }), `${label} audio`);
      t.equal(audio.costNanoUsd, 1_127_500 + 100 * 26_400, `${label}: the priced tokens × 1.1, the audio at the highest rate`);
      t.match(audio, { audioInputTokens: 100, worstCase: 'audioInput', estimated: true, estimateReason: 'unpriced_lever' });
      await refused(t, gw, key, openAi(f, stream, 'oa-plain', {}, {}), /regional processing in "eu"/, `${label}, unpriced`);
    }
  }
});

t.test('Anthropic speed and inference geography, plain and streamed', async (t) => {
  const gw = await startGateway(t, { config: leverConfig(null), admin: true });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1000']);
  const fastBeta = { 'anthropic-beta': 'fast-mode-2026-02-01' };
  const base = 300 * 3000 + 400 * 300 + 100 * 3750 + 100 * 15000; // 2,895,000
  const fast = 300 * 6000 + 400 * 600 + 100 * 7500 + 100 * 30000; // 5,790,000
  let n = 0;
  for (const stream of MODES) {
    const label = `messages ${mode(stream)}`;
    // Speed named and priced: billed and held at the fast rates (the 1-hour write 12 or the long 12; output 30).
    const named = messages(stream, 'cl-levers', { speed: 'fast' }, { ...msgCounts(MSG_SHORT), speed: 'fast' });
    const r = await billed(t, gw, key, named, `${label} fast`, fastBeta);
    t.equal(r.costNanoUsd, fast, `${label}: fast rates`);
    t.match(r, { speed: 'fast', estimated: false, worstCase: null });
    await heldFor(t, gw, key, named, { input: 12000, output: 30000 }, `${label} fast`, fastBeta);
    // Billed by the answer: fast asked for, standard served (as Opus 4.6 answers).
    const served = await billed(t, gw, key, messages(stream, 'cl-levers', { speed: 'fast' }, { ...msgCounts(MSG_SHORT), speed: 'standard' }), `${label} fast asked, standard served`, fastBeta);
    t.equal(served.costNanoUsd, base, `${label}: the standard rates the answer reports`);
    // Geography named and priced: 1.1×; held at 1.1× (the long-context 1-hour write 12, output 22.50).
    const us = messages(stream, 'cl-levers', { inference_geo: 'us' }, { ...msgCounts(MSG_SHORT), inference_geo: 'us' });
    const u = await billed(t, gw, key, us, `${label} us`);
    t.equal(u.costNanoUsd, 3_184_500, `${label}: 2,895,000 × 1.1`);
    t.match(u, { inferenceGeo: 'us', worstCase: null });
    await heldFor(t, gw, key, us, { input: 13200, output: 24750 }, `${label} us`);
    // Both: fast rates × 1.1.
    const both = messages(stream, 'cl-levers', { speed: 'fast', inference_geo: 'us' }, { ...msgCounts(MSG_SHORT), speed: 'fast', inference_geo: 'us' });
    const b = await billed(t, gw, key, both, `${label} fast us`, fastBeta);
    t.equal(b.costNanoUsd, 6_369_000, `${label}: 5,790,000 × 1.1`);
    await heldFor(t, gw, key, both, { input: 13200, output: 33000 }, `${label} fast us`, fastBeta);
    // The standard values are the standard price.
    const g = await billed(t, gw, key, messages(stream, 'cl-plain', { inference_geo: 'global', speed: 'standard' }, { ...msgCounts(MSG_SHORT), inference_geo: 'global', speed: 'standard' }), `${label} global standard`);
    t.equal(g.costNanoUsd, base);
    // Named and unpriced: refused.
    await refused(t, gw, key, messages(stream, 'cl-plain', { speed: 'fast' }, {}), /speed "fast"/, `${label} fast unpriced`, fastBeta);
    await refused(t, gw, key, messages(stream, 'cl-plain', { inference_geo: 'us' }, {}), /inference_geo "us"/, `${label} us unpriced`);
    await refused(t, gw, key, messages(stream, 'cl-levers', { inference_geo: 'eu' }, {}), /inference_geo "eu"/, `${label} eu unpriced`);
    // Reported, not named: priced → billed by the report; unpriced → every token at the highest rate, flagged.
    const rf = await billed(t, gw, key, messages(stream, 'cl-levers', {}, { ...msgCounts(MSG_SHORT), speed: 'fast', inference_geo: 'us' }), `${label} reported fast us`);
    t.equal(rf.costNanoUsd, 6_369_000, `${label}: a workspace default billed as reported`);
    const rs = await billed(t, gw, key, messages(stream, 'cl-plain', {}, { ...msgCounts(MSG_SHORT), speed: 'fast' }), `${label} reported fast unpriced`);
    t.equal(rs.costNanoUsd, 900 * 15000, `${label}: 900 tokens at cl-plain's highest rate`);
    t.match(rs, { speed: 'fast', estimated: true, estimateReason: 'unpriced_lever', worstCase: 'speed:fast' });
    const rg = await billed(t, gw, key, messages(stream, 'cl-plain', {}, { ...msgCounts(MSG_SHORT), inference_geo: 'us' }), `${label} reported us unpriced`);
    t.equal(rg.costNanoUsd, 900 * 15000);
    t.match(rg, { inferenceGeo: 'us', estimated: true, worstCase: 'inference_geo:us' });
    // cl-levers' highest rate: fast output 30 × 1.1 = 33.
    const re = await billed(t, gw, key, messages(stream, 'cl-levers', {}, { ...msgCounts(MSG_SHORT), inference_geo: 'eu' }), `${label} reported eu unpriced`);
    t.equal(re.costNanoUsd, 900 * 33000, `${label}: 900 tokens at 33`);
    t.match(re, { estimated: true, worstCase: 'inference_geo:eu' });
    // Priority Tier reported (no published price): flagged too.
    const rp = await billed(t, gw, key, messages(stream, 'cl-plain', {}, { ...msgCounts(MSG_SHORT), service_tier: 'priority' }), `${label} reported priority`);
    t.match(rp, { costNanoUsd: 900 * 15000, estimated: true, worstCase: 'service_tier:priority' });
    n++;
  }
  await unpricedCounted(gw, {
    'tollgate_unpriced_levers_total{provider="anthropic",lever="speed:fast"}': n,
    'tollgate_unpriced_levers_total{provider="anthropic",lever="inference_geo:us"}': n,
    'tollgate_unpriced_levers_total{provider="anthropic",lever="inference_geo:eu"}': n,
    'tollgate_unpriced_levers_total{provider="anthropic",lever="service_tier:priority"}': n,
  });
  t.pass('each reported unpriced lever counted');
});

t.test('Anthropic long context and usage in parts (usage.iterations), plain and streamed', async (t) => {
  const gw = await startGateway(t, { config: leverConfig(null) });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1000']);
  const oneM = { 'anthropic-beta': 'context-1m-2025-08-07' };
  for (const stream of MODES) {
    const label = `messages ${mode(stream)}`;
    // The 1M window named and priced; a 2,000-token prompt: 1,000 × 6 + 800 × 0.60 + 200 × 7.50 + 100 × 22.50.
    const long = await billed(t, gw, key, messages(stream, 'cl-levers', {}, msgCounts(MSG_LONG)), `${label} long`, oneM);
    t.equal(long.costNanoUsd, 10_230_000, `${label}: every token at the long-context rates`);
    t.match(long, { longContext: true, worstCase: null });
    await refused(t, gw, key, messages(stream, 'cl-plain', {}, {}), /context-1m/, `${label} 1M unpriced`, oneM);
    // Fast with a long prompt, no fast long-context rates: the higher of the two tables, named.
    const fastLong = await billed(t, gw, key, messages(stream, 'cl-levers', { speed: 'fast' }, { ...msgCounts(MSG_LONG), speed: 'fast' }), `${label} fast long`);
    t.equal(fastLong.costNanoUsd, 1000 * 6000 + 800 * 600 + 200 * 7500 + 100 * 30000, `${label}: fast long at the higher rates`);
    t.match(fastLong, { worstCase: 'speed:fast+long_context', estimated: true });
    // Usage in parts: a 1,500-token compaction pass (long: 1,500 × 6 + 200 × 22.50 = 13,500,000)
    // and the message pass (the short counts, standard: 2,895,000); the top level is the last pass only.
    const compaction = { type: 'compaction', input_tokens: 1500, output_tokens: 200, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 };
    const message = { type: 'message', ...msgCounts(MSG_SHORT) };
    const parts = await billed(t, gw, key, messages(stream, 'cl-levers', {}, { ...msgCounts(MSG_SHORT), iterations: [compaction, message] }), `${label} iterations`);
    t.equal(parts.costNanoUsd, 16_395_000, `${label}: each pass at its own band`);
    t.match(parts, { inputTokens: 2300, outputTokens: 300, cachedInputTokens: 400, cacheWriteTokens: 100, longContext: true, worstCase: null, estimated: false });
    // With the geography on top: 16,395,000 × 1.1.
    const partsUs = await billed(t, gw, key, messages(stream, 'cl-levers', { inference_geo: 'us' }, { ...msgCounts(MSG_SHORT), inference_geo: 'us', iterations: [compaction, message] }), `${label} iterations us`);
    t.equal(partsUs.costNanoUsd, 18_034_500);
    // A list that reports less than the top level cannot be the whole call: estimated, never below what was read.
    const bad = await billed(t, gw, key, messages(stream, 'cl-levers', {}, { ...msgCounts(MSG_SHORT), iterations: [{ type: 'message', input_tokens: 1, output_tokens: 1 }] }), `${label} inconsistent iterations`);
    t.match(bad, { estimated: true, estimateReason: 'usage_inconsistent:iterations' });
    t.ok(bad.inputTokens >= 800 && bad.outputTokens >= 100, `${label}: the top-level counts are a floor`);
  }
});

t.test('server tool fees, named and reported, on every format', async (t) => {
  const gw = await startGateway(t, { config: leverConfig(null), admin: true });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1000']);
  const plainUsage = (f: OpenAiFormat): string => openAiUsage(f, { input: 800, cached: 0, write: 0, output: 100 });
  let reported = 0;
  for (const stream of MODES) {
    for (const f of OPENAI) {
      const label = `${f} ${mode(stream)}`;
      const offer = f === 'chat' ? { web_search_options: {} } : { tools: [{ type: 'web_search' }] };
      const searched = f === 'chat' ? {} : { webSearchRequests: 1 };
      const r = await billed(t, gw, key, openAi(f, stream, 'oa-levers', offer, { usageJson: plainUsage(f), ...searched }), `${label} web search`);
      t.equal(r.costNanoUsd, 800 * 1000 + 100 * 4000 + 10_000_000, `${label}: one search at $10 per 1,000`);
      t.match(r, { toolCalls: { web_search: 1 }, worstCase: null });
      await refused(t, gw, key, openAi(f, stream, 'oa-plain', offer, {}), /web_search tool/, `${label} web search unpriced`);
    }
    const label = `responses ${mode(stream)}`;
    await refused(t, gw, key, openAi('responses', stream, 'oa-plain', { tools: [{ type: 'file_search' }] }, {}), /file_search tool/, `${label} file search unpriced`);
    // Reported without being offered (a stored prompt's tools): billed by the report; without a
    // fee, at the highest fee known ($25 per 1,000, the built-in catalogue's), flagged.
    const rep = await billed(t, gw, key, openAi('responses', stream, 'oa-plain', {}, { usageJson: plainUsage('responses'), webSearchRequests: 1 }), `${label} reported search`);
    t.equal(rep.costNanoUsd, 800 * 1000 + 100 * 4000 + 25_000_000, `${label}: the highest fee known`);
    t.match(rep, { toolCalls: { web_search: 1 }, estimated: true, worstCase: 'tool:web_search' });
    reported++;
    const mlabel = `messages ${mode(stream)}`;
    const tool = { tools: [{ type: 'web_search_20250305', name: 'web_search' }] };
    const m = await billed(t, gw, key, messages(stream, 'cl-levers', tool, { ...msgCounts(MSG_SHORT), server_tool_use: { web_search_requests: 2 } }), `${mlabel} web search`);
    t.equal(m.costNanoUsd, 2_895_000 + 20_000_000, `${mlabel}: two searches`);
    const mus = await billed(t, gw, key, messages(stream, 'cl-levers', { ...tool, inference_geo: 'us' }, { ...msgCounts(MSG_SHORT), inference_geo: 'us', server_tool_use: { web_search_requests: 2 } }), `${mlabel} web search us`);
    t.equal(mus.costNanoUsd, 3_184_500 + 20_000_000, `${mlabel}: the geography multiplies tokens, not the search fee`);
    await refused(t, gw, key, messages(stream, 'cl-plain', tool, {}), /web_search tool/, `${mlabel} web search unpriced`);
  }
  await unpricedCounted(gw, { 'tollgate_unpriced_levers_total{provider="openai",lever="tool:web_search"}': reported });
  t.pass('the reported unpriced tool counted');
});

t.test('a cache write the request names is priced by the table it will use: the named speed\'s, and the long-context rates', async (t) => {
  const gw = await startGateway(t, { config: leverConfig(null) });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1000']);
  const fastBeta = { 'anthropic-beta': 'fast-mode-2026-02-01' };
  const hour = { system: [{ type: 'text', text: 'be brief', cache_control: { type: 'ephemeral', ttl: '1h' } }] };
  for (const stream of MODES) {
    // The standard rates price 1-hour writes; the fast ones do not: refused, nothing forwarded.
    await refused(t, gw, key, messages(stream, 'cl-fast-5m', { speed: 'fast', ...hour }, {}), /1-hour cache writes \(cache_control ttl "1h"\) with speed "fast"/, `${mode(stream)} fast with 1-hour writes`, fastBeta);
    const standard = await billed(t, gw, key, messages(stream, 'cl-fast-5m', hour, msgCounts(MSG_SHORT)), `${mode(stream)} standard with 1-hour writes`);
    t.equal(standard.costNanoUsd, 2_895_000, `${mode(stream)}: the standard rates price them`);
  }
  for (const f of OPENAI) {
    for (const stream of MODES) {
      // Extended retention is priced below the threshold only: held at the highest rate, 6, for
      // every input token (a long prompt's writes would cost that), the output at the long rate 6.
      const call = openAi(f, stream, 'oa-long-no-ext', { prompt_cache_retention: '24h' }, { usageJson: openAiUsage(f, SHORT) });
      await heldFor(t, gw, key, call, { input: 6000, output: 6000 }, `${f} ${mode(stream)} extended, long unpriced`);
    }
  }
});
