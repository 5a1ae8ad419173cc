/**
 * What the configuration refuses or reads that a request could otherwise only trip over: model
 * ids and aliases no request can name, an endpoint named twice, prices too high for a charge to
 * stay exact, a limit conflicting with another's default (named as the file set it), catalogue
 * providers a partial `catalogProvider` leaves out, provider credentials as read from the
 * environment, and the file itself (a byte order mark; a link to nothing at the default name).
 */
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { DEFAULT_CONFIG } from '../src/config/defaults.js';
import { compileConfig, ConfigError, credentialValue, hasCredential, loadConfig, MAX_CALL_TOKENS, MAX_OUTPUT_CAP, MAX_PRICE_USD_PER_MILLION, MAX_TOOL_FEE_USD_PER_THOUSAND, unsendableCredentials } from '../src/config/load.js';
import { emptyUsage } from '../src/formats/types.js';
import { costOf, holdRates } from '../src/meter/charge.js';
import { NO_LEVERS } from '../src/formats/levers.js';
import { defaultConfig } from './helpers/harness.js';

function refusal(config: unknown): string {
  try {
    compileConfig(config, null);
  } catch (err) {
    if (err instanceof ConfigError) return err.message;
    throw err;
  }
  return 'accepted';
}

/** The tests' configuration with one more model entry. */
function withModel(id: string, entry: Record<string, unknown> = {}): any {
  const c: any = defaultConfig('http://127.0.0.1:9');
  c.models[id] = { provider: 'openai', endpoints: ['chat'], price: { input: 1, output: 2 }, ...entry };
  return c;
}

