import t, { type Test } from 'tap';
import { DEFAULT_CONFIG } from '../src/config/defaults.js';
import { compileConfig } from '../src/config/load.js';
import type { Config, PriceNano } from '../src/config/types.js';
import { NO_LEVERS, type RequestLevers } from '../src/formats/levers.js';
import { emptyCounts, emptyUsage, type TokenCounts, type Usage } from '../src/formats/types.js';
import { costOf, holdRates } from '../src/meter/charge.js';

// A hold priced with holdRates is a true worst case for text tokens under the levers the
// request names: whatever context length, cache kind (5-minute, 1-hour, extended) and split
// into passes an answer reports with those levers, its cost never exceeds
// input × holdRates.input + output × holdRates.output. Checked on every model of the built-in
// catalogue, for every tier, speed and geography it prices (and through a regional provider),
// against many usages drawn with a fixed seed.

let seed = 42;
function rand(n: number): number {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed % n;
}

/** Every combination of named levers a model's price covers: each tier or speed (or none), with each geography (or none). */
function namedLevers(p: PriceNano): RequestLevers[] {
  const tables: Array<Pick<RequestLevers, 'serviceTier' | 'speed'>> = [
    { serviceTier: null, speed: null },
    ...[...p.tiers.keys()].map((serviceTier) => ({ serviceTier, speed: null })),
    ...[...p.speed.keys()].map((speed) => ({ serviceTier: null, speed })),
  ];
  const geos = [null, ...p.inferenceGeo.keys()];
  return tables.flatMap((table) => geos.map((inferenceGeo) => ({ ...NO_LEVERS, ...table, inferenceGeo })));
}

function checkBound(t: Test, config: Config): number {
  let checked = 0;
  for (const model of config.models.values()) {
    const p = model.price;
    if (p.region !== null && p.region.multiplier === null) continue; // every call refused
    const anthropic = model.endpoints.has('messages');
    for (const levers of namedLevers(p)) {
      const rates = holdRates(p, levers);
      for (let i = 0; i < 300; i++) {
        const draw = (): TokenCounts => {
          const input = rand(400_000) + 1;
          const cachedInput = rand(input);
          const cacheWrite = rand(input - cachedInput + 1);
          const output = rand(64_000);
          return { ...emptyCounts(), input, cachedInput, cacheWrite, cacheWrite1h: anthropic ? rand(cacheWrite + 1) : 0, output, reasoning: rand(output + 1) };
        };
        const u: Usage = { ...emptyUsage(), ...draw() };
        u.serviceTier = levers.serviceTier;
        u.speed = levers.speed;
        u.inferenceGeo = levers.inferenceGeo;
        u.extendedCache = !anthropic && p.cacheWriteExtended !== undefined && rand(2) === 1;
        if (anthropic && rand(4) === 0) {
          // A call reported in parts (a compaction pass, then the message): the hold covers their sum.
          const first: TokenCounts = { ...u };
          const second = draw();
          u.parts = [first, second];
          for (const kind of ['input', 'cachedInput', 'cacheWrite', 'cacheWrite1h', 'output', 'reasoning'] as const) u[kind] = first[kind] + second[kind];
        }
        const cost = costOf(u, p);
        // A tier or speed with a long prompt and no long-context rates of its own is a
        // combination no page prices: named, but still within the hold.
        if (cost.worstCase !== null && !/^(service_tier|speed):[a-z_]+\+long_context$/.test(cost.worstCase)) {
          t.fail(`${model.id} ${JSON.stringify(levers)}: a priced usage was worst-case priced (${cost.worstCase})`);
        }
        const hold = u.input * rates.input + u.output * rates.output;
        if (cost.nano > hold) t.fail(`${model.id} ${JSON.stringify(levers)}: ${JSON.stringify(u)} costs ${cost.nano} > hold ${hold}`);
        checked++;
      }
    }
  }
  return checked;
}

t.test('no priced text usage costs more than its hold, for the levers named', async (t) => {
  const config = compileConfig(structuredClone(DEFAULT_CONFIG), null);
  const checked = checkBound(t, config);
  t.ok(checked >= config.models.size * 300, `${checked} draws checked`);
  const sonnet = holdRates(config.models.get('claude-sonnet-4-5')!.price, NO_LEVERS);
  t.same(sonnet, { input: 12000, output: 22500 }, 'Sonnet 4.5: the long-context 1-hour write and long-context output');
  const gpt5 = config.models.get('gpt-5')!.price;
  t.same(holdRates(gpt5, NO_LEVERS), { input: 1250, output: 10000 }, 'GPT-5, no tier named: the standard rates');
  t.same(holdRates(gpt5, { ...NO_LEVERS, serviceTier: 'priority' }), { input: 2500, output: 20000 }, 'GPT-5, priority named: the Fast rates');
  t.same(holdRates(gpt5, { ...NO_LEVERS, serviceTier: 'fast' }), { input: 2500, output: 20000 }, 'fast: the same tier');
  const opus = config.models.get('claude-opus-5-5')!.price;
  t.same(holdRates(opus, { ...NO_LEVERS, speed: 'fast', inferenceGeo: 'us' }), { input: 17600, output: 44000 }, 'Opus 5.5 fast in the US: 1-hour write 16 × 1.1, output 40 × 1.1');
});

t.test('through a regional provider: the regional multiplier is in the hold', async (t) => {
  const raw = structuredClone(DEFAULT_CONFIG);
  raw.providers.openai!.baseUrl = 'https://eu.api.openai.com/v1';
  const config = compileConfig(raw, null);
  t.ok(checkBound(t, config) > 0);
  t.same(holdRates(config.models.get('gpt-6-luna')!.price, NO_LEVERS), { input: 275, output: 825 }, 'GPT-6 Luna in the EU: long-context write 0.25 × 1.1, long output 0.75 × 1.1');
});

t.test('a call\'s hold is priced at those rates', async (t) => {
  const { holdFor } = await import('../src/meter/hold.js');
  const { FORMATS } = await import('../src/formats/index.js');
  const config = compileConfig(structuredClone(DEFAULT_CONFIG), null);
  /** A body's top-level members as the request path reads them (hold.ts TopLevelFields). */
  const fields = (body: Record<string, unknown>) => ({ member: (name: string) => body[name] });
  const body = fields({ model: 'claude-sonnet-4-5', max_tokens: 1000, messages: [{ role: 'user', content: 'hi' }] });
  const hold = holdFor(FORMATS.messages, config.models.get('claude-sonnet-4-5')!, NO_LEVERS, 'credit', body, 5000, false, 0);
  t.equal(hold.amount, 5000 * 12000 + 1000 * 22500, 'input bytes at the long-context 1-hour write rate, output cap at the long-context output rate');
  const gpt5 = config.models.get('gpt-5')!;
  const chat = holdFor(FORMATS.chat, gpt5, { ...NO_LEVERS, serviceTier: 'priority' }, 'credit', fields({ model: 'gpt-5', max_tokens: 100 }), 300, false, 0);
  t.equal(chat.amount, 300 * 2500 + 100 * 20000, 'GPT-5 with priority named: the priority rates');
  const standard = holdFor(FORMATS.chat, gpt5, NO_LEVERS, 'credit', fields({ model: 'gpt-5', max_tokens: 100 }), 300, false, 0);
  t.equal(standard.amount, 300 * 1250 + 100 * 10000, 'GPT-5 with no tier named: the standard rates');
});
