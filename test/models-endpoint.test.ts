/**
 * GET /models answers with the catalogue of the provider `catalogProvider` names: the OpenAI-style
 * list for OpenAI-style clients, the Anthropic-style list for requests carrying
 * `anthropic-version` (cut down to what the key may call: models-listed-per-key.test.ts). The
 * provider sees its own credential, never the client's key; the call is neither billed nor listed.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import t from 'tap';
import { defaultConfig, PROVIDER_ENV, startGateway, usageOf } from './helpers/harness.js';

async function get(url: string, headers: Record<string, string>): Promise<{ status: number; headers: Headers; json: any }> {
  const res = await fetch(url, { headers });
  return { status: res.status, headers: res.headers, json: await res.json() };
}

t.test('OpenAI-style and Anthropic-style catalogues, with the provider credential, unbilled', async (t) => {
  const gw = await startGateway(t);
  const credit = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const token = await gw.createKey(['--mode', 'token', '--budget', '1000']);

  const openai = await get(`${gw.base}/v1/models`, { authorization: `Bearer ${credit.key}` });
  t.equal(openai.status, 200);
  t.match(openai.headers.get('content-type'), /^application\/json/);
  t.equal(openai.json.object, 'list');
  t.ok(openai.json.data.length > 0);
  t.ok(openai.json.data.every((m: any) => m.object === 'model' && typeof m.id === 'string'), 'OpenAI-shaped entries');
  t.ok(openai.json.data.some((m: any) => m.id === 'gpt-4o-mini'));
  let up = gw.mock.requests.at(-1)!;
  t.equal(up.method, 'GET');
  t.equal(up.path, '/v1/models');
  t.equal(up.headers.authorization, `Bearer ${PROVIDER_ENV.OPENAI_API_KEY}`, 'the openai provider\'s own credential');
  t.equal(up.headers['x-api-key'], undefined);
  t.notOk(JSON.stringify(up.headers).includes(credit.key), 'the client key never reaches the provider');

  const anthropic = await get(`${gw.base}/v1/models`, { 'x-api-key': credit.key, 'anthropic-version': '2023-06-01' });
  t.equal(anthropic.status, 200);
  t.equal(anthropic.json.object, undefined);
  t.type(anthropic.json.has_more, 'boolean', 'Anthropic-shaped list');
  t.ok(anthropic.json.data.every((m: any) => m.type === 'model' && typeof m.display_name === 'string'));
  up = gw.mock.requests.at(-1)!;
  t.equal(up.headers['x-api-key'], PROVIDER_ENV.ANTHROPIC_API_KEY, 'the anthropic provider\'s own credential');
  t.equal(up.headers.authorization, undefined);
  t.equal(up.headers['anthropic-version'], '2023-06-01', 'anthropic-version is passed on');
  t.notOk(JSON.stringify(up.headers).includes(credit.key));

  const onToken = await get(`${gw.base}/token/v1/models`, { authorization: `Bearer ${token.key}` });
  t.equal(onToken.status, 200, 'the token surface serves the catalogue too');
  t.equal(onToken.json.object, 'list');
  const wrong = await get(`${gw.base}/token/v1/models`, { authorization: `Bearer ${credit.key}` });
  t.equal(wrong.status, 401, 'a credit key on the token surface');
  t.equal(wrong.json.error.code, 'invalid_api_key');

  const cu = await usageOf(gw.base, credit.key);
  t.equal(cu.requests.length, 0, 'not listed');
  t.equal(cu.key.balanceNanoUsd, 1_000_000_000, 'not billed');
  const tu = await usageOf(gw.base, token.key);
  t.equal(tu.requests.length, 0);
  t.equal(tu.key.usedTokens, 0);
});

t.test('the official SDKs list models through the gateway', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const openai = new OpenAI({ apiKey: key, baseURL: `${gw.base}/v1`, maxRetries: 0 });
  const ids: string[] = [];
  for await (const m of openai.models.list()) ids.push(m.id);
  t.ok(ids.includes('gpt-4o-mini'), 'openai SDK');
  const anthropic = new Anthropic({ apiKey: key, baseURL: gw.base, maxRetries: 0 });
  const page = await anthropic.models.list();
  t.ok(page.data.some((m) => m.id === 'claude-sonnet-4-5'), 'anthropic SDK');
  t.ok(page.data.every((m) => m.type === 'model'));
  t.equal((await usageOf(gw.base, key)).requests.length, 0);
});

t.test('catalogProvider decides which provider answers', async (t) => {
  // OpenAI-style clients are sent to the anthropic provider here: it gets its x-api-key credential.
  const gw = await startGateway(t, {
    config: (url) => ({ ...defaultConfig(url), catalogProvider: { openai: 'anthropic', anthropic: 'anthropic' } }),
  });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const r = await get(`${gw.base}/v1/models`, { authorization: `Bearer ${key}` });
  t.equal(r.status, 200);
  const up = gw.mock.requests.at(-1)!;
  t.equal(up.path, '/v1/models?limit=1000', 'for its largest page');
  t.equal(up.headers['x-api-key'], PROVIDER_ENV.ANTHROPIC_API_KEY, 'the configured catalogue provider was asked');
  t.equal(up.headers.authorization, undefined);
  t.type(r.json.has_more, 'boolean', 'and its catalogue returned in its own format');
});
