/**
 * Every key shares the gateway's provider account, so a request referring to an object stored on
 * that account (a file, vector store, container, skill, conversation, stored prompt or stored
 * item), or asking for a background response, is refused before anything is forwarded: 400
 * `unsupported_option`, type `invalid_request_error`, the message naming the member by its JSON
 * path and `param` null (the envelope of every error the gateway raises); nothing forwarded,
 * held, billed or listed. Through the official SDKs where
 * they send it (`openai` responses.create with background, conversation, prompt, input items and
 * tools, chat.completions.create with a file part; `@anthropic-ai/sdk` messages.create with file
 * sources, container uploads, a container, a thread and diagnostics against an earlier message),
 * raw HTTP for what an SDK cannot write (escaped key names, a member given twice, a key given twice
 * inside a member, where JSON.parse and another parser would read different copies), on both
 * surfaces.
 *
 * And what is not a reference passes unchanged: output items sent back in full (ids, citations
 * and all, as Codex CLI sends them with `store: false`), a function's schema with a `file_id`
 * property, `metadata` holding one, a user's words naming one, `background: false`.
 */
import t from 'tap';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { post, rejectionOf, startGateway, usageOf, type Harness } from './helpers/harness.js';

const GPT = 'gpt-4o-mini';
const CLAUDE = 'claude-haiku-4-5';

const SURFACES = [
  { mode: 'credit', openai: '/v1', anthropic: '', keyArgs: ['--mode', 'credit', '--balance', '5'] },
  { mode: 'token', openai: '/token/v1', anthropic: '/token', keyArgs: ['--mode', 'token', '--budget', '1000000'] },
] as const;

/** What a key's usage shows: its records, its balance or budget used, and what it holds. */
async function ledgerOf(gw: Harness, key: string): Promise<unknown> {
  const u = await usageOf(gw.base, key);
  return { records: u.requests.length, funds: u.key.balanceNanoUsd ?? u.key.usedTokens, held: u.key.heldNanoUsd ?? u.key.heldTokens };
}

/** The error body an SDK's APIError carries (the gateway's envelope: { error: {…} }). */
function errorOf(err: any): any {
  return err?.error?.error ?? err?.error;
}

type Asserts = Pick<typeof t, 'equal' | 'match' | 'same'>;

function assertRefused(t: Asserts, label: string, status: number | undefined, error: any, path: string): void {
  t.equal(status, 400, `${label}: 400`);
  t.match(error, { code: 'unsupported_option', type: 'invalid_request_error' }, `${label}: unsupported_option`);
  t.equal(error?.param, null, `${label}: param null`);
  t.match(error?.message, path, `${label}: the message names ${path}`);
}

/** A skill given whole in the request (not a reference). */
const INLINE_SKILL = { type: 'inline', name: 'csv', description: 'reads CSV files', source: { type: 'base64', media_type: 'application/zip', data: 'UEsFBgAAAAAAAAAAAAAAAAAAAAAAAA==' } };

