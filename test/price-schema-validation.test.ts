/**
 * The price levers in the configuration are validated like every other field: a bad value is
 * refused with its path, at start-up (exit 2, one line), and a good one compiles to exact
 * integer nUSD (per token, and per call for tool fees).
 */
import t from 'tap';
import { compileConfig, ConfigError } from '../src/config/load.js';
import { defaultConfig, runCli } from './helpers/harness.js';

function withPrice(price: Record<string, unknown>): Record<string, unknown> {
  const c: any = defaultConfig('http://127.0.0.1:9');
  c.models['gpt-4o'].price = { input: 2.5, output: 10, ...price };
  return c;
}

function refusal(price: Record<string, unknown>): string {
  try {
    compileConfig(withPrice(price), null);
  } catch (err) {
    if (err instanceof ConfigError) return err.message;
    throw err;
  }
  return 'accepted';
}

t.test('bad lever values are refused with their path', async (t) => {
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['tiers not an object', { tiers: 5 }, /models\.gpt-4o\.price\.tiers: must be an object/],
    ['tier without output', { tiers: { priority: { input: 4.25 } } }, /models\.gpt-4o\.price\.tiers\.priority\.output/],
    ['tier rate with 4 decimals', { tiers: { flex: { input: 1.25, output: 5, cachedInput: 0.0625 } } }, /models\.gpt-4o\.price\.tiers\.flex\.cachedInput: must be a number/],
    ['unknown field in a tier', { tiers: { priority: { input: 1, output: 2, threshold: 3 } } }, /models\.gpt-4o\.price\.tiers\.priority\.threshold: unknown field/],
    ['the standard tier named as a tier', { tiers: { default: { input: 1, output: 2 } } }, /models\.gpt-4o\.price\.tiers\.default: "default" is the standard tier/],
    ['tier name not as the provider spells it', { tiers: { Priority: { input: 1, output: 2 } } }, /models\.gpt-4o\.price\.tiers\.Priority/],
    ['long context without threshold', { longContext: { input: 5, output: 15 } }, /models\.gpt-4o\.price\.longContext\.threshold/],
    ['long context threshold not an integer', { longContext: { threshold: 2.5e5 + 0.5, input: 5, output: 15 } }, /models\.gpt-4o\.price\.longContext\.threshold: must be an integer/],
    ['long context negative rate', { longContext: { threshold: 200000, input: -5, output: 15 } }, /models\.gpt-4o\.price\.longContext\.input/],
    ['1-hour cache write as a string', { cacheWrite1h: '6' }, /models\.gpt-4o\.price\.cacheWrite1h/],
    ['audio rate negative', { audioInput: -40 }, /models\.gpt-4o\.price\.audioInput/],
    ['image rate with 4 decimals', { imageOutput: 40.0001 }, /models\.gpt-4o\.price\.imageOutput/],
    ['tool fee with 7 decimals', { toolCalls: { web_search: 10.0000001 } }, /models\.gpt-4o\.price\.toolCalls\.web_search: must be a number ≥ 0 \(USD per 1,000 calls\) with at most 6 decimals/],
    ['tool fee as a string', { toolCalls: { web_search: '10' } }, /models\.gpt-4o\.price\.toolCalls\.web_search/],
    ['tool name with a dash', { toolCalls: { 'web-search': 10 } }, /models\.gpt-4o\.price\.toolCalls\.web-search/],
    ['unknown lever', { batch: { input: 1, output: 2 } }, /models\.gpt-4o\.price\.batch: unknown field/],
  ];
  for (const [name, price, path] of cases) t.match(refusal(price), path, name);
});

t.test('a full lever price compiles to exact integers', async (t) => {
  const config = compileConfig(withPrice({
    cachedInput: 1.25, cacheWrite: 3.125, cacheWrite1h: 5, audioInput: 40, audioOutput: 80, imageInput: 10, imageOutput: 40,
    tiers: { priority: { input: 4.25, output: 17, cachedInput: 2.125 }, flex: { input: 1.25, output: 5 } },
    longContext: { threshold: 128000, input: 5, output: 20 },
    toolCalls: { web_search: 25, file_search: 2.5 },
  }), null);
  const p = config.models.get('gpt-4o')!.price;
  t.match(p, { input: 2500, output: 10000, cachedInput: 1250, cacheWrite: 3125, cacheWrite1h: 5000, audioInput: 40000, audioOutput: 80000, imageInput: 10000, imageOutput: 40000 });
  t.same(p.tiers.get('priority'), { input: 4250, output: 17000, cachedInput: 2125 });
  t.same(p.tiers.get('flex'), { input: 1250, output: 5000, cachedInput: 1250 }, 'a tier without cachedInput reads cache at its own input rate');
  t.same(p.longContext, { threshold: 128000, input: 5000, output: 20000, cachedInput: 5000 });
  t.same([...p.toolCalls], [['web_search', 25_000_000], ['file_search', 2_500_000]], 'nUSD per call');
  t.equal(p.maxRate, 80000, 'the highest rate of any table');
  t.equal(p.fallbackToolFee, 25_000_000, 'the highest fee known');
});

t.test('at start-up a bad lever is one line naming its path, exit 2', async (t) => {
  const { mkdtempSync, rmSync, writeFileSync } = await import('node:fs');
  const { join } = await import('node:path');
  const { tmpdir } = await import('node:os');
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-levers-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'config.json');
  writeFileSync(file, JSON.stringify(withPrice({ tiers: { flex: { input: 1.25, output: 'five' } } })));
  const r = await runCli(['models', 'list', '--config', file, '--data', join(dir, 'data')]);
  t.equal(r.code, 2);
  t.match(r.stderr, /^tollgate: config: models\.gpt-4o\.price\.tiers\.flex\.output: must be a number[^\n]*\n$/);
});
