import t from 'tap';
import { startMockProvider, type MockProvider } from './fixtures/mock-provider.js';

const mock: MockProvider = await startMockProvider();
t.teardown(() => mock.close());

interface SseEvent {
  event: string | undefined;
  data: string;
}

function parseSse(text: string): SseEvent[] {
  const out: SseEvent[] = [];
  for (const block of text.split('\n\n')) {
    if (block === '') continue;
    let event: string | undefined;
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) event = line.slice(7);
      else if (line.startsWith('data: ')) data.push(line.slice(6));
    }
    out.push({ event, data: data.join('\n') });
  }
  return out;
}

async function post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(mock.url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

async function json(res: Response | Promise<Response>): Promise<any> {
  return (await res).json();
}

/** Read the whole body; resolves with the text read so far and the error, if the stream broke. */
async function readAll(res: Response): Promise<{ text: string; error: unknown }> {
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let text = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += dec.decode(value, { stream: true });
    }
    return { text, error: undefined };
  } catch (error) {
    return { text, error };
  }
}

const usageSwitches = { inputTokens: 100, outputTokens: 20, cachedTokens: 30, cacheWriteTokens: 4, reasoningTokens: 5 };
const TEXT = 'tok0 tok1 tok2 tok3 tok4 ';

t.test('url and port', async (t) => {
  t.match(mock.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  t.equal(mock.url, `http://127.0.0.1:${mock.port}`);
});

t.test('chat completions, plain', async (t) => {
  const res = await post('/v1/chat/completions', { model: 'gpt-4o-mini', messages: [], mock: usageSwitches });
  t.equal(res.status, 200);
  t.equal(res.headers.get('content-type'), 'application/json');
  t.match(res.headers.get('x-request-id'), /^req_mock_\d+$/);
  t.equal(res.headers.get('openai-processing-ms'), '1');
  t.equal(res.headers.get('x-ratelimit-remaining-requests'), '999');
  t.equal(res.headers.get('set-cookie'), '__cf_bm=mock; Path=/');
  t.equal(res.headers.get('cf-ray'), 'mock');
  t.equal(res.headers.get('server'), 'mock-provider');
  const j = await json(res);
  t.match(j, {
    id: /^chatcmpl-mock\d+$/,
    object: 'chat.completion',
    created: Number,
    model: 'gpt-4o-mini',
    choices: [{ index: 0, message: { role: 'assistant', content: TEXT, refusal: null }, logprobs: null, finish_reason: 'stop' }],
    system_fingerprint: 'fp_mock',
  });
  t.same(j.usage, {
    prompt_tokens: 100,
    completion_tokens: 20,
    total_tokens: 120,
    prompt_tokens_details: { cached_tokens: 30, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 5, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  });
});

t.test('defaults and model echo (non-ascii model, content-length)', async (t) => {
  const res = await post('/v1/chat/completions', { model: 'modèle-ü', messages: [] });
  const j = await json(res);
  t.equal(j.model, 'modèle-ü');
  t.equal(j.usage.prompt_tokens, 11);
  t.equal(j.usage.completion_tokens, 7);
  t.equal(j.usage.prompt_tokens_details.cached_tokens, 0);
});

t.test('responses, plain', async (t) => {
  const res = await post('/v1/responses', { model: 'gpt-4.1', input: 'hi', mock: usageSwitches });
  t.equal(res.status, 200);
  t.equal(res.headers.get('openai-processing-ms'), '1');
  const j = await json(res);
  t.match(j, {
    id: /^resp_mock\d+$/,
    object: 'response',
    created_at: Number,
    status: 'completed',
    model: 'gpt-4.1',
    error: null,
    incomplete_details: null,
    instructions: null,
    parallel_tool_calls: true,
    tool_choice: 'auto',
    tools: [],
    text: { format: { type: 'text' } },
    output: [
      { type: 'message', id: /^msg_mock\d+$/, status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: TEXT, annotations: [] }] },
    ],
  });
  t.same(j.usage, {
    input_tokens: 100,
    input_tokens_details: { cached_tokens: 30 },
    output_tokens: 20,
    output_tokens_details: { reasoning_tokens: 5 },
    total_tokens: 120,
  });
});

