/**
 * The official `openai` SDK, unchanged, as a client of both billing surfaces: Chat Completions
 * (plain and streamed, with and without usage in the stream), Responses (plain, the stream
 * helper and a raw stream) and the model list; afterwards the usage checker shows one record
 * per inference call and the balance or budget moved by exactly what the records say.
 */
import t from 'tap';
import OpenAI from 'openai';
import { startGateway, usageOf } from './helpers/harness.js';

/** Text the mock provider produces for `chunks` pieces: "tok0 tok1 …". */
function mockText(chunks: number): string {
  let s = '';
  for (let i = 0; i < chunks; i++) s += `tok${i} `;
  return s;
}

/** gpt-4o-mini in the test catalogue: 150 nUSD per input token, 600 per output token. */
const PRICE = { input: 150, output: 600 };

interface Expected {
  endpoint: string;
  stream: boolean;
  input: number;
  output: number;
  /** false: the client did not ask for usage in its stream */
  usageInStream?: boolean;
}

const surfaces = [
  { mode: 'credit', path: '/v1', keyArgs: ['--mode', 'credit', '--balance', '5'] },
  { mode: 'token', path: '/token/v1', keyArgs: ['--mode', 'token', '--budget', '100000'] },
] as const;

for (const surface of surfaces) {
  t.test(`openai SDK on the ${surface.mode} surface (${surface.path})`, async (t) => {
    const gw = await startGateway(t);
    const { key } = await gw.createKey([...surface.keyArgs]);
    const client = new OpenAI({ apiKey: key, baseURL: `${gw.base}${surface.path}`, maxRetries: 0 });
    const expected: Expected[] = [];

    await t.test('chat.completions.create, plain', async (t) => {
      const completion = await client.chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'hello' }],
        mock: { inputTokens: 101, outputTokens: 11, chunks: 3 },
      } as any);
      t.equal(completion.object, 'chat.completion');
      t.equal(completion.choices[0]?.message.content, mockText(3));
      t.same(completion.usage && { p: completion.usage.prompt_tokens, c: completion.usage.completion_tokens, t: completion.usage.total_tokens }, { p: 101, c: 11, t: 112 });
      t.ok(completion._request_id, 'x-request-id reaches the SDK');
      expected.push({ endpoint: 'chat', stream: false, input: 101, output: 11 });
    });

    await t.test('chat.completions.create, streamed with include_usage', async (t) => {
      const stream = await client.chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'hello' }],
        stream: true,
        stream_options: { include_usage: true },
        mock: { inputTokens: 102, outputTokens: 12, chunks: 4 },
      } as any) as unknown as AsyncIterable<OpenAI.Chat.Completions.ChatCompletionChunk>;
      let text = '';
      let usage: OpenAI.CompletionUsage | null | undefined;
      let chunks = 0;
      for await (const chunk of stream) {
        chunks++;
        text += chunk.choices[0]?.delta.content ?? '';
        if (chunk.usage) usage = chunk.usage;
      }
      t.ok(chunks > 4, 'several chunks arrived');
      t.equal(text, mockText(4));
      t.equal(usage?.prompt_tokens, 102);
      t.equal(usage?.completion_tokens, 12);
      expected.push({ endpoint: 'chat', stream: true, input: 102, output: 12 });
    });

    await t.test('chat.completions.create, streamed without include_usage', async (t) => {
      const stream = await client.chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'hello' }],
        stream: true,
        mock: { inputTokens: 106, outputTokens: 16, chunks: 6 },
      } as any) as unknown as AsyncIterable<OpenAI.Chat.Completions.ChatCompletionChunk>;
      let text = '';
      let sawUsage = false;
      let finish: string | null | undefined;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        if (chunk.usage) sawUsage = true;
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
      t.equal(text, mockText(6), 'the stream completes with all of its text');
      t.equal(finish, 'stop');
      t.notOk(sawUsage, 'no usage chunk was asked for, none arrives');
      expected.push({ endpoint: 'chat', stream: true, input: 106, output: 16, usageInStream: false });
    });

    await t.test('responses.create, plain', async (t) => {
      const response = await client.responses.create({
        model: 'gpt-4o-mini',
        input: 'hello',
        mock: { inputTokens: 103, outputTokens: 13, chunks: 2 },
      } as any);
      t.equal(response.object, 'response');
      t.equal(response.status, 'completed');
      t.equal(response.output_text, mockText(2));
      t.equal(response.usage?.input_tokens, 103);
      t.equal(response.usage?.output_tokens, 13);
      expected.push({ endpoint: 'responses', stream: false, input: 103, output: 13 });
    });

    await t.test('responses.stream helper', async (t) => {
      const stream = client.responses.stream({
        model: 'gpt-4o-mini',
        input: 'hello',
        mock: { inputTokens: 104, outputTokens: 14, chunks: 5 },
      } as any);
      let deltas = '';
      stream.on('response.output_text.delta', (event) => {
        deltas += event.delta;
      });
      const final = await stream.finalResponse();
      t.equal(deltas, mockText(5));
      t.equal(final.status, 'completed');
      t.equal(final.output_text, mockText(5));
      t.equal(final.usage?.input_tokens, 104);
      t.equal(final.usage?.output_tokens, 14);
      expected.push({ endpoint: 'responses', stream: true, input: 104, output: 14 });
    });

    await t.test('responses.create with stream: true', async (t) => {
      const stream = await client.responses.create({
        model: 'gpt-4o-mini',
        input: 'hello',
        stream: true,
        mock: { inputTokens: 105, outputTokens: 15, chunks: 3 },
      } as any) as unknown as AsyncIterable<OpenAI.Responses.ResponseStreamEvent>;
      let text = '';
      let completed: OpenAI.Responses.Response | undefined;
      for await (const event of stream) {
        if (event.type === 'response.output_text.delta') text += event.delta;
        if (event.type === 'response.completed') completed = event.response;
      }
      t.equal(text, mockText(3));
      t.equal(completed?.usage?.input_tokens, 105);
      t.equal(completed?.usage?.output_tokens, 15);
      expected.push({ endpoint: 'responses', stream: true, input: 105, output: 15 });
    });

    await t.test('models.list', async (t) => {
      const ids: string[] = [];
      for await (const model of client.models.list()) {
        t.equal(model.object, 'model');
        ids.push(model.id);
      }
      t.ok(ids.includes('gpt-4o-mini'), 'the provider catalogue comes back');
    });

    await t.test('the usage checker shows the calls and the account moved', async (t) => {
      const usage = await usageOf(gw.base, key);
      t.equal(usage.key.mode, surface.mode);
      const records: any[] = usage.requests;
      t.equal(records.length, expected.length, 'one record per inference call, none for models.list');
      const reported = expected.filter((e) => e.usageInStream !== false);
      for (const e of reported) {
        const r = records.find((x) => x.inputTokens === e.input);
        t.match(r, { endpoint: e.endpoint, stream: e.stream, model: 'gpt-4o-mini', status: 200, error: null }, `record with ${e.input} input tokens`);
        t.match(r, { outputTokens: e.output, estimated: false, tokensCharged: e.input + e.output });
        t.equal(r?.costNanoUsd, surface.mode === 'credit' ? e.input * PRICE.input + e.output * PRICE.output : null);
      }
      // The stream whose client asked for no usage is still recorded and charged: from the
      // provider's counts when the gateway obtained them, else from an estimate.
      const rest = records.filter((x) => !reported.some((e) => e.input === x.inputTokens));
      t.equal(rest.length, 1);
      const unreported = expected.find((e) => e.usageInStream === false)!;
      t.match(rest[0], { endpoint: 'chat', stream: true, model: 'gpt-4o-mini', status: 200, error: null });
      t.ok(rest[0]?.tokensCharged > 0, 'a stream without usage is still charged');
      if (rest[0]?.estimated === false) t.match(rest[0], { inputTokens: unreported.input, outputTokens: unreported.output });
      if (surface.mode === 'credit') t.ok(rest[0]?.costNanoUsd > 0);
      if (surface.mode === 'credit') {
        const spent = records.reduce((sum, r) => sum + r.costNanoUsd, 0);
        t.ok(spent > 0);
        t.equal(usage.key.balanceNanoUsd, 5_000_000_000 - spent, 'balance fell by the sum of the records');
      } else {
        const used = records.reduce((sum, r) => sum + r.tokensCharged, 0);
        t.equal(usage.key.usedTokens, used, 'budget drawn by the sum of the records');
        t.equal(usage.key.remainingTokens, 100_000 - used);
      }
    });
  });
}
