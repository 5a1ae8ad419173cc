/**
 * The usage tap's reader of plain answers: usage, service tier, response id and fee-bearing tool
 * calls come from the answer's own top-level members, read as the bytes arrive however they are
 * split; what the answer repeats of the request (metadata, user, instructions, schemas, tools)
 * cannot be taken for them. Its limits are its own (deep, large answers are read); an answer it
 * cannot read, or one naming usage, the tier or output twice, is left to an estimate with the
 * reason `usage_malformed`.
 */
import t from 'tap';
import { FORMATS } from '../src/formats/index.js';
import { UsageTap } from '../src/meter/tap.js';

const USAGE = { input_tokens: 30, input_tokens_details: { cached_tokens: 10 }, output_tokens: 20, output_tokens_details: { reasoning_tokens: 5 } };
const PLANTED = { usage: { input_tokens: 1, output_tokens: 1 }, service_tier: 'flex', type: 'web_search_call', output: [{ type: 'web_search_call' }, { type: 'file_search_call' }] };

/** Feeds `body` to a plain tap in chunks of `size` bytes and ends it. */
function read(body: string | Buffer, size: number, format = FORMATS.responses): UsageTap {
  const tap = new UsageTap(format, false);
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  for (let at = 0; at < bytes.length; at += size) tap.write(bytes.subarray(at, at + size));
  tap.end();
  return tap;
}

const SIZES = [1, 3, 64, 1 << 20];

/** A Responses answer in OpenAI's member order, with what the request wrote repeated in it. */
function answer(extra: { output?: unknown[]; tier?: string | null; echo?: Record<string, unknown>; after?: string } = {}): string {
  const echo = extra.echo ?? {};
  return JSON.stringify({
    id: 'resp_1', object: 'response', status: 'completed', instructions: echo.instructions ?? null, model: 'm',
    output: extra.output ?? [{ type: 'message', id: 'msg_1', role: 'assistant', content: [{ type: 'output_text', text: 'hi', annotations: [] }] }],
    prompt_cache_key: echo.prompt_cache_key ?? null, ...(extra.tier === null ? {} : { service_tier: extra.tier ?? 'default' }),
    text: echo.text ?? { format: { type: 'text' } }, tools: echo.tools ?? [], usage: USAGE, user: echo.user ?? null, metadata: echo.metadata ?? {},
  }).slice(0, -1) + (extra.after ?? '') + '}';
}

t.test('the answer\'s own usage, tier and calls, whatever it repeats and however it is split', async (t) => {
  const echoes: Array<[string, Record<string, unknown>]> = [
    ['metadata', { metadata: { usage: JSON.stringify(PLANTED.usage), service_tier: 'flex', type: 'web_search_call' } }],
    ['user', { user: JSON.stringify(PLANTED).slice(1, -1) }],
    ['instructions', { instructions: `"usage":{"input_tokens":1},"service_tier":"flex"` }],
    ['prompt_cache_key', { prompt_cache_key: '{"type":"web_search_call"}' }],
    ['text.format', { text: { format: { type: 'json_schema', name: 's', schema: { ...PLANTED, properties: PLANTED } } } }],
    ['tools', { tools: [{ type: 'web_search_call' }, { type: 'function', name: 'usage', parameters: PLANTED }] }],
  ];
  const output = [{ type: 'web_search_call', id: 'ws_1', status: 'completed', action: { type: 'search', query: '"type":"web_search_call"' } }, { type: 'message', id: 'm', content: [{ type: 'web_search_call' }] }, { type: 'file_search_call', id: 'fs_1', results: [] }];
  for (const [name, echo] of echoes) {
    for (const size of SIZES) {
      const tap = read(answer({ echo, output }), size);
      t.same(tap.reading.problem, null, `${name}, chunks of ${size}: read`);
      t.match(tap.usage, { input: 30, cachedInput: 10, output: 20, reasoning: 5, serviceTier: 'default', toolCalls: { web_search: 1, file_search: 1 } }, `${name}, chunks of ${size}`);
      t.equal(tap.responseId, 'resp_1');
    }
  }
});