// OpenAI Responses: each reference and where it is named.
const RESPONSES_REFUSED: Array<{ name: string; body: Record<string, unknown>; path: string }> = [
  { name: 'background: true', body: { input: 'hi', background: true }, path: 'background' },
  { name: 'conversation by id', body: { input: 'hi', conversation: 'conv_0123456789' }, path: 'conversation' },
  { name: 'conversation as an object', body: { input: 'hi', conversation: { id: 'conv_0123456789' } }, path: 'conversation' },
  { name: 'a stored prompt', body: { prompt: { id: 'pmpt_0123456789', version: '2', variables: { city: 'Paris' } } }, path: 'prompt.id' },
  {
    name: 'an input_file part by file id',
    body: { input: [{ role: 'user', content: [{ type: 'input_text', text: 'summarise' }, { type: 'input_file', file_id: 'file-0123456789' }] }] },
    path: 'input[0].content[1].file_id',
  },
  {
    name: 'an input_image part by file id, after a clean item',
    body: { input: [{ role: 'user', content: 'look' }, { type: 'message', role: 'user', content: [{ type: 'input_image', file_id: 'file-0123456789', detail: 'auto' }] }] },
    path: 'input[1].content[0].file_id',
  },
  {
    name: 'an item_reference',
    body: { input: [{ role: 'user', content: 'again' }, { type: 'item_reference', id: 'msg_0123456789' }] },
    path: 'input[1].id',
  },
  { name: 'a bare {id} item', body: { input: [{ id: 'msg_0123456789' }, { role: 'user', content: 'and?' }] }, path: 'input[0].id' },
  { name: 'a {type, id} item', body: { input: [{ type: 'message', id: 'msg_0123456789' }] }, path: 'input[0].id' },
  { name: 'an id item naming neither its type nor its role', body: { input: [{ role: 'user', content: 'hi' }, { id: 'msg_0123456789', status: 'completed' }] }, path: 'input[1].id' },
  {
    name: 'a function call output with an image by file id',
    body: {
      input: [
        { type: 'function_call', call_id: 'call_1', name: 'shot', arguments: '{}' },
        { type: 'function_call_output', call_id: 'call_1', output: [{ type: 'input_image', file_id: 'file-0123456789' }] },
      ],
    },
    path: 'input[1].output[0].file_id',
  },
  {
    name: 'a computer call output by file id',
    body: { input: [{ type: 'computer_call_output', call_id: 'call_2', output: { type: 'computer_screenshot', file_id: 'file-0123456789' } }] },
    path: 'input[0].output.file_id',
  },
  { name: 'file_search over vector stores', body: { input: 'find it', tools: [{ type: 'file_search', vector_store_ids: ['vs_0123456789'] }] }, path: 'tools[0].vector_store_ids' },
  {
    name: 'code_interpreter in a container by id',
    body: { input: 'run it', tools: [{ type: 'function', name: 'f', parameters: { type: 'object', properties: {} } }, { type: 'code_interpreter', container: 'cntr_0123456789' }] },
    path: 'tools[1].container',
  },
  {
    name: 'code_interpreter with files',
    body: { input: 'run it', tools: [{ type: 'code_interpreter', container: { type: 'auto', file_ids: ['file-0123456789'] } }] },
    path: 'tools[0].container.file_ids',
  },
  {
    name: 'image_generation masked by a file',
    body: { input: 'draw', tools: [{ type: 'image_generation', input_image_mask: { file_id: 'file-0123456789' } }] },
    path: 'tools[0].input_image_mask.file_id',
  },
  {
    name: 'code_interpreter with a skill of the account',
    body: { input: 'run it', tools: [{ type: 'code_interpreter', container: { type: 'auto', skills: [{ type: 'skill_reference', skill_id: 'skill_0123456789' }] } }] },
    path: 'tools[0].container.skills[0].skill_id',
  },
  {
    name: 'shell in a container by id',
    body: { input: 'ls', tools: [{ type: 'shell', environment: { type: 'container_reference', container_id: 'cntr_0123456789' } }] },
    path: 'tools[0].environment.container_id',
  },
  {
    name: 'shell in a new container with files',
    body: { input: 'ls', tools: [{ type: 'shell', environment: { type: 'container_auto', file_ids: ['file-0123456789'] } }] },
    path: 'tools[0].environment.file_ids',
  },
  {
    name: 'shell in a new container with a skill of the account, after an inline one',
    body: { input: 'ls', tools: [{ type: 'shell', environment: { type: 'container_auto', skills: [INLINE_SKILL, { type: 'skill_reference', skill_id: 'skill_0123456789', version: 'latest' }] } }] },
    path: 'tools[0].environment.skills[1].skill_id',
  },
  {
    name: 'an MCP server through the account\'s tunnel',
    body: { input: 'ask', tools: [{ type: 'mcp', server_label: 'internal', tunnel_id: 'tun_0123456789' }] },
    path: 'tools[0].tunnel_id',
  },
];

