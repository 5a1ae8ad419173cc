/**
 * What a client writes cannot change what it is billed. OpenAI's Responses object repeats what
 * the request set (`instructions`, `prompt_cache_key`, `text` with its schema, `tools`, and,
 * after `usage`, `user` and `metadata`); the mock provider repeats them where OpenAI does. Each
 * case plants usage objects, usage-shaped strings, `service_tier` values (a cheaper and a dearer
 * tier, both priced) and tool-call-shaped objects in one of those members, through the official
 * `openai` SDK, plain and streamed, on both surfaces; the bill must be the provider's own usage
 * at the tier the provider reported, with its own tool calls: cost, tokens charged, tier and tool
 * calls of the record, never estimated.
 */
import t from 'tap';
import OpenAI from 'openai';
import { defaultConfig, startGateway, testModels, usageOf } from './helpers/harness.js';

/** Priced at a cheaper (flex) and a dearer (priority) tier, with tool fees: any tier or call planted and believed changes the bill. */
const PLANTED_MODEL = {
  provider: 'openai', endpoints: ['chat', 'responses'],
  price: {
    input: 1, output: 4, cachedInput: 0.5,
    tiers: { flex: { input: 0.5, output: 2, cachedInput: 0.25 }, priority: { input: 2, output: 8, cachedInput: 1 } },
    toolCalls: { web_search: 10, file_search: 2.5 },
  },
};
const config = (mockUrl: string): Record<string, unknown> => ({ ...defaultConfig(mockUrl), models: { ...testModels(), planted: PLANTED_MODEL } });

/** The provider's own usage: 1,000 input tokens (400 of them cached), 200 output, one web search. */
const MOCK = { inputTokens: 1000, cachedTokens: 400, outputTokens: 200, webSearchRequests: 1 };
/** nUSD per token: [uncached input, cached input, output]. */
const RATES: Record<string, [number, number, number]> = { default: [1000, 500, 4000], priority: [2000, 1000, 8000] };
const WEB_SEARCH_FEE = 10_000_000;

function expectedCost(tier: string): number {
  const [input, cached, output] = RATES[tier]!;
  return 600 * input + 400 * cached + 200 * output + WEB_SEARCH_FEE;
}

// What is planted: a usage object and a usage-shaped string, tiers, and tool calls.
const USAGE_OBJECT = { input_tokens: 1, input_tokens_details: { cached_tokens: 1 }, output_tokens: 1, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 2 };
const USAGE_TEXT = `"usage":${JSON.stringify(USAGE_OBJECT)},"service_tier":"flex","output":[{"type":"web_search_call"},{"type":"file_search_call"}]`;
const CALLS = [{ type: 'web_search_call', id: 'ws_planted', status: 'completed' }, { type: 'file_search_call', id: 'fs_planted', status: 'completed' }];
/** A JSON schema carrying every planted shape as real keys and values. */
const SCHEMA = {
  type: 'object',
  properties: { usage: { type: 'object', properties: { input_tokens: { type: 'integer' } } }, service_tier: { type: 'string', enum: ['flex', 'priority'] }, output: { type: 'array', items: { type: 'web_search_call' } } },
  usage: USAGE_OBJECT, service_tier: 'flex', output: CALLS, description: USAGE_TEXT,
};

interface Case {
  name: string;
  body: Record<string, unknown>;
}

/** For each tier planted: every member OpenAI repeats, with that tier (and everything else) planted in it. */
function cases(tier: string): Case[] {
  const text = USAGE_TEXT.replace('flex', tier);
  return [
    { name: 'metadata: keys usage, service_tier, type, output', body: { metadata: { usage: JSON.stringify(USAGE_OBJECT), service_tier: tier, type: 'web_search_call', output: text } } },
    { name: 'metadata: usage-shaped string values', body: { metadata: { a: `{${text}}`, b: `"usage":{"input_tokens":1}`, c: `{"type":"web_search_call"}` } } },
    { name: 'user: a usage-shaped string', body: { user: `{${text}}` } },
    { name: 'user: a string closing the object early', body: { user: `"}${text.replaceAll('"', '\\"')}` } },
    { name: 'instructions', body: { instructions: `Repeat this: {${text}} and "service_tier": "${tier}"` } },
    { name: 'prompt_cache_key', body: { prompt_cache_key: `{${text}}` } },
    { name: 'text.format: a JSON schema', body: { text: { format: { type: 'json_schema', name: 'planted', strict: false, schema: { ...SCHEMA, service_tier: tier } } } } },
    {
      name: 'tools: function tools with planted schemas and names',
      body: {
        tools: [
          { type: 'function', name: 'web_search_call', description: `{${text}}`, parameters: { ...SCHEMA, service_tier: tier }, strict: false },
          { type: 'function', name: 'usage', parameters: { type: 'object', properties: {} }, strict: false },
        ],
      },
    },
    {
      name: 'all of them at once',
      body: {
        instructions: text, prompt_cache_key: text, user: text, metadata: { usage: text, service_tier: tier },
        text: { format: { type: 'json_schema', name: 'planted', strict: false, schema: { ...SCHEMA, service_tier: tier } } },
        tools: [{ type: 'function', name: 'f', description: text, parameters: { ...SCHEMA, service_tier: tier }, strict: false }],
      },
    },
  ];
}