t.test('messages, plain', async (t) => {
  const res = await post('/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 64, messages: [], mock: usageSwitches });
  t.equal(res.status, 200);
  t.equal(res.headers.get('anthropic-organization-id'), 'mock-org');
  t.match(res.headers.get('x-request-id'), /^req_mock_\d+$/);
  const j = await json(res);
  t.same(j, {
    id: j.id,
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-4-5',
    content: [{ type: 'text', text: TEXT }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 100, cache_creation_input_tokens: 4, cache_read_input_tokens: 30, output_tokens: 20 },
  });
  t.match(j.id, /^msg_mock\d+$/);
});

t.test('chat stream without include_usage', async (t) => {
  const res = await post('/v1/chat/completions', { model: 'm', stream: true, messages: [], mock: { chunks: 3 } });
  t.equal(res.status, 200);
  t.equal(res.headers.get('content-type'), 'text/event-stream; charset=utf-8');
  t.equal(res.headers.get('cache-control'), 'no-cache');
  t.equal(res.headers.get('set-cookie'), '__cf_bm=mock; Path=/');
  const events = parseSse(await res.text());
  t.equal(events.at(-1)!.data, '[DONE]');
  const chunks = events.slice(0, -1).map((e) => JSON.parse(e.data));
  t.equal(chunks.length, 5); // role, 3 content, finish
  for (const c of chunks) {
    t.equal(c.object, 'chat.completion.chunk');
    t.equal(c.model, 'm');
    t.notOk('usage' in c, 'no usage key without include_usage');
    t.equal(c.choices.length, 1);
  }
  t.same(chunks[0].choices[0].delta, { role: 'assistant', content: '', refusal: null });
  t.equal(chunks.map((c) => c.choices[0].delta.content ?? '').join(''), 'tok0 tok1 tok2 ');
  t.same(chunks[4].choices[0], { index: 0, delta: {}, logprobs: null, finish_reason: 'stop' });
});

t.test('chat stream with include_usage', async (t) => {
  const res = await post('/v1/chat/completions', {
    model: 'm',
    stream: true,
    stream_options: { include_usage: true },
    messages: [],
    mock: usageSwitches,
  });
  const events = parseSse(await res.text());
  t.equal(events.at(-1)!.data, '[DONE]');
  const chunks = events.slice(0, -1).map((e) => JSON.parse(e.data));
  t.equal(chunks.length, 8); // role, 5 content, finish, usage
  for (const c of chunks.slice(0, -1)) t.equal(c.usage, null);
  const last = chunks.at(-1);
  t.same(last.choices, []);
  t.equal(last.usage.prompt_tokens, 100);
  t.equal(last.usage.completion_tokens, 20);
  t.equal(last.usage.total_tokens, 120);
  t.equal(last.usage.prompt_tokens_details.cached_tokens, 30);
  t.equal(last.usage.completion_tokens_details.reasoning_tokens, 5);

  const res2 = await post('/v1/chat/completions', {
    model: 'm',
    stream: true,
    stream_options: { include_usage: true },
    mock: { noUsage: true },
  });
  const chunks2 = parseSse(await res2.text()).slice(0, -1).map((e) => JSON.parse(e.data));
  t.notOk(chunks2.some((c) => c.choices.length === 0), 'noUsage drops the usage chunk');
});

t.test('responses stream', async (t) => {
  const res = await post('/v1/responses', { model: 'gpt-4o', stream: true, input: 'x', mock: usageSwitches });
  t.equal(res.headers.get('content-type'), 'text/event-stream; charset=utf-8');
  const events = parseSse(await res.text());
  const types = events.map((e) => e.event);
  t.same(types, [
    'response.created',
    'response.in_progress',
    'response.output_item.added',
    'response.content_part.added',
    'response.output_text.delta',
    'response.output_text.delta',
    'response.output_text.delta',
    'response.output_text.delta',
    'response.output_text.delta',
    'response.output_text.done',
    'response.content_part.done',
    'response.output_item.done',
    'response.completed',
  ]);
  const data = events.map((e) => JSON.parse(e.data));
  data.forEach((d, i) => {
    t.equal(d.type, types[i]);
    t.equal(d.sequence_number, i);
  });
  t.match(data[0].response, { status: 'in_progress', usage: null, model: 'gpt-4o' });
  t.match(data[4], { item_id: /^msg_mock\d+$/, output_index: 0, content_index: 0, delta: 'tok0 ' });
  t.equal(data[9].text, TEXT);
  const done = data.at(-1).response;
  t.equal(done.status, 'completed');
  t.equal(done.output[0].content[0].text, TEXT);
  t.same(done.usage, {
    input_tokens: 100,
    input_tokens_details: { cached_tokens: 30 },
    output_tokens: 20,
    output_tokens_details: { reasoning_tokens: 5 },
    total_tokens: 120,
  });
});

t.test('messages stream', async (t) => {
  const res = await post('/v1/messages', { model: 'claude-haiku-4-5', max_tokens: 5, stream: true, mock: usageSwitches });
  t.equal(res.headers.get('content-type'), 'text/event-stream; charset=utf-8');
  t.equal(res.headers.get('anthropic-organization-id'), 'mock-org');
  const events = parseSse(await res.text());
  t.same(
    events.map((e) => e.event),
    [
      'message_start',
      'content_block_start',
      'ping',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ],
  );
  const data = events.map((e) => JSON.parse(e.data));
  for (const [i, e] of events.entries()) t.equal(data[i].type, e.event);
  t.match(data[0].message, {
    id: /^msg_mock\d+$/,
    model: 'claude-haiku-4-5',
    content: [],
    stop_reason: null,
    usage: { input_tokens: 100, cache_creation_input_tokens: 4, cache_read_input_tokens: 30, output_tokens: 1 },
  });
  t.same(data[1], { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
  t.same(data[3], { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'tok0 ' } });
  t.same(data[9], { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 20 } });
});

t.test('status switch', async (t) => {
  const a = await post('/v1/messages', { model: 'c', max_tokens: 1, mock: { status: 529 } });
  t.equal(a.status, 529);
  t.equal(a.headers.get('content-type'), 'application/json');
  t.same(await json(a), { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });

  const o = await post('/v1/chat/completions', { model: 'm', mock: { status: 503 } });
  t.equal(o.status, 503);
  t.same(await json(o), { error: { message: 'mock error', type: 'server_error', param: null, code: null } });

  const r = await post('/v1/responses', { model: 'm', stream: true, mock: { status: 429 } });
  t.equal(r.status, 429);
  t.match(await json(r), { error: { code: 'rate_limit_exceeded' } });
});

t.test('cutAfter ends the stream abruptly', async (t) => {
  const res = await post('/v1/chat/completions', { model: 'm', stream: true, mock: { cutAfter: 2 } });
  t.equal(res.status, 200);
  const { text, error } = await readAll(res);
  t.ok(error, 'body reader rejects');
  t.notMatch(text, '[DONE]');
  t.notMatch(text, '"finish_reason":"stop"');
  const events = parseSse(text);
  t.equal(events.length, 3, 'role chunk + 2 content chunks');

  const m = await post('/v1/messages', { model: 'c', max_tokens: 1, stream: true, mock: { cutAfter: 1, chunkDelayMs: 5 } });
  const r = await readAll(m);
  t.ok(r.error, 'body reader rejects (delayed writes)');
  t.equal(parseSse(r.text).filter((e) => e.event === 'content_block_delta').length, 1);
  t.notMatch(r.text, 'message_stop');
});

t.test('errorEvent', async (t) => {
  const m = parseSse(await (await post('/v1/messages', { model: 'c', max_tokens: 1, stream: true, mock: { errorEvent: true } })).text());
  t.same(m.at(-1), { event: 'error', data: '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}' });
  t.notOk(m.some((e) => e.event === 'message_stop'));

  const r = parseSse(await (await post('/v1/responses', { model: 'm', stream: true, mock: { errorEvent: true, outputTokens: 3 } })).text());
  const last = JSON.parse(r.at(-1)!.data);
  t.equal(r.at(-1)!.event, 'response.failed');
  t.equal(last.response.status, 'failed');
  t.equal(last.response.usage.output_tokens, 3);
  t.ok(last.response.error);

  const c = parseSse(await (await post('/v1/chat/completions', { model: 'm', stream: true, mock: { errorEvent: true } })).text());
  t.match(JSON.parse(c.at(-1)!.data), { error: { type: 'server_error' } });
  t.notOk(c.some((e) => e.data === '[DONE]'));
});

t.test('bytes: large lazily generated stream', async (t) => {
  const bytes = 1_000_000;
  const res = await post('/v1/chat/completions', { model: 'm', stream: true, mock: { bytes } });
  const events = parseSse(await res.text());
  t.equal(events.at(-1)!.data, '[DONE]');
  let total = 0;
  for (const e of events.slice(0, -1)) total += (JSON.parse(e.data).choices[0].delta.content ?? '').length;
  t.equal(total, bytes);

  const plain = await json(post('/v1/messages', { model: 'c', max_tokens: 1, mock: { bytes: 100_000 } }));
  t.equal(plain.content[0].text.length, 100_000);
});

t.test('delays', async (t) => {
  const t0 = Date.now();
  const res = await post('/v1/chat/completions', { model: 'm', mock: { delayMs: 60 } });
  t.equal(res.status, 200);
  t.ok(Date.now() - t0 >= 55, 'delayMs honoured');
  await res.text();

  const t1 = Date.now();
  const s = await post('/v1/responses', { model: 'm', stream: true, mock: { chunks: 3, chunkDelayMs: 20 } });
  const events = parseSse(await s.text());
  t.ok(Date.now() - t1 >= 150, 'chunkDelayMs honoured between events');
  t.equal(events.at(-1)!.event, 'response.completed');
});

t.test('hold: an answer waits at its hold point until released', async (t) => {
  // A stream sends its opening events and `holdAfter` deltas, then waits.
  const res = await post('/v1/chat/completions', { model: 'm', stream: true, mock: { chunks: 5, hold: 'h1', holdAfter: 2 } });
  await mock.waitHeld('h1');
  const reader = res.body!.getReader();
  let text = '';
  const decoder = new TextDecoder();
  while (parseSse(text).length < 3) text += decoder.decode((await reader.read()).value);
  t.equal(parseSse(text).length, 3, 'role chunk and two deltas before the hold');
  mock.release('h1');
  for (let r = await reader.read(); !r.done; r = await reader.read()) text += decoder.decode(r.value);
  const events = parseSse(text);
  t.equal(events.at(-1)!.data, '[DONE]', 'the rest after the release');
  t.equal(events.filter((e) => e.data.includes('"content":"tok')).length, 5);

  // A plain answer is held before its headers; an answer arriving after the release is not held.
  let answered = false;
  const plain = post('/v1/messages', { model: 'c', max_tokens: 1, mock: { hold: 'h2' } }).then((r) => {
    answered = true;
    return r;
  });
  await mock.waitHeld('h2');
  t.notOk(answered, 'no answer while held');
  mock.release('h2');
  t.equal((await plain).status, 200);
  t.equal((await post('/v1/messages', { model: 'c', max_tokens: 1, mock: { hold: 'h2' } })).status, 200, 'released tags stay released');

  // waitHeld counts the answers that reached the hold.
  const three = [1, 2, 3].map(() => post('/v1/chat/completions', { model: 'm', mock: { hold: 'h3', status: 503 } }));
  await mock.waitHeld('h3', 3);
  mock.release('h3');
  t.same((await Promise.all(three)).map((r) => r.status), [503, 503, 503], 'an error status is held too');
});

t.test('messages without max_tokens -> 400', async (t) => {
  const res = await post('/v1/messages', { model: 'c', messages: [] });
  t.equal(res.status, 400);
  t.same(await json(res), { type: 'error', error: { type: 'invalid_request_error', message: 'max_tokens: Field required' } });
});

t.test('invalid JSON -> 400', async (t) => {
  const o = await post('/v1/chat/completions', '{nope');
  t.equal(o.status, 400);
  t.match(await json(o), { error: { type: 'invalid_request_error', param: null, code: null } });
  const a = await post('/v1/messages', 'nope');
  t.equal(a.status, 400);
  t.match(await json(a), { type: 'error', error: { type: 'invalid_request_error' } });
});

t.test('/v1/models both shapes, unknown route 404', async (t) => {
  const o = await fetch(mock.url + '/v1/models', { headers: { authorization: 'Bearer x' } });
  const oj = await json(o);
  t.equal(oj.object, 'list');
  t.match(oj.data[0], { id: 'gpt-4o-mini', object: 'model', created: 1721172741, owned_by: 'system' });
  t.ok(oj.data.some((m: { id: string }) => m.id === 'claude-sonnet-4-5'));

  t.ok(oj.data.some((m: { id: string; owned_by: string }) => m.id.startsWith('ft:') && m.owned_by === 'org-xyz'), 'a fine-tune owned by an organisation');

  // Anthropic's list is paginated: 20 entries unless asked, claude-haiku-4-5 on the second page.
  const a = await fetch(mock.url + '/v1/models', { headers: { 'x-api-key': 'k' } });
  const aj = await json(a);
  t.equal(aj.data.length, 20);
  t.equal(aj.has_more, true);
  t.match(aj.data[0], { type: 'model', id: 'claude-sonnet-4-5', display_name: 'Claude Sonnet 4.5', created_at: '2025-09-29T00:00:00Z' });
  t.equal(aj.first_id, aj.data[0].id);
  t.equal(aj.last_id, aj.data.at(-1).id);
  t.notOk(aj.data.some((m: { id: string }) => m.id === 'claude-haiku-4-5'));
  const next = await json(fetch(`${mock.url}/v1/models?after_id=${aj.last_id}`, { headers: { 'x-api-key': 'k' } }));
  t.equal(next.has_more, false);
  t.equal(next.last_id, 'claude-haiku-4-5', 'the next page ends with it');
  const back = await json(fetch(`${mock.url}/v1/models?before_id=${next.first_id}&limit=2`, { headers: { 'x-api-key': 'k' } }));
  t.same(back.data.map((m: { id: string }) => m.id), aj.data.slice(-2).map((m: { id: string }) => m.id), 'before_id pages back');
  t.equal(back.has_more, true);

  const av = await json(fetch(mock.url + '/v1/models?limit=1000', { headers: { authorization: 'Bearer x', 'anthropic-version': '2023-06-01' } }));
  t.equal(av.has_more, false);
  t.equal(av.data.length, 24, 'the largest page holds the whole list');
  const over = await fetch(mock.url + '/v1/models?limit=1001', { headers: { 'x-api-key': 'k' } });
  t.equal(over.status, 400);
  t.match(await json(over), { type: 'error', error: { type: 'invalid_request_error' } });

  const nf = await fetch(mock.url + '/v1/nope');
  t.equal(nf.status, 404);
  t.match(await json(nf), { error: { type: 'invalid_request_error' } });
});

t.test('a refused credential is answered 401 as each provider does, or 403', async (t) => {
  const m = await startMockProvider();
  t.teardown(() => m.close());
  m.refuseCredential('sk-test-openai-secret');
  m.refuseCredential('sk-ant-test-secret');
  const chat = await fetch(m.url + '/v1/chat/completions', {
    method: 'POST', headers: { authorization: 'Bearer sk-test-openai-secret', 'content-type': 'application/json' }, body: '{"model":"gpt-4o-mini"}',
  });
  t.equal(chat.status, 401);
  t.same(await chat.json(), { error: {
    message: 'Incorrect API key provided: sk-test****cret. You can find your API key at https://platform.openai.com/account/api-keys.',
    type: 'invalid_request_error', param: null, code: 'invalid_api_key',
  } });
  const models = await fetch(m.url + '/v1/models', { headers: { 'x-api-key': 'sk-ant-test-secret', 'anthropic-version': '2023-06-01' } });
  t.equal(models.status, 401);
  t.same(await models.json(), { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } });
  const other = await fetch(m.url + '/v1/models', { headers: { authorization: 'Bearer sk-other' } });
  t.equal(other.status, 200, 'another credential is still served');
  m.acceptCredential('sk-test-openai-secret');
  const again = await fetch(m.url + '/v1/models', { headers: { authorization: 'Bearer sk-test-openai-secret' } });
  t.equal(again.status, 200, 'accepted again');
  m.refuseCredential('sk-test-openai-secret', 403);
  const forbidden = await fetch(m.url + '/v1/models', { headers: { authorization: 'Bearer sk-test-openai-secret' } });
  t.equal(forbidden.status, 403);
  t.match(await forbidden.json(), { error: { type: 'invalid_request_error' } });
  // The status switch answers 401 with the same bodies.
  const switched = await post('/v1/chat/completions', { model: 'x', mock: { status: 401 } }, { authorization: 'Bearer sk-proj-abcdefghijkl' });
  t.equal(switched.status, 401);
  t.match(await json(switched), { error: { message: /^Incorrect API key provided: sk-proj\*\*\*\*ijkl\./, code: 'invalid_api_key' } });
  const switchedMessages = await post('/v1/messages', { model: 'x', max_tokens: 5, mock: { status: 401 } }, { 'x-api-key': 'k' });
  t.same(await json(switchedMessages), { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } });
});

