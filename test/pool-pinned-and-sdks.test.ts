/**
 * Calls on a stored response go to the credential that made it (its organisation stores it) and
 * no other, even while another would be chosen; and both official SDKs, plain and streamed, work
 * through a pool whose first credential refuses, with no retry of their own (maxRetries: 0): the
 * gateway sent the call again.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import t from 'tap';
import { post } from './helpers/harness.js';
import { accessLineOf, affinity, receivers, recordOf, startPoolGateway } from './helpers/pool-gateway.js';

t.test('previous_response_id, GET and input_items go to the credential that made the response, and are not sent elsewhere', async (t) => {
  const gw = await startPoolGateway(t, { openai: [{ name: 'org-a' }, { name: 'org-b' }] });
  const [owner, other] = (await affinity(gw, ['org-a'])).get('org-a')!;
  const orgA = gw.mocks['org-a']!;
  const orgB = gw.mocks['org-b']!;
  const made = await post(`${gw.base}/v1/responses`, owner!.key, { model: 'gpt-4o-mini', input: 'hello', mock: { requestId: 'made' } });
  t.equal(made.status, 200, 'a response made');
  t.same(receivers(gw, 'made'), ['org-a'], 'by org-a');
  const id = made.json.id as string;

  // org-a rests for the model (another account's call found its limit).
  orgA.refuseAll(429, { headers: { 'retry-after': '30' }, model: 'gpt-4o-mini' });
  await post(`${gw.base}/v1/chat/completions`, other!.key, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
  const [sentA, sentB] = [orgA.requests.length, orgB.requests.length];
  const continued = await post(`${gw.base}/v1/responses`, owner!.key, { model: 'gpt-4o-mini', input: 'and then?', previous_response_id: id });
  t.equal(continued.status, 429, 'continuing it while org-a rests: org-a\'s 429');
  t.equal(continued.json?.error?.code, 'rate_limit_exceeded', 'its body');
  t.same([orgA.requests.length, orgB.requests.length], [sentA, sentB], 'without a send, and never to org-b (which does not have it)');
  const unsent = await accessLineOf(gw, continued.headers.get('x-request-id')!);
  t.match(unsent, { status: 429, attempts: 0 }, 'recorded with no send');

  // Unmetered calls on the response are not of the model: they go to org-a meanwhile.
  const read = await fetch(`${gw.base}/v1/responses/${id}`, { headers: { authorization: `Bearer ${owner!.key}` } });
  t.equal(read.status, 200, 'GET /responses/{id} answered');
  const items = await fetch(`${gw.base}/v1/responses/${id}/input_items`, { headers: { authorization: `Bearer ${owner!.key}` } });
  t.equal(items.status, 200, 'input_items answered');
  t.equal(orgA.requests.length, sentA + 2, 'both by org-a');
  t.equal(orgB.requests.length, sentB, 'none to org-b');

  orgA.answerAll();
  await gw.advance(30_000);
  const later = await post(`${gw.base}/v1/responses`, owner!.key, { model: 'gpt-4o-mini', input: 'and then?', previous_response_id: id, mock: { requestId: 'continued' } });
  t.equal(later.status, 200, 'after the rest, the continuation is answered');
  t.same(receivers(gw, 'continued'), ['org-a'], 'by org-a');

  // A refusal that would be sent again elsewhere is not, for a call that must go to org-a.
  const refused = await post(`${gw.base}/v1/responses`, owner!.key, { model: 'gpt-4o-mini', input: 'x', previous_response_id: id, mock: { status: 503, requestId: 'pinned-503' } });
  t.equal(refused.status, 503, 'org-a\'s 503 passed on');
  t.same(receivers(gw, 'pinned-503'), ['org-a'], 'not sent to org-b');
  t.match(await recordOf(gw, owner!.key, 'pinned-503'), { attempts: 1, costNanoUsd: 0 }, 'one send, unbilled');

  // Another account (whose calls go to org-a too) cannot continue it, wherever it lives.
  const foreign = await post(`${gw.base}/v1/responses`, other!.key, { model: 'gpt-4o-mini', input: 'x', previous_response_id: id });
  t.equal(foreign.status, 400, 'another account: 400');
  t.equal(foreign.json?.error?.code, 'previous_response_not_found', 'previous_response_not_found');
});

t.test('the OpenAI SDK through a pool whose first credential answers 503: plain and streamed, each sent again and billed once', async (t) => {
  const gw = await startPoolGateway(t, { openai: [{ name: 'org-a' }, { name: 'org-b' }] });
  const onA = (await affinity(gw, ['org-a'])).get('org-a')![0]!;
  gw.mocks['org-a']!.refuseAll(503);
  const client = new OpenAI({ apiKey: onA.key, baseURL: `${gw.base}/v1`, maxRetries: 0 });
  const plain = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], mock: { requestId: 'sdk-plain' } } as any);
  t.equal(plain.choices[0]?.message.role, 'assistant', 'a completion');
  const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true }, mock: { requestId: 'sdk-stream' } } as any);
  let text = '';
  let usage: any = null;
  for await (const chunk of stream as any) {
    text += chunk.choices[0]?.delta?.content ?? '';
    if (chunk.usage) usage = chunk.usage;
  }
  t.ok(text.length > 0, 'a streamed completion');
  t.match(usage, { prompt_tokens: 11, completion_tokens: 7 }, 'with its usage');
  const response = await client.responses.create({ model: 'gpt-4o-mini', input: 'hi', mock: { requestId: 'sdk-responses' } } as any);
  t.equal(response.status, 'completed', 'a response');
  for (const id of ['sdk-plain', 'sdk-stream', 'sdk-responses']) {
    t.same(receivers(gw, id).sort(), ['org-a', 'org-b'], `${id}: refused by org-a, answered by org-b`);
    const record = await recordOf(gw, onA.key, id);
    t.match(record, { status: 200, attempts: 2 }, `${id}: one record, two sends`);
    t.ok(record.costNanoUsd > 0, `${id}: billed`);
  }
});

t.test('the Anthropic SDK through a pool whose first credential is overloaded (529): plain and streamed', async (t) => {
  const gw = await startPoolGateway(t, { anthropic: [{ name: 'ant-a' }, { name: 'ant-b' }] });
  const onA = (await affinity(gw, ['ant-a'], 'claude-haiku-4-5')).get('ant-a')![0]!;
  gw.mocks['ant-a']!.refuseAll(529);
  const client = new Anthropic({ apiKey: onA.key, baseURL: gw.base, maxRetries: 0 });
  const message = await client.messages.create({ model: 'claude-haiku-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }], mock: { requestId: 'ant-plain' } } as any);
  t.equal(message.type, 'message', 'a message');
  const stream = client.messages.stream({ model: 'claude-haiku-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }], mock: { requestId: 'ant-stream' } } as any);
  const final = await stream.finalMessage();
  t.equal(final.type, 'message', 'a streamed message');
  t.equal(final.usage.output_tokens, 7, 'with its usage');
  for (const id of ['ant-plain', 'ant-stream']) {
    t.same(receivers(gw, id).sort(), ['ant-a', 'ant-b'], `${id}: refused by ant-a, answered by ant-b`);
    t.match(await recordOf(gw, onA.key, id), { status: 200, attempts: 2 }, `${id}: one record, two sends`);
  }
  // The retry key (x-api-key) reached each provider as that credential's own.
  for (const name of ['ant-a', 'ant-b']) {
    t.ok(gw.mocks[name]!.requests.every((r) => r.headers['x-api-key'] === gw.secrets[name]), `${name} got its own key only`);
  }
});