t.test('a reported tier, none, and an escaped one', async (t) => {
  t.equal(read(answer({ tier: 'priority' }), 5).usage!.serviceTier, 'priority');
  t.equal(read(answer({ tier: null, echo: { metadata: { service_tier: 'flex' } } }), 5).usage!.serviceTier, null, 'none reported: none, whatever metadata says');
  t.equal(read(answer({ tier: 'fle\u0078' }).replace('"service_tier":"flex"', '"service\\u005ftier":"\\u0066lex"'), 2).usage!.serviceTier, 'flex', 'escapes decoded');
  // Messages reports its tier inside usage; a top-level member of that name is not its tier.
  const messages = JSON.stringify({ id: 'msg_1', type: 'message', content: [{ type: 'text', text: '"service_tier":"priority"' }], usage: { input_tokens: 3, output_tokens: 4, service_tier: 'standard' }, service_tier: 'priority' });
  t.equal(read(messages, 7, FORMATS.messages).usage!.serviceTier, 'standard');
});

t.test('unreadable answers are estimated: usage_malformed or usage_absent', async (t) => {
  const cases: Array<[string, string, string]> = [
    ['usage given twice', answer({ after: ',"usage":{"input_tokens":1,"output_tokens":1}' }), 'usage_malformed'],
    ['the tier given twice', answer({ after: ',"service_tier":"flex"' }), 'usage_malformed'],
    ['output given twice', answer({ after: ',"output":[]' }), 'usage_malformed'],
    ['usage not an object', answer().replace(/"usage":\{[^}]*\{[^}]*\}[^}]*\{[^}]*\}\}/, '"usage":"7"'), 'usage_malformed'],
    ['usage null', answer().replace(/"usage":\{[^}]*\{[^}]*\}[^}]*\{[^}]*\}\}/, '"usage":null'), 'usage_absent'],
    ['no usage', answer().replace(/"usage":\{[^}]*\{[^}]*\}[^}]*\{[^}]*\}\},/, ''), 'usage_absent'],
    ['not JSON', '<html>Bad gateway</html>', 'usage_malformed'],
    ['cut short', answer().slice(0, -1), 'usage_malformed'],
    ['trailing bytes', answer() + 'x', 'usage_malformed'],
    ['a usage object past the reader\'s limit', answer().replace('"total_tokens"', `"pad":"${'x'.repeat(70_000)}","total_tokens"`).replace('"output_tokens_details"', `"pad":"${'x'.repeat(70_000)}","output_tokens_details"`), 'usage_malformed'],
  ];
  for (const [name, body, reason] of cases) {
    for (const size of [1, 1000, 1 << 20]) t.equal(read(body, size).reading.problem, reason, `${name}, chunks of ${size}`);
  }
});

t.test('answers deeper and larger than a request may be are read', async (t) => {
  const deep = `${'['.repeat(6000)}${']'.repeat(6000)}`;
  const tap = read(answer({ echo: { text: 'DEEP' } }).replace('"DEEP"', `{"format":{"type":"json_schema","name":"s","schema":{"deep":${deep}}}}`), 4096);
  t.equal(tap.reading.problem, null, 'a schema 6,000 deep echoed');
  t.equal(tap.usage!.input, 30);
  const large = answer({ output: [{ type: 'message', content: [{ type: 'output_text', text: 'x'.repeat(8_000_000) }] }, { type: 'web_search_call' }] });
  const big = read(large, 65536);
  t.equal(big.reading.problem, null, 'an 8 MB answer');
  t.match(big.usage, { input: 30, output: 20, toolCalls: { web_search: 1 } });
  t.equal(big.responseId, 'resp_1', 'and its id');
  t.equal(read(`{"metadata":${'['.repeat(9000)}${']'.repeat(9000)},"usage":{"input_tokens":1,"output_tokens":1}}`, 4096).reading.problem, 'usage_malformed', 'past the answer limit (8,192 deep): unreadable');
});
