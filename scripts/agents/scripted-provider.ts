/**
 * The scripted provider the agents run against: a small node:http server speaking Anthropic
 * Messages (plain and streamed), OpenAI Responses (plain and streamed) and Chat Completions
 * (plain and streamed), with a script instead of a model.
 *
 * - A call offering a shell tool (Claude Code's `Bash`; Codex's code-mode `exec`, whose
 *   JavaScript reaches `exec_command`, or a plain `exec_command`, `shell` or `shell_command`)
 *   whose conversation holds no tool result yet is answered with ONE call of that tool, writing
 *   the proof file; once the tool's result comes back, with plain text. (A prompt holding
 *   `[read PATH]` gets Claude Code's `Read` tool on that file instead: see READ_MARKER.)
 * - Every other call (titles, summaries, quota checks, a framework's one-shot question) is
 *   answered with a short text.
 * - Every answer reports usage with numbers of its own (they grow with the call's sequence
 *   number, so no two calls bill the same), and carries `x-request-id: req_scripted_N`, which
 *   the gateway records as the call's `requestId`: the bill of each call is found by that id.
 *
 * Everything received is kept (`calls`), with the credential it presented, so the run can show
 * what each agent sent and that only the gateway's own credential arrived.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';

/** The command the shell tool is asked to run, in the agent's working directory. */
export const PROOF_FILE = 'proof.txt';
export const PROOF_TEXT = 'tollgate-ok';
const PROOF_COMMAND = `echo ${PROOF_TEXT} > ${PROOF_FILE}`;
export const FINAL_TEXT = 'Done: the proof file is written.';
/** The answer to any call that is not an agent's task (a framework's question, a background call). */
export const REPLY_TEXT = 'Hello from the scripted provider.';

/** Which of the provider's APIs a call asked for. */
export type Api = 'messages' | 'count_tokens' | 'responses' | 'chat' | 'models' | 'other';
/** What the script answered: the tool call, the text after it, or a text to any other call. */
export type Turn = 'tool_call' | 'after_tool' | 'text' | 'count' | 'list' | 'refused';

/** Usage exactly as the answer reported it, by format (the fields the provider's docs name). */
export type ReportedUsage =
  | { format: 'messages'; input_tokens: number; output_tokens: number; cache_read_input_tokens: number; cache_creation_input_tokens: number; ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number }
  | { format: 'responses'; input_tokens: number; output_tokens: number; cached_tokens: number; cache_write_tokens: number; reasoning_tokens: number; service_tier: string }
  | { format: 'chat'; prompt_tokens: number; completion_tokens: number; cached_tokens: number; cache_write_tokens: number; reasoning_tokens: number; service_tier: string };

export interface ProviderCall {
  seq: number;
  at: string;
  method: string;
  /** Path and query as received. */
  url: string;
  api: Api;
  headers: Record<string, string | string[] | undefined>;
  /** The credential presented: `x-api-key`, or the `Authorization` value without its scheme. */
  credential: string | null;
  /** The body parsed (null when none or not JSON). */
  body: any;
  rawBody: string;
  stream: boolean;
  turn: Turn;
  /** The shell tool the script called (name, and the arguments it sent). */
  toolCall: { name: string; arguments: unknown } | null;
  /** The id this answer carried in x-request-id. */
  requestId: string;
  model: string | null;
  usage: ReportedUsage | null;
  status: number;
}

export interface ScriptedProvider {
  /** http://127.0.0.1:PORT (no /v1). */
  url: string;
  calls: ProviderCall[];
  close(): Promise<void>;
}

/** Model ids listed by GET /v1/models (both shapes). */
export interface ScriptOptions { models: string[] }