t.test('requests are recorded', async (t) => {
  const before = mock.requests.length;
  const raw = '{"model":"rec","mock":{"inputTokens":1}}';
  await (await post('/v1/chat/completions?x=1', raw, { 'x-test': 'yes' })).text();
  t.equal(mock.requests.length, before + 1);
  const r = mock.requests.at(-1)!;
  t.equal(r.method, 'POST');
  t.equal(r.path, '/v1/chat/completions?x=1');
  t.equal(r.headers['x-test'], 'yes');
  t.equal(r.headers['content-type'], 'application/json');
  t.equal(r.body, raw);
});

t.test('record: false keeps no log; close is idempotent', async (t) => {
  const m = await startMockProvider({ record: false });
  await (await fetch(m.url + '/v1/models')).text();
  t.equal(m.requests.length, 0);
  await m.close();
  await m.close();
});

t.test('usage shape switches: tiers, media tokens, 1-hour cache writes, web searches, unreadable usage', async (t) => {
  const chat = await json(post('/v1/chat/completions', { model: 'm', messages: [], service_tier: 'auto', mock: { audioInputTokens: 3, imageOutputTokens: 2 } }));
  t.equal(chat.service_tier, 'default', '"auto" is answered as the default tier');
  t.equal(chat.usage.prompt_tokens_details.audio_tokens, 3);
  t.equal(chat.usage.completion_tokens_details.image_tokens, 2);
  const tiered = parseSse(await (await post('/v1/chat/completions', { model: 'm', stream: true, messages: [], mock: { serviceTier: 'flex', chunks: 2 } })).text());
  t.ok(tiered.slice(0, -1).every((e) => JSON.parse(e.data).service_tier === 'flex'), 'every chunk names the tier used');
  const resp = await json(post('/v1/responses', { model: 'm', input: 'x', service_tier: 'priority', mock: { webSearchRequests: 2 } }));
  t.equal(resp.service_tier, 'priority');
  t.same(resp.output.map((o: { type: string }) => o.type), ['web_search_call', 'web_search_call', 'message']);
  const msg = await json(post('/v1/messages', { model: 'm', max_tokens: 5, messages: [], mock: { cacheWriteTokens: 10, cacheWrite1hTokens: 4, webSearchRequests: 1, serviceTier: 'standard' } }));
  t.same(msg.usage.cache_creation, { ephemeral_5m_input_tokens: 6, ephemeral_1h_input_tokens: 4 });
  t.same(msg.usage.server_tool_use, { web_search_requests: 1 });
  t.equal(msg.usage.service_tier, 'standard');
  t.same((await json(post('/v1/chat/completions', { model: 'm', messages: [], mock: { usageJson: '{"total_tokens":5}' } }))).usage, { total_tokens: 5 });
  t.notOk('usage' in (await json(post('/v1/responses', { model: 'm', input: 'x', mock: { omitUsage: true } }))));
  const broken = parseSse(await (await post('/v1/messages', { model: 'm', max_tokens: 5, stream: true, messages: [], mock: { malformedUsageEvent: true } })).text());
  t.throws(() => JSON.parse(broken.find((e) => e.event === 'message_delta')!.data), 'the usage event does not parse');
});