/** Output items a client sends back in full on its next turn (Codex CLI, store: false): ids included, not references. */
const FULL_ITEMS = [
  { role: 'user', content: [{ type: 'input_text', text: 'what does file_id "file-0123456789" hold? {"type":"item_reference","id":"msg_1"}' }] },
  { type: 'reasoning', id: 'rs_0123456789', summary: [{ type: 'summary_text', text: 'thinking' }], encrypted_content: 'gAAAAABo…' },
  { type: 'reasoning', id: 'rs_0123456790', summary: [] },
  { id: 'msg_0123456791', role: 'assistant', content: [{ type: 'output_text', text: 'an earlier answer, its type left out' }] },
  {
    type: 'message', id: 'msg_0123456789', role: 'assistant', status: 'completed',
    content: [{ type: 'output_text', text: 'see the file', annotations: [{ type: 'file_citation', file_id: 'file-0123456789', filename: 'a.txt', index: 3 }] }],
  },
  { type: 'function_call', id: 'fc_0123456789', call_id: 'call_1', name: 'read_file', arguments: '{"file_id":"file-0123456789"}', status: 'completed' },
  { type: 'function_call_output', id: 'fco_0123456789', call_id: 'call_1', output: '{"file_id":"file-0123456789","container":"cntr_1"}' },
  { type: 'custom_tool_call', id: 'ctc_0123456789', call_id: 'call_2', name: 'apply_patch', input: '*** Begin Patch' },
  { type: 'custom_tool_call_output', call_id: 'call_2', output: 'done' },
  { type: 'web_search_call', id: 'ws_0123456789', status: 'completed', action: { type: 'search', query: 'x' } },
  { type: 'file_search_call', id: 'fs_0123456789', status: 'completed', queries: ['q'], results: [{ file_id: 'file-0123456789', filename: 'a.txt', score: 0.5, text: 't' }] },
  { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=' },
  { role: 'user', content: [{ type: 'input_file', filename: 'a.pdf', file_data: 'data:application/pdf;base64,JVBERi0=' }, { type: 'input_image', image_url: 'https://example.com/a.png', file_id: null }] },
];

const RESPONSES_PASSED: Array<{ name: string; body: Record<string, unknown> }> = [
  { name: 'output items sent back in full, store: false', body: { input: FULL_ITEMS, store: false, include: ['reasoning.encrypted_content'] } },
  { name: 'background: false', body: { input: 'hi', background: false } },
  { name: 'conversation: null', body: { input: 'hi', conversation: null } },
  {
    name: 'a function whose schema has file_id, container, conversation, prompt and background properties',
    body: {
      input: 'hi',
      tools: [{
        type: 'function', name: 'fetch_file', description: 'file_id of a file', strict: false,
        parameters: {
          type: 'object',
          properties: { file_id: { type: 'string' }, file_ids: { type: 'array' }, vector_store_ids: { type: 'array' }, container: { type: 'string' }, conversation: { type: 'string' }, prompt: { type: 'string' }, background: { type: 'boolean' } },
          required: ['file_id'],
        },
      }, { type: 'code_interpreter', container: { type: 'auto' } }, { type: 'code_interpreter', container: { type: 'auto', file_ids: [] } }],
    },
  },
  { name: 'metadata holding reference names', body: { input: 'hi', metadata: { file_id: 'file-0123456789', container: 'cntr_1', conversation: 'conv_1', prompt: 'p', background: 'true' } } },
  { name: 'a text.format schema with a file_id property', body: { input: 'hi', text: { format: { type: 'json_schema', name: 'f', schema: { type: 'object', properties: { file_id: { type: 'string' } } } } } } },
  { name: 'prompt_cache_key', body: { input: 'hi', prompt_cache_key: 'user-1' } },
  {
    name: 'shell on the client\'s machine, or in a new container with an inline skill; MCP by URL',
    body: {
      input: 'ls',
      tools: [
        { type: 'shell', environment: { type: 'local' } },
        { type: 'shell', environment: { type: 'container_auto', memory_limit: '1g', skills: [INLINE_SKILL] } },
        { type: 'mcp', server_label: 'docs', server_url: 'https://mcp.example.com/sse', require_approval: 'never' },
      ],
    },
  },
];

for (const surface of SURFACES) {
  t.test(`references on the shared account, ${surface.mode} surface`, async (t) => {
    const gw = await startGateway(t);
    const { key } = await gw.createKey([...surface.keyArgs]);
    const openai = new OpenAI({ apiKey: key, baseURL: gw.base + surface.openai, maxRetries: 0 });
    const anthropic = new Anthropic({ apiKey: key, baseURL: gw.base + surface.anthropic, maxRetries: 0 });
    /** Sends a request that must be refused: nothing reaches the provider, nothing is listed, billed or held. */
    const unchanged = async <T>(t: Asserts, label: string, send: () => Promise<T>): Promise<T> => {
      const forwarded = gw.mock.requests.length;
      const ledger = await ledgerOf(gw, key);
      const result = await send();
      t.equal(gw.mock.requests.length, forwarded, `${label}: nothing reached the provider`);
      t.same(await ledgerOf(gw, key), ledger, `${label}: nothing listed, billed or held`);
      return result;
    };

    await t.test('Responses: refused, plain and streamed (openai SDK)', async (t) => {
      for (const c of RESPONSES_REFUSED) {
        for (const stream of [false, true]) {
          const label = `${c.name}${stream ? ', streamed' : ''}`;
          const err = await unchanged(t, label, () => rejectionOf(t, openai.responses.create({ model: GPT, ...c.body, ...(stream ? { stream: true } : {}) } as any)));
          assertRefused(t, label, err?.status, errorOf(err), c.path);
        }
      }
    });

    await t.test('Responses: what is not a reference is forwarded unchanged (openai SDK)', async (t) => {
      for (const c of RESPONSES_PASSED) {
        const response = await openai.responses.create({ model: GPT, ...c.body } as any);
        t.equal(response.status, 'completed', c.name);
        const sent = JSON.parse(gw.mock.requests.at(-1)!.body);
        for (const [member, value] of Object.entries(c.body)) t.same(sent[member], value, `${c.name}: ${member} forwarded as sent`);
      }
    });

    await t.test('Responses: escaped key names, members given twice, keys across packets (raw HTTP)', async (t) => {
      const bodies: Array<[string, string, string]> = [
        ['an escaped file_id', `{"model":"${GPT}","input":[{"role":"user","content":[{"type":"input_file","file\\u005fid":"file-0123456789"}]}]}`, 'input[0].content[0].file_id'],
        ['an escaped top-level name', `{"model":"${GPT}","input":"hi","\\u0062ackground":true}`, 'background'],
        ['every letter escaped', `{"model":"${GPT}","input":"hi","${[...'conversation'].map((c) => `\\u00${c.charCodeAt(0).toString(16)}`).join('')}":"conv_1"}`, 'conversation'],
        ['an escaped item type', `{"model":"${GPT}","input":[{"type":"item\\u005freference","id":"msg_1","status":"completed"}]}`, 'input[0].id'],
        ['input twice, the reference in the first', `{"model":"${GPT}","input":[{"type":"item_reference","id":"msg_1"}],"input":"hi"}`, 'input[0].id'],
        ['input twice, the reference in the second', `{"model":"${GPT}","input":"hi","input":[{"id":"msg_1"}]}`, 'input[0].id'],
        ['background twice, true first', `{"model":"${GPT}","input":"hi","background":true,"background":false}`, 'background'],
        ['a bare id item whose id is given twice', `{"model":"${GPT}","input":[{"id":"msg_1","id":"msg_2"}]}`, 'input[0].id'],
        ['pretty-printed', JSON.stringify({ model: GPT, input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'file-0123456789' }] }] }, null, 2), 'input[0].content[0].file_id'],
        // Inside a member, a key given twice: JSON.parse keeps the last copy, another parser the first.
        ['a container by id, then as auto', `{"model":"${GPT}","input":"hi","tools":[{"type":"code_interpreter","container":"cntr_1","container":{"type":"auto"}}]}`, '"tools[0].container" is given twice'],
        ['a file id, then null', `{"model":"${GPT}","input":[{"role":"user","content":[{"type":"input_file","file_id":"file-1","file_id":null,"file_data":"data:application/pdf;base64,AA","filename":"a.pdf"}]}]}`, '"input[0].content[0].file_id" is given twice'],
        ['an item reference, then a message', `{"model":"${GPT}","input":[{"type":"item_reference","id":"msg_1","type":"message","role":"user","content":"hi"}]}`, '"input[0].type" is given twice'],
        ['a stored prompt, then null', `{"model":"${GPT}","prompt":{"id":"pmpt_1","\\u0069d":null}}`, '"prompt.id" is given twice'],
      ];
      for (const [name, body, path] of bodies) {
        const res = await unchanged(t, name, () => post(gw.base + surface.openai + '/responses', key, body));
        assertRefused(t, name, res.status, res.json?.error, path);
      }
      // The same body sent a few bytes at a time: key names cut across packets are still read.
      const body = `{"model":"${GPT}","input":[{"role":"user","content":[{"type":"input_file","file_id":"file-0123456789"}]}],"tools":[]}`;
      const res = await unchanged(t, 'sent 5 bytes at a time', () => fetch(gw.base + surface.openai + '/responses', {
        method: 'POST', duplex: 'half',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: new ReadableStream({
          async start(controller) {
            const bytes = Buffer.from(body);
            for (let at = 0; at < bytes.length; at += 5) {
              controller.enqueue(bytes.subarray(at, at + 5));
              await new Promise((r) => setImmediate(r));
            }
            controller.close();
          },
        }),
      } as RequestInit));
      assertRefused(t, 'sent 5 bytes at a time', res.status, ((await res.json()) as any).error, 'input[0].content[0].file_id');
    });

    await t.test('Chat Completions: a file part by file id (openai SDK)', async (t) => {
      for (const stream of [false, true]) {
        const label = `chat${stream ? ', streamed' : ''}`;
        const err = await unchanged(t, label, () => rejectionOf(t, openai.chat.completions.create({
          model: GPT, ...(stream ? { stream: true } : {}),
          messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: [{ type: 'text', text: 'read' }, { type: 'file', file: { file_id: 'file-0123456789' } }] }],
        } as any)));
        assertRefused(t, label, err?.status, errorOf(err), 'messages[1].content[1].file.file_id');
      }
      const passed = {
        model: GPT,
        messages: [{ role: 'user', content: [{ type: 'text', text: 'my file_id is file-0123456789' }, { type: 'file', file: { filename: 'a.pdf', file_data: 'data:application/pdf;base64,JVBERi0=' } }] }],
        tools: [{ type: 'function', function: { name: 'open', parameters: { type: 'object', properties: { file_id: { type: 'string' }, container: { type: 'string' } } } } }],
        metadata: { file_id: 'file-0123456789' },
      };
      const completion = await openai.chat.completions.create(passed as any);
      t.equal(completion.object, 'chat.completion', 'file data, a schema and metadata naming file_id: forwarded');
      t.same(JSON.parse(gw.mock.requests.at(-1)!.body).messages, passed.messages, 'as sent');

      // An earlier audio answer named by id: the provider keeps it on the account.
      const audio = [{ role: 'user', content: 'say hi' }, { role: 'assistant', audio: { id: 'audio_0123456789' } }, { role: 'user', content: 'again' }];
      const err = await unchanged(t, 'an audio answer by id', () => rejectionOf(t, openai.chat.completions.create({ model: GPT, modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'wav' }, messages: audio } as any)));
      assertRefused(t, 'an audio answer by id', err?.status, errorOf(err), 'messages[1].audio.id');
      const spoken = { model: GPT, modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'wav' }, messages: [{ role: 'user', content: 'say hi' }, { role: 'assistant', content: 'hi' }] };
      t.equal((await openai.chat.completions.create(spoken as any)).object, 'chat.completion', 'asking for audio is not a reference');
      const twice = await unchanged(t, 'a file id given twice', () => post(gw.base + surface.openai + '/chat/completions', key, `{"model":"${GPT}","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"file-1","file_id":null,"file_data":"data:x;base64,AA"}}]}]}`));
      assertRefused(t, 'a file id given twice', twice.status, twice.json?.error, '"messages[0].content[0].file.file_id" is given twice');
    });

    await t.test('Messages: file sources, container uploads, containers (anthropic SDK)', async (t) => {
      const document = { type: 'document', source: { type: 'file', file_id: 'file_0123456789' } };
      const cases: Array<[string, Record<string, unknown>, string]> = [
        ['a document by file id', { messages: [{ role: 'user', content: [document, { type: 'text', text: 'summarise' }] }] }, 'messages[0].content[0].source.file_id'],
        ['an image by file id', { messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'yes?' }, { role: 'user', content: [{ type: 'image', source: { type: 'file', file_id: 'file_0123456789' } }] }] }, 'messages[2].content[0].source.file_id'],
        ['a container upload', { messages: [{ role: 'user', content: [{ type: 'text', text: 'analyse' }, { type: 'container_upload', file_id: 'file_0123456789' }] }] }, 'messages[0].content[1].file_id'],
        [
          'an image by file id inside a tool result',
          {
            messages: [
              { role: 'user', content: 'shoot' },
              { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'shot', input: {} }] },
              { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'here' }, { type: 'image', source: { type: 'file', file_id: 'file_0123456789' } }] }] },
            ],
          },
          'messages[2].content[0].content[1].source.file_id',
        ],
        ['a container by id', { messages: [{ role: 'user', content: 'hi' }], container: 'container_0123456789' }, 'container'],
        ['a container object with an id', { messages: [{ role: 'user', content: 'hi' }], container: { id: 'container_0123456789' } }, 'container.id'],
        ['a container with skills', { messages: [{ role: 'user', content: 'hi' }], container: { skills: [{ type: 'custom', skill_id: 'skill_0123456789', version: 'latest' }] } }, 'container.skills'],
        ['a thread continued', { messages: [{ role: 'user', content: 'and then?' }], thread: { type: 'continue', previous_message_id: 'msg_0123456789' } }, 'thread'],
        ['a thread made', { messages: [{ role: 'user', content: 'hi' }], thread: { type: 'create' } }, 'thread'],
        ['diagnostics against an earlier message', { messages: [{ role: 'user', content: 'hi' }], diagnostics: { previous_message_id: 'msg_0123456789' } }, 'diagnostics.previous_message_id'],
      ];
      for (const [name, body, path] of cases) {
        for (const stream of [false, true]) {
          const label = `${name}${stream ? ', streamed' : ''}`;
          const err = await unchanged(t, label, () => rejectionOf(t, anthropic.messages.create({ model: CLAUDE, max_tokens: 64, ...body, ...(stream ? { stream: true } : {}) } as any)));
          assertRefused(t, label, err?.status, errorOf(err), path);
        }
      }
      const passed = {
        model: CLAUDE, max_tokens: 64,
        messages: [
          { role: 'user', content: [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' } }, { type: 'text', text: 'file_id: file_0123456789' }] },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'open', input: { file_id: 'file_0123456789', container: 'c' } }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: '{"file_id":"file_0123456789"}' }] }] },
        ],
        tools: [{ name: 'open', input_schema: { type: 'object', properties: { file_id: { type: 'string' }, container: { type: 'string' } } } }],
        metadata: { user_id: 'file_id' },
      };
      const message = await anthropic.messages.create(passed as any);
      t.equal(message.type, 'message', 'base64 sources, tool inputs and schemas naming file_id: forwarded');
      t.same(JSON.parse(gw.mock.requests.at(-1)!.body).messages, passed.messages, 'as sent');
      const optedIn = { model: CLAUDE, max_tokens: 64, messages: [{ role: 'user', content: 'hi' }], diagnostics: { previous_message_id: null }, thread: null };
      t.equal((await anthropic.messages.create(optedIn as any)).type, 'message', 'diagnostics without an earlier message, thread null: forwarded');
      t.same(JSON.parse(gw.mock.requests.at(-1)!.body).diagnostics, optedIn.diagnostics, 'as sent');
      const twice = await unchanged(t, 'a container id given twice', () => post(gw.base + surface.anthropic + '/v1/messages', key, `{"model":"${CLAUDE}","max_tokens":64,"messages":[{"role":"user","content":"hi"}],"container":{"id":"c_1","id":null}}`, { 'anthropic-version': '2023-06-01' }));
      assertRefused(t, 'a container id given twice', twice.status, twice.json?.error, '"container.id" is given twice');
    });
  });
}