t.test('a model id or alias no request can name is refused, naming the entry', async (t) => {
  t.match(refusal(withModel('')), /^config: models\."": the model id is empty/);
  t.match(refusal(withModel('m'.repeat(300))), /^config: models\.m{40}…: the model id is 300 bytes long: a request's model is at most 256 bytes/);
  t.match(refusal(withModel('é'.repeat(129))), /the model id is 258 bytes long/, 'counted in UTF-8 bytes');
  t.match(refusal(withModel(`${'q'.repeat(255)}"`)), /the model id is 257 bytes long/, 'as a client sends it, JSON-escaped');
  t.equal(refusal(withModel('m'.repeat(256))), 'accepted', '256 bytes is a model a request can name');
  t.equal(refusal(withModel('é'.repeat(128))), 'accepted');
  t.match(refusal(withModel('x', { aliases: ['x-2025', ''] })), /^config: models\.x\.aliases\[1\]: the alias is empty/);
  t.match(refusal(withModel('x', { aliases: ['a'.repeat(257)] })), /^config: models\.x\.aliases\[0\]: the alias is 257 bytes long/);
});

t.test('an endpoint named twice is refused', async (t) => {
  t.match(refusal(withModel('x', { endpoints: ['chat', 'responses', 'chat'] })), /^config: models\.x\.endpoints\[2\]: "chat" is named twice$/);
});

t.test('prices are bounded so that every charge stays an exact integer', async (t) => {
  const max = MAX_PRICE_USD_PER_MILLION;
  const priced = (price: Record<string, unknown>, provider = 'openai'): string => refusal(withModel('x', { provider, price: { input: 1, output: 2, ...price } }));
  t.match(priced({ input: 1e12 }), new RegExp(`^config: models\\.x\\.price\\.input: must be at most ${max} \\(USD per million tokens\\)`), 'the field and the maximum named');
  t.match(priced({ output: 1e20 }), /models\.x\.price\.output: must be at most/, 'not "at most 3 decimals" for a number too large to convert');
  t.match(priced({ tiers: { flex: { input: 1, output: max + 0.001 } } }), /models\.x\.price\.tiers\.flex\.output: must be at most/);
  t.match(priced({ longContext: { threshold: 1000, input: max + 1, output: 2 } }), /models\.x\.price\.longContext\.input: must be at most/);
  t.match(priced({ toolCalls: { web_search: MAX_TOOL_FEE_USD_PER_THOUSAND + 1 } }), new RegExp(`models\\.x\\.price\\.toolCalls\\.web_search: must be at most ${MAX_TOOL_FEE_USD_PER_THOUSAND} \\(USD per 1,000 calls\\)`));
  t.match(priced({ output: 300, inferenceGeo: { us: 20 } }, 'anthropic'), new RegExp(`models\\.x\\.price\\.inferenceGeo\\.us: takes a token's rate to 6000 USD per million tokens[^\\n]*${max}`), 'a multiplier taking a rate past the bound');
  t.equal(priced({ output: max, cacheWrite1h: max, toolCalls: { web_search: MAX_TOOL_FEE_USD_PER_THOUSAND } }), 'accepted', 'the maximum itself');

  // At the maximum, the largest call the gateway counts is charged exactly.
  const c = withModel('dearest', { price: { input: max, output: max, toolCalls: { web_search: MAX_TOOL_FEE_USD_PER_THOUSAND } } });
  const price = compileConfig(c, null).models.get('dearest')!.price;
  const output = MAX_OUTPUT_CAP;
  const input = MAX_CALL_TOKENS - output; // the largest body limits.maxRequestBytes allows, a token per byte
  t.equal(input, 1024 ** 3);
  const searches = 3_000_000;
  const usage = { ...emptyUsage(), input, output, toolCalls: { web_search: searches } };
  const exact = BigInt(input + output) * BigInt(max * 1000) + BigInt(searches) * BigInt(MAX_TOOL_FEE_USD_PER_THOUSAND * 1_000_000);
  const cost = costOf(usage, price).nano;
  t.ok(Number.isSafeInteger(cost), `${cost} nUSD is a safe integer`);
  t.equal(BigInt(cost), exact, 'and exactly the charge');
  const unpriced = costOf({ ...usage, serviceTier: 'flex', toolCalls: {} }, price).nano;
  t.equal(BigInt(unpriced), BigInt(input + output) * BigInt(price.maxRate), 'at the price\'s highest rate too');
  const rates = holdRates(price, NO_LEVERS);
  t.ok(Number.isSafeInteger(input * rates.input + output * rates.output), 'the largest hold is exact');
});

t.test('a timeout conflict names the field the file set, and the other\'s default', async (t) => {
  const limits = (l: Record<string, number>): string => refusal({ ...defaultConfig('http://127.0.0.1:9'), limits: l });
  t.equal(limits({ clientRequestTimeoutMs: 100 }), 'config: limits.clientRequestTimeoutMs: must be at least limits.clientHeadersTimeoutMs (20000, its default)');
  t.equal(limits({ clientHeadersTimeoutMs: 400_000 }), 'config: limits.clientHeadersTimeoutMs: must not exceed limits.clientRequestTimeoutMs (300000, its default)');
  t.equal(limits({ clientHeadersTimeoutMs: 5000, clientRequestTimeoutMs: 1000 }), 'config: limits.clientHeadersTimeoutMs: must not exceed limits.clientRequestTimeoutMs (1000)');
  t.equal(limits({ clientHeadersTimeoutMs: 100, clientRequestTimeoutMs: 100 }), 'accepted');
});

t.test('a catalogProvider entry left out keeps its default', async (t) => {
  const openaiOnly = { providers: { openai: DEFAULT_CONFIG.providers.openai } };
  const partial = compileConfig({ ...openaiOnly, catalogProvider: { anthropic: 'openai' } }, null);
  t.equal(partial.catalogProvider.openai.name, 'openai', 'the entry left out: the provider of its name');
  t.equal(partial.catalogProvider.anthropic.name, 'openai');
  const onDefaults = compileConfig({ catalogProvider: { anthropic: 'anthropic' } }, null);
  t.same([onDefaults.catalogProvider.openai.name, onDefaults.catalogProvider.anthropic.name], ['openai', 'anthropic'], 'with the built-in providers');
  const mine = { providers: { mine: DEFAULT_CONFIG.providers.openai, claude: DEFAULT_CONFIG.providers.anthropic } };
  const firstProvider = compileConfig({ ...mine, catalogProvider: { anthropic: 'claude' } }, null);
  t.same([firstProvider.catalogProvider.openai.name, firstProvider.catalogProvider.anthropic.name], ['mine', 'claude'], 'no provider of its name: the first one, as with no catalogProvider at all');
  t.match(refusal({ ...openaiOnly, catalogProvider: { openai: '' } }), /^config: catalogProvider\.openai: must be a non-empty string$/, 'a value given empty is still refused');
  t.match(refusal({ ...openaiOnly, catalogProvider: { anthropic: 'bedrock' } }), /^config: catalogProvider\.anthropic: names no provider/);
  t.match(refusal({ ...openaiOnly, catalogProvider: { azure: 'openai' } }), /^config: catalogProvider\.azure: unknown field$/);
  t.match(refusal({ ...openaiOnly, catalogProvider: 'openai' }), /^config: catalogProvider: must be an object$/);
});

t.test('the built-in catalogue\'s providers without a provider of their name are known, to be said at start-up', async (t) => {
  const count = (provider: string): number => Object.values(DEFAULT_CONFIG.models).filter((m) => m.provider === provider).length;
  const myoai = compileConfig({ providers: { myoai: DEFAULT_CONFIG.providers.openai } }, null);
  t.equal(myoai.models.size, 0, 'nothing of the built-in catalogue is served');
  t.same(myoai.builtInLeftOut, [{ provider: 'openai', models: count('openai') }, { provider: 'anthropic', models: count('anthropic') }]);
  t.same(compileConfig({ providers: { openai: DEFAULT_CONFIG.providers.openai } }, null).builtInLeftOut, [{ provider: 'anthropic', models: count('anthropic') }]);
  t.same(compileConfig({ providers: { myoai: DEFAULT_CONFIG.providers.openai }, builtInModels: false }, null).builtInLeftOut, [], 'none with builtInModels false');
  t.same(compileConfig(structuredClone(DEFAULT_CONFIG), null).builtInLeftOut, [], 'none on the defaults');
});

t.test('provider credentials: surrounding whitespace cut, characters no header carries found', async (t) => {
  const config = compileConfig(defaultConfig('http://127.0.0.1:9'), null);
  t.equal(credentialValue({ OPENAI_API_KEY: 'sk-abc\n' }, 'OPENAI_API_KEY'), 'sk-abc');
  t.equal(credentialValue({ OPENAI_API_KEY: '  sk-abc\r\n' }, 'OPENAI_API_KEY'), 'sk-abc');
  t.equal(credentialValue({}, 'OPENAI_API_KEY'), '');
  t.notOk(hasCredential(config.providers.get('openai')!, { OPENAI_API_KEY: '\n' }), 'whitespace alone is no credential');
  t.same(unsendableCredentials(config, { OPENAI_API_KEY: 'sk-abc\n', ANTHROPIC_API_KEY: 'sk-ant' }), [], 'a trailing newline is cut, not refused');
  t.same(unsendableCredentials(config, { OPENAI_API_KEY: 'sk-a\nbc', ANTHROPIC_API_KEY: 'sk-\u0000ant' }), ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY']);
  t.same(unsendableCredentials(config, { OPENAI_API_KEY: 'sk-\u20acx' }), ['OPENAI_API_KEY'], 'nor a character beyond Latin-1');
});

t.test('the file: a byte order mark is read past; a link to nothing at the default name is an error', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-config-file-'));
  const cwd = process.cwd();
  t.teardown(() => {
    process.chdir(cwd);
    rmSync(dir, { recursive: true, force: true });
  });
  const bom = join(dir, 'bom.json');
  writeFileSync(bom, `\uFEFF${JSON.stringify({ server: { port: 9123 } })}`);
  t.equal(loadConfig(bom).port, 9123, 'a leading UTF-8 BOM is ignored');
  const inner = join(dir, 'inner-bom.json');
  writeFileSync(inner, `{"server":\uFEFF{}}`);
  t.throws(() => loadConfig(inner), /is not valid JSON/, 'only at the start');

  process.chdir(dir);
  t.equal(loadConfig(undefined).file, null, 'no ./tollgate.config.json: the built-in defaults');
  symlinkSync('gone.json', join(dir, 'tollgate.config.json'));
  t.throws(() => loadConfig(undefined), { message: 'config: tollgate.config.json: cannot be read (ENOENT: a symbolic link to gone.json, which does not exist)' });
  writeFileSync(join(dir, 'gone.json'), JSON.stringify({ server: { port: 9124 } }));
  t.equal(loadConfig(undefined).port, 9124, 'once its target exists, it is read');
});

t.test('the highest rate multiplies the geography and the region, as a charge does', async (t) => {
  const c: any = defaultConfig('http://127.0.0.1:9');
  c.providers.regional = { baseUrl: 'http://127.0.0.1:9/v1', auth: 'x-api-key', apiKeyEnv: 'R', region: 'eu' };
  c.models.both = { provider: 'regional', endpoints: ['messages'], price: { input: 1, output: 10, inferenceGeo: { us: 1.1 }, regionalProcessing: 1.2 } };
  const price = compileConfig(c, null).models.get('both')!.price;
  // 10 USD per million tokens is 10,000 nUSD a token; × 1.1 × 1.2, one after the other.
  t.equal(price.maxRate, 13_200, 'both multipliers, not the larger alone (12,000)');
  const usage = { ...emptyUsage(), input: 100, output: 100, inferenceGeo: 'us' };
  const named = costOf(usage as any, price).nano;
  t.equal(named, Math.ceil(Math.ceil((100 * 1_000 + 100 * 10_000) * 1.1) * 1.2), 'a call in that geography through that region: both applied');
  t.ok(named <= 200 * price.maxRate, 'which the highest rate covers');
});
