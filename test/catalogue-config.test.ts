/**
 * The catalogue a gateway serves: the built-in one, added to by the config file's `models` (an
 * entry of the same id replaced), or only the file's with `"builtInModels": false`; the start-up
 * line says how many models it serves from which providers. An alias is served as its entry:
 * checked, priced and billed at the entry's price, forwarded with the id the client sent and
 * recorded under it; allowlists and `models enable|disable` name the entry and cover its aliases,
 * GET /models included. Through the official SDKs where they have the call.
 */
import OpenAI from 'openai';
import t from 'tap';
import { ANTHROPIC_MODELS } from '../src/config/catalogue/anthropic.js';
import { OPENAI_MODELS } from '../src/config/catalogue/openai.js';
import { defaultConfig, post, startGateway, usageOf } from './helpers/harness.js';

/** The start-up line, from the server's standard output. */
function catalogueLine(out: string): string | undefined {
  return out.split('\n').find((line) => line.startsWith('tollgate serves '));
}

/** The built-in entries, by provider, counted from the catalogue's data. */
const BUILT_IN = { openai: Object.keys(OPENAI_MODELS).length, anthropic: Object.keys(ANTHROPIC_MODELS).length };

t.test('the file adds to the built-in catalogue: a new id is added, the same id replaced; the start-up line counts them', async (t) => {
  t.ok(BUILT_IN.openai > 20 && BUILT_IN.anthropic > 15, `built in: ${BUILT_IN.openai} OpenAI, ${BUILT_IN.anthropic} Anthropic entries`);
  const gw = await startGateway(t, {
    config: (mockUrl) => {
      const { builtInModels: _, models: __, ...c } = defaultConfig(mockUrl);
      return {
        ...c,
        models: {
          // New: one more OpenAI entry.
          'house-model': { provider: 'openai', endpoints: ['chat'], price: { input: 1, output: 2 } },
          // Replaced: the built-in gpt-5 at a price of the file's own (3 / 7), with no aliases.
          'gpt-5': { provider: 'openai', endpoints: ['chat'], price: { input: 3, output: 7 } },
        },
      };
    },
  });
  t.equal(catalogueLine(gw.serverOut()), `tollgate serves ${BUILT_IN.openai + BUILT_IN.anthropic + 1} models: ${BUILT_IN.openai + 1} from openai, ${BUILT_IN.anthropic} from anthropic`);
  const listed = JSON.parse((await gw.cli(['models', 'list', '--json'])).stdout) as any[];
  t.ok(listed.some((m) => m.id === 'house-model'), 'the file\'s entry is listed');
  t.ok(listed.some((m) => m.id === 'claude-opus-5-5') && listed.some((m) => m.id === 'gpt-6.1-sol'), 'built-in entries are listed beside it');
  const gpt5 = listed.find((m) => m.id === 'gpt-5');
  t.match(gpt5, { price: { input: 3, output: 7 } }, 'the same id is the file\'s entry');
  t.same(gpt5.aliases ?? [], [], 'wholly replaced: the built-in entry\'s aliases are gone with it');

  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '10']);
  // 1,000 in × $3 + 200 out × $7 per million = 3,000,000 + 1,400,000 nUSD.
  const res = await post(`${gw.base}/v1/chat/completions`, key, {
    model: 'gpt-5', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 200,
    mock: { usageJson: '{"prompt_tokens":1000,"completion_tokens":200,"total_tokens":1200}' },
  });
  t.equal(res.status, 200);
  t.equal((await usageOf(gw.base, key)).requests[0].costNanoUsd, 4_400_000, 'billed at the file\'s price');
  const snapshot = await post(`${gw.base}/v1/chat/completions`, key, { model: 'gpt-5-2025-08-07', messages: [{ role: 'user', content: 'hi' }] });
  t.equal(snapshot.status, 403, 'the replaced entry\'s former alias is no longer served');
  t.equal(snapshot.json?.error?.code, 'model_not_available');
});

t.test('"builtInModels": false serves the file\'s models only', async (t) => {
  const gw = await startGateway(t, {
    config: (mockUrl) => ({ ...defaultConfig(mockUrl), models: { 'only-one': { provider: 'anthropic', endpoints: ['messages'], price: { input: 1, output: 5 } } } }),
  });
  t.equal(catalogueLine(gw.serverOut()), 'tollgate serves 1 model: 1 from anthropic');
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '10']);
  const res = await post(`${gw.base}/v1/chat/completions`, key, { model: 'gpt-6.1-sol', messages: [{ role: 'user', content: 'hi' }] });
  t.equal(res.status, 403, 'a built-in model is not served');
  t.equal(res.json?.error?.code, 'model_not_available');
  t.equal(gw.mock.requests.filter((r) => r.path.includes('/chat/completions')).length, 0, 'nothing forwarded');
});

