/**
 * The built-in catalogue carries the providers' published price levers (sources and dates in
 * src/config/defaults.ts), consistently: Anthropic's cache multipliers on every Claude model,
 * OpenAI's flex at half the standard rates, tool fees on every model.
 */
import t from 'tap';
import { DEFAULT_CONFIG } from '../src/config/defaults.js';
import { compileConfig } from '../src/config/load.js';

const config = compileConfig(structuredClone(DEFAULT_CONFIG), null);
const models = [...config.models.values()];

t.test('Claude models: 5-minute writes 1.25×, 1-hour writes 2×, hits 0.1× the input rate; web search $10 per 1,000', async (t) => {
  const claude = models.filter((m) => m.provider.name === 'anthropic');
  t.ok(claude.length >= 3);
  for (const m of claude) {
    const p = m.price;
    t.equal(p.cacheWrite, p.input * 1.25, `${m.id} cacheWrite`);
    t.equal(p.cacheWrite1h, p.input * 2, `${m.id} cacheWrite1h`);
    t.equal(p.cachedInput, p.input / 10, `${m.id} cachedInput`);
    t.equal(p.toolCalls.get('web_search'), 10_000_000, `${m.id} web search`);
  }
  const lc = config.models.get('claude-sonnet-4-5')!.price.longContext!;
  t.same(lc, { threshold: 200000, input: 6000, output: 22500, cachedInput: 600, cacheWrite: 7500, cacheWrite1h: 12000 }, 'Sonnet 4.5 above 200K: $6 / $22.50, the multipliers on $6');
});

t.test('OpenAI models: flex at half the standard rates (cached rounded up to the next 0.001), priority as published, tool fees', async (t) => {
  const openai = models.filter((m) => m.provider.name === 'openai');
  for (const m of openai) {
    const p = m.price;
    const flex = p.tiers.get('flex');
    if (flex !== undefined) {
      t.equal(flex.input, p.input / 2, `${m.id} flex input`);
      t.equal(flex.output, p.output / 2, `${m.id} flex output`);
      t.equal(flex.cachedInput, Math.ceil(p.cachedInput / 2), `${m.id} flex cached`);
    }
    t.ok(p.toolCalls.get('web_search')! > 0 && p.toolCalls.get('file_search') === 2_500_000, `${m.id} tool fees`);
  }
  t.same(config.models.get('gpt-5')!.price.tiers.get('priority'), { input: 2500, output: 20000, cachedInput: 250 });
  t.same(config.models.get('gpt-4o')!.price.tiers.get('priority'), { input: 4250, output: 17000, cachedInput: 2125 });
  t.ok(['gpt-5', 'gpt-5-mini', 'gpt-5-nano', 'o4-mini'].every((id) => config.models.get(id)!.price.tiers.has('flex')));
  t.equal(config.models.get('gpt-4o-mini')!.price.tiers.has('priority'), false, 'no published priority rate found: not configured');
});
