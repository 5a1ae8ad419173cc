/**
 * The built-in catalogue carries the providers' published price rules (sources and dates in
 * src/config/catalogue/), consistently: Anthropic's cache-write multipliers, fast mode and
 * US inference on the models that have them; OpenAI's cache writes, long-context band and flex
 * at half; tool fees on every model; the models coding agents call by default; aliases that each
 * name one entry. (test/catalogue-prices-table.test.ts prices calls against hand-worked figures.)
 */
import t from 'tap';
import { DEFAULT_CONFIG } from '../src/config/defaults.js';
import { compileConfig } from '../src/config/load.js';
import type { Rates } from '../src/config/types.js';

const config = compileConfig(structuredClone(DEFAULT_CONFIG), null);
const models = [...config.models.values()];

/** Whether two rate tables agree to the nUSD: a rate halved to a fourth decimal is rounded up to the third (0.0625 → 0.063). */
function agree(a: Partial<Rates>, b: Partial<Rates>): boolean {
  const kinds = new Set([...Object.keys(a), ...Object.keys(b)]) as Set<keyof Rates>;
  return [...kinds].every((k) => a[k] !== undefined && b[k] !== undefined && Math.abs(a[k]! - b[k]!) <= 1);
}

/** A rate table's rates times per-kind factors, nUSD (kinds the table leaves out stay out). */
function scaled(r: Rates, by: Partial<Record<keyof Rates, number>>): Partial<Rates> {
  const out: Partial<Rates> = {};
  for (const [kind, f] of Object.entries(by) as [keyof Rates, number][]) if (r[kind] !== undefined) out[kind] = Math.round(r[kind]! * f);
  return out;
}

t.test('Claude models: 5-minute writes 1.25×, 1-hour writes 2× the input rate, reads at most 0.1×, in every table; web search $10 per 1,000', async (t) => {
  const claude = models.filter((m) => m.provider.name === 'anthropic');
  t.ok(claude.length >= 18, `${claude.length} Claude models`);
  for (const m of claude) {
    const p = m.price;
    for (const [name, table] of [['standard', p], ...[...p.speed].map(([n, s]) => [`speed ${n}`, s]), ...(p.longContext ? [['long context', p.longContext]] : [])] as [string, Rates][]) {
      t.equal(table.cacheWrite, table.input * 1.25, `${m.id} ${name}: cacheWrite`);
      t.equal(table.cacheWrite1h, table.input * 2, `${m.id} ${name}: cacheWrite1h`);
      t.ok(table.cachedInput <= table.input / 10, `${m.id} ${name}: cache reads at most 0.1×`);
    }
    t.equal(p.toolCalls.get('web_search'), 10_000_000, `${m.id} web search`);
  }
  const lc = config.models.get('claude-sonnet-4-5')!.price.longContext!;
  t.same(lc, { threshold: 200000, input: 6000, output: 22500, cachedInput: 600, cacheWrite: 7500, cacheWrite1h: 12000 }, 'Sonnet 4.5 above 200K: $6 / $22.50, the multipliers on $6');
  const haiku = config.models.get('claude-haiku-5-5')!.price;
  t.same(haiku.longContext, { threshold: 100000, ...scaled(haiku, { input: 5, output: 5, cachedInput: 5, cacheWrite: 5, cacheWrite1h: 5 }) }, 'Haiku 5.5 above 100K: 5× every rate');
});

t.test('Claude fast mode: 2× every rate where it is sold, 6× (withdrawn) on Opus 4.6 and 4.7; US inference 1.1× from the 4.6 generation on', async (t) => {
  const fast2 = ['claude-fable-5-2', 'claude-mythos-5-2', 'claude-opus-5-5', 'claude-opus-5', 'claude-opus-4-8'];
  const fast6 = ['claude-opus-4-7', 'claude-opus-4-6'];
  for (const m of models.filter((m) => m.provider.name === 'anthropic')) {
    const p = m.price;
    const fast = p.speed.get('fast');
    const factor = fast2.includes(m.id) ? 2 : fast6.includes(m.id) ? 6 : null;
    if (factor === null) t.equal(fast, undefined, `${m.id}: no fast mode`);
    else t.same(fast, scaled(p, { input: factor, output: factor, cachedInput: factor, cacheWrite: factor, cacheWrite1h: factor }), `${m.id}: fast ${factor}×`);
    const older = ['claude-opus-4-5', 'claude-sonnet-4-5', 'claude-haiku-4-5'].includes(m.id);
    t.same([...p.inferenceGeo], older ? [] : [['us', 1100]], `${m.id}: inference_geo ${older ? 'refused (before 4.6)' : 'us 1.1×'}`);
  }
});