t.test('an alias: priced and billed as its entry, forwarded and recorded under the id sent; allowlists and switches name the entry and cover it', async (t) => {
  const gw = await startGateway(t, {
    admin: true,
    config: (mockUrl) => ({
      ...defaultConfig(mockUrl),
      models: {
        // The provider's list (the mock's) names `gpt-4.1`: here the alias of an entry.
        'gpt-4.1-current': { provider: 'openai', endpoints: ['chat', 'responses'], aliases: ['gpt-4.1', 'gpt-4.1-2025-04-14'], price: { input: 2, output: 8 } },
        'gpt-4o': { provider: 'openai', endpoints: ['chat', 'responses'], price: { input: 2.5, output: 10 } },
      },
    }),
  });
  const allowed = await gw.createKey(['--mode', 'credit', '--balance', '10', '--models', 'gpt-4.1-current']);
  const byAlias = await gw.createKey(['--mode', 'credit', '--balance', '10', '--models', 'gpt-4.1-2025-04-14']);
  const other = await gw.createKey(['--mode', 'credit', '--balance', '10', '--models', 'gpt-4o']);
  const client = (key: string): OpenAI => new OpenAI({ apiKey: key, baseURL: `${gw.base}/v1`, maxRetries: 0 });

  // 1,000 in × $2 + 300 out × $8 per million = 2,000,000 + 2,400,000 nUSD.
  const usage = '{"prompt_tokens":1000,"completion_tokens":300,"total_tokens":1300}';
  const before = gw.mock.requests.length;
  const answer = await client(allowed.key).chat.completions.create({
    model: 'gpt-4.1-2025-04-14', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 300,
    // @ts-expect-error the mock provider's switches ride in the body
    mock: { usageJson: usage },
  });
  t.ok(answer.choices.length > 0, 'answered');
  const sent = gw.mock.requests.slice(before).find((r) => r.path.endsWith('/chat/completions'));
  t.equal(JSON.parse(sent!.body).model, 'gpt-4.1-2025-04-14', 'forwarded with the id the client sent');
  const record = (await usageOf(gw.base, allowed.key)).requests[0];
  t.match(record, { model: 'gpt-4.1-2025-04-14', costNanoUsd: 4_400_000 }, 'recorded under it, billed at the entry\'s price');

  // An allowlist written with an alias names its entry: the other alias and the entry's id pass.
  const viaEntry = await post(`${gw.base}/v1/chat/completions`, byAlias.key, { model: 'gpt-4.1-current', messages: [{ role: 'user', content: 'hi' }] });
  t.equal(viaEntry.status, 200, 'an allowlist naming an alias covers the entry');
  const shown = await gw.cli(['keys', 'show', byAlias.id, '--json']);
  t.match(JSON.parse(shown.stdout), { models: ['gpt-4.1-current'] }, 'and is kept as the entry\'s id');
  const refused = await post(`${gw.base}/v1/chat/completions`, other.key, { model: 'gpt-4.1', messages: [{ role: 'user', content: 'hi' }] });
  t.equal(refused.status, 403, 'a key not allowed the entry is not allowed its alias');
  t.equal(refused.json?.error?.code, 'model_not_allowed');

  // GET /models: the provider lists the alias; a key allowed the entry sees it.
  const listed = async (key: string): Promise<string[]> => {
    const ids: string[] = [];
    for await (const m of client(key).models.list()) ids.push(m.id);
    return ids;
  };
  t.ok((await listed(allowed.key)).includes('gpt-4.1'), 'GET /models lists the alias to a key allowed its entry');
  t.notOk((await listed(other.key)).includes('gpt-4.1'), 'and not to a key that is not');

  // Switched off by an alias: the entry and all its names are off.
  const off = await gw.cli(['models', 'disable', 'gpt-4.1']);
  t.equal(off.code, 0, off.stderr);
  t.match(off.stdout, /gpt-4\.1-current \(of which gpt-4\.1 is an alias\) is now disabled/);
  for (const id of ['gpt-4.1-current', 'gpt-4.1', 'gpt-4.1-2025-04-14']) {
    const res = await post(`${gw.base}/v1/chat/completions`, allowed.key, { model: id, messages: [{ role: 'user', content: 'hi' }] });
    t.equal(res.json?.error?.code, 'model_not_available', `${id}: off`);
  }
  t.notOk((await listed(allowed.key)).includes('gpt-4.1'), 'GET /models no longer lists the alias');
  t.equal((await gw.cli(['models', 'enable', 'gpt-4.1-current'])).code, 0);
  const on = await post(`${gw.base}/v1/chat/completions`, allowed.key, { model: 'gpt-4.1', messages: [{ role: 'user', content: 'hi' }] });
  t.equal(on.status, 200, 'switched on by the entry\'s id: the alias is served again');
});
