/**
 * GET /models lists only what the key may call: the catalogue provider's own entries for the
 * catalogue's models that are enabled (in the file and by the run-time switch) and on the key's
 * allowlist, in the provider's list format — never the rest of the shared provider account
 * (other customers' fine-tunes, the operator's organisation in `owned_by`, models the gateway
 * does not serve). Through both official SDKs, on both surfaces.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import t from 'tap';
import { PROVIDER_ENV, readReply, startGateway, testModels, usageOf, type Harness } from './helpers/harness.js';

const CATALOGUE = testModels() as Record<string, { enabled?: boolean }>;

/** The provider's own list, asked directly (what the gateway must cut down). */
async function providerList(gw: Harness, anthropic: boolean): Promise<any[]> {
  const headers: Record<string, string> = anthropic
    ? { 'x-api-key': PROVIDER_ENV.ANTHROPIC_API_KEY, 'anthropic-version': '2023-06-01' }
    : { authorization: `Bearer ${PROVIDER_ENV.OPENAI_API_KEY}` };
  const res = await fetch(`${gw.mock.url}/v1/models${anthropic ? '?limit=1000' : ''}`, { headers });
  return ((await res.json()) as { data: any[] }).data;
}

/** What a key may be listed, from the provider's list: in the catalogue, enabled, allowed. */
function expected(list: any[], allow: string[] | null, off: string[] = []): string[] {
  return list.map((m) => m.id as string).filter((id) => {
    const model = CATALOGUE[id];
    return model !== undefined && model.enabled !== false && !off.includes(id) && (allow === null || allow.includes(id));
  });
}

async function openaiIds(base: string, key: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const m of new OpenAI({ apiKey: key, baseURL: `${base}/v1`, maxRetries: 0 }).models.list()) ids.push(m.id);
  return ids;
}

async function anthropicIds(base: string, key: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const m of new Anthropic({ apiKey: key, baseURL: base, maxRetries: 0 }).models.list()) ids.push(m.id);
  return ids;
}

t.test('both SDKs on both surfaces: the catalogue models the key may call, nothing else', async (t) => {
  const gw = await startGateway(t);
  const openaiRaw = await providerList(gw, false);
  const anthropicRaw = await providerList(gw, true);
  // The provider's lists hold what must stay hidden, so that hiding it is what is tested.
  t.ok(openaiRaw.some((m) => m.id === 'ft:gpt-4o-mini:org-xyz::abc' && m.owned_by === 'org-xyz'), 'the provider lists a fine-tune of org-xyz');
  t.ok(openaiRaw.some((m) => CATALOGUE[m.id] === undefined && !m.id.startsWith('ft:')), 'and a model outside the catalogue');
  t.ok(anthropicRaw.findIndex((m) => m.id === 'claude-haiku-4-5') >= 20, 'a catalogue model past Anthropic\'s default page of 20');

  const credit = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const allowlisted = await gw.createKey(['--mode', 'token', '--budget', '1000', '--models', 'gpt-4o,claude-haiku-4-5']);
  const allow = ['gpt-4o', 'claude-haiku-4-5'];

  const everything = await openaiIds(gw.base, credit.key);
  t.same(everything, expected(openaiRaw, null), 'openai SDK, /v1, no allowlist: every enabled catalogue model the provider lists');
  t.ok(everything.includes('gpt-4o-mini') && everything.includes('claude-sonnet-4-5'));
  t.notOk(everything.includes('switched-off'), 'a model off in the file is not listed');
  t.same(await anthropicIds(gw.base, credit.key), expected(anthropicRaw, null), 'anthropic SDK, /v1, no allowlist');
  t.ok((await anthropicIds(gw.base, credit.key)).includes('claude-haiku-4-5'), 'the model on the provider\'s second page is not lost');

  const tokenBase = `${gw.base}/token`;
  const onToken: string[] = [];
  for await (const m of new OpenAI({ apiKey: allowlisted.key, baseURL: `${tokenBase}/v1`, maxRetries: 0 }).models.list()) onToken.push(m.id);
  t.same(onToken, expected(openaiRaw, allow), 'openai SDK, /token/v1, allowlist: only the allowlisted models');
  t.same(onToken.sort(), [...allow].sort());
  t.same(await anthropicIds(tokenBase, allowlisted.key), ['claude-haiku-4-5'], 'anthropic SDK, /token, allowlist');

  t.equal((await usageOf(gw.base, credit.key)).requests.length, 0, 'not listed');
  t.equal((await usageOf(gw.base, credit.key)).key.balanceNanoUsd, 1_000_000_000, 'not billed');
  t.equal((await usageOf(gw.base, allowlisted.key)).key.usedTokens, 0);
});