t.test('OpenAI models: cache writes at the input rate before GPT-5.6 and 1.25× from it on; above 272K 2× input and cache, 1.5× output; flex at half; tool fees', async (t) => {
  const openai = models.filter((m) => m.provider.name === 'openai');
  t.ok(openai.length >= 27, `${openai.length} OpenAI models`);
  for (const m of openai) {
    const p = m.price;
    const newer = /^gpt-(5\.6|6)/.test(m.id);
    for (const [name, table] of [['standard', p], ...p.tiers] as [string, Rates][]) {
      t.equal(table.cacheWrite, newer ? Math.ceil(table.input * 1.25) : table.input, `${m.id} ${name}: cache writes`);
    }
    if (p.longContext !== null) {
      t.equal(p.longContext.threshold, 272000, `${m.id}: above 272,000 input tokens`);
      t.same(p.longContext, { threshold: 272000, ...scaled(p, { input: 2, cachedInput: 2, cacheWrite: 2, cacheWriteExtended: 2, output: 1.5 }) }, `${m.id}: long context`);
      for (const [name, tier] of p.tiers) {
        if (tier.longContext !== undefined) t.ok(agree(tier.longContext, scaled(tier, { input: 2, cachedInput: 2, cacheWrite: 2, cacheWriteExtended: 2, output: 1.5 })), `${m.id} ${name}: long context`);
      }
    }
    const flex = p.tiers.get('flex');
    if (flex !== undefined) {
      t.equal(flex.input, p.input / 2, `${m.id} flex input`);
      t.equal(flex.output, p.output / 2, `${m.id} flex output`);
      t.equal(flex.cachedInput, Math.ceil(p.cachedInput / 2), `${m.id} flex cached`);
    }
    t.equal(p.tiers.get('fast'), p.tiers.get('priority'), `${m.id}: fast and priority are one tier`);
    t.ok(p.toolCalls.get('web_search')! > 0 && p.toolCalls.get('file_search') === 2_500_000, `${m.id} tool fees`);
  }
  t.same(config.models.get('gpt-5')!.price.tiers.get('priority'), { input: 2500, output: 20000, cachedInput: 250, cacheWrite: 2500, cacheWriteExtended: 2500 });
  t.same(config.models.get('gpt-4o')!.price.tiers.get('priority'), { input: 4250, output: 17000, cachedInput: 2125, cacheWrite: 4250, cacheWriteExtended: 4250 });
  t.ok(['gpt-5', 'gpt-5-mini', 'gpt-5-nano', 'o4-mini', 'gpt-6.1-terra', 'gpt-6-luna'].every((id) => config.models.get(id)!.price.tiers.has('flex')));
  t.equal(config.models.get('gpt-4o-mini')!.price.tiers.has('priority'), false, 'no published priority rate found: not configured');
});

t.test('the models coding agents call by default are served, and Codex\'s web search is priced on every OpenAI model', async (t) => {
  // Claude Code's aliases on the first-party API (opus, sonnet, haiku, fable) and the default of
  // earlier versions; Codex CLI's bundled catalogue.
  for (const id of ['claude-opus-4-8', 'claude-opus-5-5', 'claude-sonnet-5-5', 'claude-haiku-5-5', 'claude-fable-5-2',
    'gpt-6.1-sol', 'gpt-6-astra', 'gpt-6-sol', 'gpt-6-luna', 'gpt-5.6-sol', 'gpt-6.1-terra', 'gpt-5.6-terra', 'gpt-5.6-luna', 'gpt-5.5']) {
    t.ok(config.models.has(id), `${id} is served`);
  }
  for (const m of models.filter((m) => m.provider.name === 'openai')) t.ok(m.price.toolCalls.has('web_search'), `${m.id}: web_search priced`);
  t.ok(config.models.get('gpt-6.1-sol')!.price.tiers.has('priority'), 'gpt-6.1-sol: Codex\'s Fast (service_tier "priority") priced');
});

t.test('aliases: each names one entry, and an entry\'s snapshot ids are served as it', async (t) => {
  t.equal(config.modelsByName.get('claude-sonnet-4-5-20250929')?.id, 'claude-sonnet-4-5');
  t.equal(config.modelsByName.get('gpt-5.6')?.id, 'gpt-5.6-sol');
  t.equal(config.modelsByName.get('gpt-5-mini-2025-08-07')?.id, 'gpt-5-mini');
  const names = models.flatMap((m) => [m.id, ...m.aliases]);
  t.equal(new Set(names).size, names.length, 'no id or alias named twice');
  t.equal(config.modelsByName.size, names.length);
});
