import t from 'tap';
import { DEFAULT_CONFIG } from '../src/config/defaults.js';
import { compileConfig } from '../src/config/load.js';
import { emptyUsage, type Usage } from '../src/formats/types.js';
import { costOf, holdRates } from '../src/meter/charge.js';

// A hold priced with holdRates is a true worst case for text tokens under every price lever:
// whatever tier (priced), context length and cache duration an answer reports, its cost never
// exceeds input × holdRates.input + output × holdRates.output. Checked on every model of the
// built-in catalogue against many usages drawn with a fixed seed.

let seed = 42;
function rand(n: number): number {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed % n;
}

t.test('no priced text usage costs more than its hold', async (t) => {
  const config = compileConfig(structuredClone(DEFAULT_CONFIG), null);
  let checked = 0;
  for (const model of config.models.values()) {
    const p = model.price;
    const rates = holdRates(p);
    const tiers = [null, ...p.tiers.keys()];
    const anthropic = model.endpoints.has('messages');
    for (let i = 0; i < 2000; i++) {
      const input = rand(400_000) + 1;
      const cachedInput = rand(input);
      const cacheWrite = anthropic ? rand(input - cachedInput + 1) : 0;
      const u: Usage = {
        ...emptyUsage(), input, cachedInput, cacheWrite,
        cacheWrite1h: anthropic ? rand(cacheWrite + 1) : 0,
        output: rand(64_000), serviceTier: tiers[rand(tiers.length)]!,
      };
      u.reasoning = rand(u.output + 1);
      const cost = costOf(u, p);
      if (cost.worstCase !== null) t.fail(`${model.id}: a priced usage was worst-case priced (${cost.worstCase})`);
      const hold = u.input * rates.input + u.output * rates.output;
      if (cost.nano > hold) t.fail(`${model.id}: ${JSON.stringify(u)} costs ${cost.nano} > hold ${hold}`);
      checked++;
    }
  }
  t.equal(checked, config.models.size * 2000, 'every draw checked');
  const sonnet = holdRates(config.models.get('claude-sonnet-4-5')!.price);
  t.same(sonnet, { input: 12000, output: 22500 }, 'Sonnet 4.5: the long-context 1-hour write and long-context output');
  t.same(holdRates(config.models.get('gpt-5')!.price), { input: 2500, output: 20000 }, 'GPT-5: the priority rates');
});

t.test('a call\'s hold is priced at those rates', async (t) => {
  const { holdFor } = await import('../src/meter/hold.js');
  const { FORMATS } = await import('../src/formats/index.js');
  const config = compileConfig(structuredClone(DEFAULT_CONFIG), null);
  /** A body's top-level members as the request path reads them (hold.ts TopLevelFields). */
  const fields = (body: Record<string, unknown>) => ({ member: (name: string) => body[name] });
  const body = fields({ model: 'claude-sonnet-4-5', max_tokens: 1000, messages: [{ role: 'user', content: 'hi' }] });
  const hold = holdFor(FORMATS.messages, config.models.get('claude-sonnet-4-5')!, 'credit', body, 5000, false, 0);
  t.equal(hold.amount, 5000 * 12000 + 1000 * 22500, 'input bytes at the long-context 1-hour write rate, output cap at the long-context output rate');
  const chat = holdFor(FORMATS.chat, config.models.get('gpt-5')!, 'credit', fields({ model: 'gpt-5', max_tokens: 100 }), 300, false, 0);
  t.equal(chat.amount, 300 * 2500 + 100 * 20000, 'GPT-5: the priority rates');
});