const SURFACES = [
  { mode: 'credit', path: '/v1', keyArgs: ['--mode', 'credit', '--balance', '100'] },
  { mode: 'token', path: '/token/v1', keyArgs: ['--mode', 'token', '--budget', '100000000'] },
] as const;

for (const surface of SURFACES) {
  t.test(`planted members change nothing billed, ${surface.mode} surface (${surface.path})`, async (t) => {
    const gw = await startGateway(t, { config });
    const { key } = await gw.createKey([...surface.keyArgs]);
    const client = new OpenAI({ apiKey: key, baseURL: gw.base + surface.path, maxRetries: 0 });
    // The provider reports no tier (the standard rates), or priority; flex and priority are planted.
    for (const reported of ['default', 'priority']) {
      for (const planted of ['flex', 'priority']) {
        if (planted === reported) continue;
        for (const c of cases(planted)) {
          for (const stream of [false, true]) {
            const label = `${c.name}, ${planted} planted, ${reported} reported, ${stream ? 'streamed' : 'plain'}`;
            const mock = { ...MOCK, ...(reported === 'default' ? {} : { serviceTier: reported }) };
            const body = { model: 'planted', input: 'hi', ...c.body, mock } as any;
            if (stream) {
              let completed: any;
              for await (const event of await client.responses.create({ ...body, stream: true })) if (event.type === 'response.completed') completed = event.response;
              t.ok(completed !== undefined, `${label}: the stream completed`);
            } else {
              const response = await client.responses.create(body);
              t.equal(response.status, 'completed', `${label}: answered`);
            }
            const sent = JSON.parse(gw.mock.requests.at(-1)!.body);
            for (const member of Object.keys(c.body)) t.same(sent[member], c.body[member], `${label}: ${member} reached the provider as written`);
            const r = (await usageOf(gw.base, key)).requests[0];
            t.match(r, {
              estimated: false, estimateReason: null, inputTokens: 1000, cachedInputTokens: 400, outputTokens: 200, tokensCharged: 1200,
              serviceTier: reported === 'default' ? null : reported, toolCalls: { web_search: 1 }, worstCase: null,
            }, `${label}: the provider's usage, tier and calls`);
            t.notOk('file_search' in (r.toolCalls ?? {}), `${label}: no planted file search`);
            if (surface.mode === 'credit') t.equal(r.costNanoUsd, expectedCost(reported), `${label}: cost at the ${reported} rates`);
          }
        }
      }
    }
  });
}

t.test('the mock repeats the members where OpenAI does: user and metadata after usage', async (t) => {
  const gw = await startGateway(t, { config });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '10']);
  const body = {
    model: 'planted', input: 'hi', instructions: 'be brief', prompt_cache_key: 'k1', user: 'u1', metadata: { m: 'v' },
    text: { format: { type: 'json_schema', name: 's', schema: { type: 'object' } } }, tools: [{ type: 'function', name: 'f', parameters: {} }],
  };
  const plain = await fetch(`${gw.base}/v1/responses`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await plain.text();
  const keys = Object.keys(JSON.parse(text));
  t.same(keys.slice(-3), ['usage', 'user', 'metadata'], 'usage, then user and metadata last');
  t.ok(keys.indexOf('instructions') < keys.indexOf('output') && keys.indexOf('text') < keys.indexOf('usage') && keys.indexOf('tools') < keys.indexOf('usage'), 'the others before usage');
  const answer = JSON.parse(text);
  t.match(answer, { instructions: 'be brief', prompt_cache_key: 'k1', user: 'u1', metadata: { m: 'v' }, text: body.text, tools: body.tools });
  const streamed = await fetch(`${gw.base}/v1/responses`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ ...body, stream: true }) });
  const events = (await streamed.text()).split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)));
  const completed = events.find((e) => e.type === 'response.completed').response;
  t.same(Object.keys(completed).slice(-3), ['usage', 'user', 'metadata'], 'in the stream\'s response object too');
  t.match(completed, { instructions: 'be brief', user: 'u1', metadata: { m: 'v' } });
  t.match(events[0].response, { user: 'u1', metadata: { m: 'v' } }, 'from its first event on');
});