t.test('in the order of checks: after the key, funds and model checks, before unpriced options and stored responses', async (t) => {
  const gw = await startGateway(t);
  const { key, id } = await gw.createKey(['--mode', 'credit', '--balance', '5', '--models', `${GPT},gpt-4o,claude-haiku-4-5,switched-off`]);
  const forwarded = gw.mock.requests.length;
  const refused = async (body: Record<string, unknown>, status: number, code: string, label: string): Promise<void> => {
    const res = await post(`${gw.base}/v1/responses`, key, { input: 'hi', background: true, ...body });
    t.equal(res.status, status, `${label}: ${status}`);
    t.equal(res.json?.error?.code, code, `${label}: ${code}`);
  };
  await refused({ model: 'claude-sonnet-4-5' }, 403, 'model_not_allowed', 'a model outside the allowlist first');
  await refused({ model: 'claude-haiku-4-5' }, 403, 'model_not_available', 'a model not served on this endpoint first');
  t.equal((await gw.cli(['models', 'disable', 'gpt-4o'])).code, 0);
  await refused({ model: 'gpt-4o' }, 403, 'model_not_available', 'a model switched off first');
  await refused({ model: GPT, service_tier: 'flex' }, 400, 'unsupported_option', 'before an unpriced tier');
  await refused({ model: GPT, previous_response_id: 'resp_made_by_nobody' }, 400, 'unsupported_option', 'before previous_response_not_found');
  t.equal((await gw.cli(['keys', 'suspend', id])).code, 0);
  await refused({ model: GPT }, 403, 'key_suspended', 'a suspended key first');
  t.equal((await gw.cli(['keys', 'resume', id])).code, 0);
  const broke = await gw.createKey(['--mode', 'credit', '--balance', '0']);
  const res = await post(`${gw.base}/v1/responses`, broke.key, { model: GPT, input: 'hi', background: true });
  t.equal(res.json?.error?.code, 'insufficient_credit', 'no funds first');
  t.equal(gw.mock.requests.length, forwarded, 'nothing forwarded');
  t.equal((await usageOf(gw.base, key)).requests.length, 0, 'nothing listed');
});