t.test('a model switched off at run time leaves the list, and comes back', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const openaiRaw = await providerList(gw, false);
  const anthropicRaw = await providerList(gw, true);
  t.ok((await openaiIds(gw.base, key)).includes('gpt-4o'));

  t.equal((await gw.cli(['models', 'disable', 'gpt-4o'])).code, 0);
  t.equal((await gw.cli(['models', 'disable', 'claude-sonnet-4-5'])).code, 0);
  t.same(await openaiIds(gw.base, key), expected(openaiRaw, null, ['gpt-4o', 'claude-sonnet-4-5']), 'openai SDK: both switched-off models gone');
  const page = await new Anthropic({ apiKey: key, baseURL: gw.base, maxRetries: 0 }).models.list();
  t.same(page.data.map((m) => m.id), expected(anthropicRaw, null, ['claude-sonnet-4-5']), 'anthropic SDK: the switched-off model gone');
  t.equal(page.data[0]!.id, 'claude-haiku-4-5');

  t.equal((await gw.cli(['models', 'enable', 'gpt-4o'])).code, 0);
  t.ok((await openaiIds(gw.base, key)).includes('gpt-4o'), 'switched on again: listed again');
  t.notOk((await openaiIds(gw.base, key)).includes('claude-sonnet-4-5'));
});

t.test('the answer: the provider format, its length, first_id/last_id of what is listed, nothing of the account', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1', '--models', 'gpt-4o-mini,claude-sonnet-4-5,claude-haiku-4-5']);

  // The client's own query is not forwarded: the list is answered whole, as one page.
  const o = await readReply(await fetch(`${gw.base}/v1/models?limit=1&after_id=gpt-4o`, { headers: { authorization: `Bearer ${key}` } }));
  t.equal(o.status, 200);
  t.equal(gw.mock.requests.at(-1)!.path, '/v1/models', 'OpenAI\'s list is asked for as it is');
  t.equal(o.headers.get('content-length'), String(Buffer.byteLength(o.text)), 'content-length is the filtered body\'s');
  t.match(o.headers.get('content-type'), /^application\/json/);
  t.same(Object.keys(o.json), ['object', 'data']);
  t.equal(o.json.object, 'list');
  t.same(o.json.data.map((m: any) => m.id), ['gpt-4o-mini', 'claude-sonnet-4-5', 'claude-haiku-4-5']);
  t.match(o.json.data[0], { id: 'gpt-4o-mini', object: 'model', created: Number, owned_by: 'system' }, 'the provider\'s own entry');
  t.notOk(o.text.includes('org-xyz'), 'no organisation of the account');
  t.notOk(o.text.includes('ft:'), 'no fine-tune');

  const a = await readReply(await fetch(`${gw.base}/v1/models?limit=1`, { headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01' } }));
  t.equal(a.status, 200);
  t.equal(gw.mock.requests.at(-1)!.path, '/v1/models?limit=1000', 'Anthropic\'s list is asked for in its largest page');
  t.equal(a.headers.get('content-length'), String(Buffer.byteLength(a.text)));
  t.same(Object.keys(a.json), ['data', 'has_more', 'first_id', 'last_id']);
  t.same(a.json.data.map((m: any) => m.id), ['claude-sonnet-4-5', 'claude-haiku-4-5']);
  t.equal(a.json.has_more, false);
  t.equal(a.json.first_id, 'claude-sonnet-4-5', 'first_id: the first entry listed');
  t.equal(a.json.last_id, 'claude-haiku-4-5', 'last_id: the last entry listed, not the provider\'s');
  t.match(a.json.data[1], { type: 'model', id: 'claude-haiku-4-5', display_name: 'Claude Haiku 4.5', created_at: String });
  t.notOk(a.text.includes('claude-legacy'), 'nothing outside the catalogue');

  const none = await gw.createKey(['--mode', 'credit', '--balance', '1', '--models', 'chat-only']);
  const empty = await readReply(await fetch(`${gw.base}/v1/models`, { headers: { 'x-api-key': none.key, 'anthropic-version': '2023-06-01' } }));
  t.same(empty.json, { data: [], has_more: false, first_id: null, last_id: null }, 'a key whose models the provider does not list: an empty list');
});

t.test('a provider error status passes through unchanged', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  gw.mock.refuseCredential(PROVIDER_ENV.OPENAI_API_KEY, 403);
  const r = await readReply(await fetch(`${gw.base}/v1/models`, { headers: { authorization: `Bearer ${key}` } }));
  t.equal(r.status, 403);
  t.same(r.json, { error: { message: 'mock error', type: 'invalid_request_error', param: null, code: null } }, 'the provider\'s body');
});