export async function startScriptedProvider(options: ScriptOptions): Promise<ScriptedProvider> {
  const calls: ProviderCall[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      let body: any = null;
      try {
        body = rawBody === '' ? null : JSON.parse(rawBody);
      } catch {
        body = null;
      }
      const call: ProviderCall = {
        seq: calls.length + 1, at: new Date().toISOString(), method: req.method ?? '', url: req.url ?? '',
        api: apiOf(req.method ?? '', req.url ?? ''), headers: req.headers, credential: credentialOf(req),
        body, rawBody, stream: body?.stream === true, turn: 'text', toolCall: null,
        requestId: '', model: typeof body?.model === 'string' ? body.model : null, usage: null, status: 200,
      };
      call.requestId = `req_scripted_${call.seq}`;
      calls.push(call);
      try {
        answer(call, req, res, options);
      } catch (err) {
        call.status = 500;
        send(res, call, 500, { error: { type: 'api_error', message: `scripted provider: ${String(err)}` } });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

function apiOf(method: string, url: string): Api {
  const path = url.split('?')[0]!;
  if (method === 'POST' && path === '/v1/messages') return 'messages';
  if (method === 'POST' && path === '/v1/messages/count_tokens') return 'count_tokens';
  if (method === 'POST' && path === '/v1/responses') return 'responses';
  if (method === 'POST' && path === '/v1/chat/completions') return 'chat';
  if (method === 'GET' && path === '/v1/models') return 'models';
  return 'other';
}

function credentialOf(req: IncomingMessage): string | null {
  const apiKey = req.headers['x-api-key'];
  if (typeof apiKey === 'string') return apiKey;
  const auth = req.headers.authorization;
  if (typeof auth === 'string') return auth.replace(/^\s*bearer\s+/i, '');
  return null;
}

function answer(call: ProviderCall, req: IncomingMessage, res: ServerResponse, options: ScriptOptions): void {
  switch (call.api) {
    case 'messages': return messagesAnswer(call, res);
    case 'count_tokens':
      call.turn = 'count';
      return send(res, call, 200, { input_tokens: 900 + call.seq });
    case 'responses': return responsesAnswer(call, res);
    case 'chat': return chatAnswer(call, res);
    case 'models':
      call.turn = 'list';
      if (req.headers['anthropic-version'] !== undefined) {
        const data = options.models.filter((m) => m.startsWith('claude')).map((id) => ({ type: 'model', id, display_name: id, created_at: '2026-11-01T00:00:00Z' }));
        return send(res, call, 200, { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null });
      }
      return send(res, call, 200, { object: 'list', data: options.models.filter((m) => !m.startsWith('claude')).map((id) => ({ id, object: 'model', created: 1793000000, owned_by: 'openai' })) });
    default:
      call.turn = 'refused';
      call.status = 404;
      return send(res, call, 404, { error: { type: 'not_found_error', message: `scripted provider: no route ${call.method} ${call.url}` } });
  }
}

function send(res: ServerResponse, call: ProviderCall, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'x-request-id': call.requestId });
  res.end(text);
}

function sse(res: ServerResponse, call: ProviderCall, events: Array<[string | null, unknown]>): void {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-request-id': call.requestId });
  for (const [name, data] of events) {
    res.write(`${name === null ? '' : `event: ${name}\n`}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
  }
  res.end();
}

const id = (prefix: string): string => `${prefix}_${randomBytes(12).toString('hex')}`;

/** The command a shell tool's schema takes: a string member `cmd` or `command`, or an argv array. */
function shellArguments(parameters: any): Record<string, unknown> {
  const properties = parameters?.properties ?? {};
  if (properties.cmd !== undefined) return { cmd: PROOF_COMMAND };
  if (properties.command?.type === 'array') return { command: ['bash', '-lc', PROOF_COMMAND] };
  return { command: PROOF_COMMAND };
}

// ---------------------------------------------------------------- Anthropic Messages

const CLAUDE_SHELL = 'Bash';
/**
 * A prompt holding `[read /absolute/path]` asks for Claude Code's `Read` tool on that file
 * instead of the shell: reading a large file is what makes Claude Code count tokens.
 */
export const READ_MARKER = /\[read (\/[^\]\s"\\]+)\]/;

function messagesAnswer(call: ProviderCall, res: ServerResponse): void {
  const body = call.body ?? {};
  const tools: any[] = Array.isArray(body.tools) ? body.tools : [];
  const readPath = tools.some((t) => t?.name === 'Read') ? READ_MARKER.exec(call.rawBody)?.[1] : undefined;
  const shell = tools.find((t) => t?.name === CLAUDE_SHELL);
  const toolResultSent = (body.messages ?? []).some((m: any) => Array.isArray(m?.content) && m.content.some((b: any) => b?.type === 'tool_result'));
  const model = call.model ?? 'unknown';
  // Cache counts appear only when the request marks a cache breakpoint, as the provider reports.
  const caching = call.rawBody.includes('"cache_control"');
  const oneHour = /"ttl"\s*:\s*"1h"/.test(call.rawBody);
  const usage = {
    format: 'messages' as const,
    input_tokens: 1200 + call.seq,
    output_tokens: 30 + call.seq,
    cache_read_input_tokens: caching ? 3000 + 10 * call.seq : 0,
    ephemeral_5m_input_tokens: caching && !oneHour ? 400 + call.seq : 0,
    ephemeral_1h_input_tokens: caching && oneHour ? 400 + call.seq : 0,
    cache_creation_input_tokens: caching ? 400 + call.seq : 0,
  };
  call.usage = usage;
  let content: any[];
  let stopReason: string;
  if (shell !== undefined && !toolResultSent) {
    const name = readPath === undefined ? CLAUDE_SHELL : 'Read';
    const input = readPath === undefined ? { ...shellArguments(shell.input_schema), description: 'Write the proof file' } : { file_path: readPath };
    call.turn = 'tool_call';
    call.toolCall = { name, arguments: input };
    content = [{ type: 'tool_use', id: id('toolu'), name, input }];
    stopReason = 'tool_use';
  } else {
    call.turn = shell !== undefined ? 'after_tool' : 'text';
    content = [{ type: 'text', text: call.turn === 'after_tool' ? FINAL_TEXT : backgroundText(body) }];
    stopReason = 'end_turn';
  }
  const wireUsage = {
    input_tokens: usage.input_tokens,
    cache_creation_input_tokens: usage.cache_creation_input_tokens,
    cache_read_input_tokens: usage.cache_read_input_tokens,
    cache_creation: { ephemeral_5m_input_tokens: usage.ephemeral_5m_input_tokens, ephemeral_1h_input_tokens: usage.ephemeral_1h_input_tokens },
    output_tokens: usage.output_tokens,
    service_tier: 'standard',
  };
  const message = { id: id('msg'), type: 'message', role: 'assistant', model, content, stop_reason: stopReason, stop_sequence: null, usage: wireUsage };
  if (!call.stream) return send(res, call, 200, message);
  const events: Array<[string, unknown]> = [
    ['message_start', { type: 'message_start', message: { ...message, content: [], stop_reason: null, usage: { ...wireUsage, output_tokens: 1 } } }],
  ];
  content.forEach((block, index) => {
    if (block.type === 'tool_use') {
      events.push(['content_block_start', { type: 'content_block_start', index, content_block: { ...block, input: {} } }]);
      events.push(['content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) } }]);
    } else {
      events.push(['content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } }]);
      events.push(['content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: block.text } }]);
    }
    events.push(['content_block_stop', { type: 'content_block_stop', index }]);
  });
  // As the provider does today: the final delta restates the input counts beside the output.
  events.push(['message_delta', { type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: { ...wireUsage, cache_creation: undefined, service_tier: undefined } }]);
  events.push(['message_stop', { type: 'message_stop' }]);
  sse(res, call, events);
}

/**
 * A sensible short answer to a call that is not the agent's main turn. A call that asks for JSON
 * (a title, a summary) gets a small JSON object, as the agents parse these.
 */
function backgroundText(body: any): string {
  const system = JSON.stringify(body.system ?? '') + JSON.stringify(body.messages?.at(-1) ?? '');
  if (/json/i.test(system)) return '{"title": "Write the proof file", "isNewTopic": true}';
  return REPLY_TEXT;
}

// ---------------------------------------------------------------- OpenAI Responses

/** The tier an OpenAI answer reports: the one asked for, else the project's default. */
function tierServed(body: any): string {
  return typeof body.service_tier === 'string' && body.service_tier !== 'auto' ? body.service_tier : 'default';
}

const CODEX_SHELLS = ['exec_command', 'shell', 'shell_command'];

/**
 * Every tool a Responses call offers: `tools`, and the tools an `additional_tools` input item
 * declares (Codex's "responses lite" requests carry them there), namespaces flattened.
 */
function offeredTools(body: any): any[] {
  const found: any[] = [];
  const walk = (list: unknown): void => {
    if (!Array.isArray(list)) return;
    for (const tool of list) {
      if (tool?.type === 'namespace') walk(tool.tools);
      else found.push(tool);
    }
  };
  walk(body.tools);
  for (const item of Array.isArray(body.input) ? body.input : []) if (item?.type === 'additional_tools') walk(item.tools);
  return found;
}

/**
 * The shell call for the tools offered: a function tool taking a command (`exec_command`,
 * `shell`, `shell_command`), or Codex's code mode, where the one tool is the freeform `exec`
 * (JavaScript) whose nested tools include `exec_command`.
 */
function shellCall(tools: any[]): { item: Record<string, unknown>; name: string; arguments: unknown } | null {
  const fn = tools.find((t) => t?.type === 'function' && CODEX_SHELLS.includes(t.name));
  if (fn !== undefined) {
    const args = shellArguments(fn.parameters);
    return { name: fn.name, arguments: args, item: { id: id('fc'), type: 'function_call', status: 'completed', arguments: JSON.stringify(args), call_id: id('call'), name: fn.name } };
  }
  const code = tools.find((t) => t?.type === 'custom' && t.name === 'exec' && String(t.description).includes('exec_command'));
  if (code !== undefined) {
    const input = `const r = await tools.exec_command({ cmd: ${JSON.stringify(PROOF_COMMAND)} });\ntext(r.output);`;
    return { name: code.name, arguments: input, item: { id: id('ctc'), type: 'custom_tool_call', status: 'completed', call_id: id('call'), name: code.name, input } };
  }
  return null;
}

const TOOL_OUTPUTS = new Set(['function_call_output', 'custom_tool_call_output']);

function responsesAnswer(call: ProviderCall, res: ServerResponse): void {
  const body = call.body ?? {};
  const tools = offeredTools(body);
  const shell = shellCall(tools);
  const input: any[] = Array.isArray(body.input) ? body.input : [];
  const toolResultSent = input.some((item) => TOOL_OUTPUTS.has(item?.type));
  const model = call.model ?? 'unknown';
  const usage = {
    format: 'responses' as const,
    input_tokens: 2000 + call.seq,
    output_tokens: 60 + call.seq,
    cached_tokens: 512 + call.seq,
    // GPT-5.6 and later report their cache writes, inside the input count, at their own rate.
    cache_write_tokens: 256 + call.seq,
    reasoning_tokens: 20 + call.seq,
    service_tier: tierServed(body),
  };
  call.usage = usage;
  const output: any[] = [];
  // A reasoning model's turn starts with a reasoning item; asked for, its encrypted content
  // comes with it, and a client keeping the conversation itself sends it back in full.
  if (Array.isArray(body.include) && body.include.includes('reasoning.encrypted_content')) {
    output.push({ id: id('rs'), type: 'reasoning', summary: [], encrypted_content: `gAAAAB${randomBytes(48).toString('base64')}` });
  }
  if (shell !== null && !toolResultSent) {
    call.turn = 'tool_call';
    call.toolCall = { name: shell.name, arguments: shell.arguments };
    output.push(shell.item);
  } else {
    call.turn = shell !== null ? 'after_tool' : 'text';
    const text = call.turn === 'after_tool' ? FINAL_TEXT : REPLY_TEXT;
    output.push({ id: id('msg'), type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text, annotations: [], logprobs: [] }] });
  }
  const wireUsage = {
    input_tokens: usage.input_tokens,
    input_tokens_details: { cached_tokens: usage.cached_tokens, cache_write_tokens: usage.cache_write_tokens },
    output_tokens: usage.output_tokens,
    output_tokens_details: { reasoning_tokens: usage.reasoning_tokens },
    total_tokens: usage.input_tokens + usage.output_tokens,
  };
  const response = {
    id: id('resp'), object: 'response', created_at: Math.floor(Date.now() / 1000), status: 'completed', error: null,
    incomplete_details: null, instructions: null, max_output_tokens: body.max_output_tokens ?? null, model,
    output, parallel_tool_calls: body.parallel_tool_calls ?? true, previous_response_id: null,
    reasoning: body.reasoning ?? null, service_tier: usage.service_tier, store: body.store ?? true,
    text: body.text ?? { format: { type: 'text' } }, tool_choice: body.tool_choice ?? 'auto', tools: body.tools ?? [], usage: wireUsage,
  };
  if (!call.stream) return send(res, call, 200, response);
  let sequence = 0;
  const events: Array<[string, any]> = [];
  const push = (type: string, data: Record<string, unknown>): void => {
    events.push([type, { type, sequence_number: sequence++, ...data }]);
  };
  const pending = { ...response, status: 'in_progress', output: [], usage: null };
  push('response.created', { response: pending });
  push('response.in_progress', { response: pending });
  output.forEach((item, outputIndex) => {
    if (item.type === 'function_call') {
      push('response.output_item.added', { output_index: outputIndex, item: { ...item, status: 'in_progress', arguments: '' } });
      push('response.function_call_arguments.delta', { item_id: item.id, output_index: outputIndex, delta: item.arguments });
      push('response.function_call_arguments.done', { item_id: item.id, output_index: outputIndex, arguments: item.arguments });
    } else if (item.type === 'custom_tool_call') {
      push('response.output_item.added', { output_index: outputIndex, item: { ...item, status: 'in_progress', input: '' } });
      push('response.custom_tool_call_input.delta', { item_id: item.id, output_index: outputIndex, delta: item.input });
      push('response.custom_tool_call_input.done', { item_id: item.id, output_index: outputIndex, input: item.input });
    } else if (item.type === 'message') {
      const text = item.content[0].text;
      push('response.output_item.added', { output_index: outputIndex, item: { ...item, status: 'in_progress', content: [] } });
      push('response.content_part.added', { item_id: item.id, output_index: outputIndex, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } });
      push('response.output_text.delta', { item_id: item.id, output_index: outputIndex, content_index: 0, delta: text, logprobs: [] });
      push('response.output_text.done', { item_id: item.id, output_index: outputIndex, content_index: 0, text, logprobs: [] });
      push('response.content_part.done', { item_id: item.id, output_index: outputIndex, content_index: 0, part: item.content[0] });
    } else {
      push('response.output_item.added', { output_index: outputIndex, item });
    }
    push('response.output_item.done', { output_index: outputIndex, item });
  });
  push('response.completed', { response });
  sse(res, call, events);
}

// ---------------------------------------------------------------- OpenAI Chat Completions

function chatAnswer(call: ProviderCall, res: ServerResponse): void {
  const body = call.body ?? {};
  const model = call.model ?? 'unknown';
  const usage = {
    format: 'chat' as const,
    prompt_tokens: 300 + call.seq,
    completion_tokens: 20 + call.seq,
    cached_tokens: 128 + call.seq,
    cache_write_tokens: 64 + call.seq,
    reasoning_tokens: 5 + call.seq,
    service_tier: tierServed(body),
  };
  call.usage = usage;
  call.turn = 'text';
  const text = REPLY_TEXT;
  const wireUsage = {
    prompt_tokens: usage.prompt_tokens,
    completion_tokens: usage.completion_tokens,
    total_tokens: usage.prompt_tokens + usage.completion_tokens,
    prompt_tokens_details: { cached_tokens: usage.cached_tokens, cache_write_tokens: usage.cache_write_tokens, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: usage.reasoning_tokens, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  };
  const completionId = id('chatcmpl');
  const created = Math.floor(Date.now() / 1000);
  if (!call.stream) {
    return send(res, call, 200, {
      id: completionId, object: 'chat.completion', created, model, service_tier: usage.service_tier, system_fingerprint: null,
      choices: [{ index: 0, message: { role: 'assistant', content: text, refusal: null, annotations: [] }, logprobs: null, finish_reason: 'stop' }],
      usage: wireUsage,
    });
  }
  const withUsage = body.stream_options?.include_usage === true;
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}): [null, unknown] => [null, {
    id: completionId, object: 'chat.completion.chunk', created, model, service_tier: usage.service_tier, system_fingerprint: null, choices,
    ...(withUsage ? { usage: null } : {}), ...extra,
  }];
  const events: Array<[string | null, unknown]> = [
    chunk([{ index: 0, delta: { role: 'assistant', content: '', refusal: null }, logprobs: null, finish_reason: null }]),
    chunk([{ index: 0, delta: { content: text }, logprobs: null, finish_reason: null }]),
    chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }]),
  ];
  if (withUsage) events.push(chunk([], { usage: wireUsage }));
  events.push([null, '[DONE]']);
  sse(res, call, events);
}