t.test('stored responses, as OpenAI keeps them', async (t) => {
  const plain = await json(post('/v1/responses', { model: 'm', input: 'first' }));
  const streamed = parseSse(await (await post('/v1/responses', { model: 'm', stream: true, input: [{ role: 'user', content: 'second' }, { role: 'user', content: 'third' }] })).text());
  const streamedId = JSON.parse(streamed.find((e) => e.event === 'response.completed')!.data).response.id as string;
  t.match(plain.id, /^resp_mock\d+$/);
  t.match(streamedId, /^resp_mock\d+$/);

  const got = await fetch(`${mock.url}/v1/responses/${plain.id}`);
  t.equal(got.status, 200);
  const body = await got.json();
  t.same([body.id, body.object, body.status, body.output[0].content[0].text], [plain.id, 'response', 'completed', TEXT], 'GET: the response object');

  const items = await json(fetch(`${mock.url}/v1/responses/${streamedId}/input_items`));
  t.same([items.object, items.has_more], ['list', false]);
  t.same(items.data.map((i: any) => i.content[0].text), ['third', 'second'], 'input items, newest first');
  t.same([items.first_id, items.last_id], [items.data[0].id, items.data[1].id]);
  const ascending = await json(fetch(`${mock.url}/v1/responses/${streamedId}/input_items?order=asc`));
  t.same(ascending.data.map((i: any) => i.content[0].text), ['second', 'third'], 'order=asc');
  t.same((await json(fetch(`${mock.url}/v1/responses/${plain.id}/input_items`))).data.map((i: any) => [i.type, i.role, i.content]), [['message', 'user', [{ type: 'input_text', text: 'first' }]]], 'a string input is one user message');

  const continued = await post('/v1/responses', { model: 'm', input: 'more', previous_response_id: plain.id });
  t.equal(continued.status, 200, 'a response it made can be continued');
  await continued.text();
  const unknown = await post('/v1/responses', { model: 'm', input: 'more', previous_response_id: 'resp_nope' });
  t.equal(unknown.status, 400, 'one it never made cannot');
  t.same(await unknown.json(), { error: { message: "Previous response with id 'resp_nope' not found.", type: 'invalid_request_error', param: 'previous_response_id', code: 'previous_response_not_found' } });

  const deleted = await fetch(`${mock.url}/v1/responses/${plain.id}`, { method: 'DELETE' });
  t.same([deleted.status, await deleted.json()], [200, { id: plain.id, object: 'response', deleted: true }]);
  for (const [method, path] of [['GET', plain.id], ['DELETE', plain.id], ['GET', `${plain.id}/input_items`], ['GET', 'resp_nope']]) {
    const r = await fetch(`${mock.url}/v1/responses/${path}`, { method });
    t.equal(r.status, 404, `${method} ${path}: 404 once deleted or never made`);
    t.same((await r.json()).error, { message: `Response with id '${path.split('/')[0]}' not found.`, type: 'invalid_request_error', param: null, code: null });
  }
  t.equal((await post('/v1/responses', { model: 'm', input: 'x', previous_response_id: plain.id })).status, 400, 'a deleted response cannot be continued');
  for (const [method, path] of [['POST', `${streamedId}/cancel`], ['DELETE', `${streamedId}/input_items`], ['GET', `${streamedId}/other`]]) {
    const r = await fetch(`${mock.url}/v1/responses/${path}`, { method });
    t.equal((await r.json()).error.code, 'unknown_url', `${method} ${path}: not a route`);
  }
});
