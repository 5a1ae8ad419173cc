/**
 * The official `@anthropic-ai/sdk`, unchanged, as a client of both billing surfaces. Its base
 * URL is the gateway's `{base}` (credit) or `{base}/token` (token), since the SDK appends
 * `/v1/messages` itself. Messages plain, through the stream helper and as a raw stream; the
 * model list comes from the Anthropic catalogue provider in Anthropic's shape; the key works
 * as the SDK's `apiKey`, as its `authToken` (Bearer) and as a hand-set `x-api-key` header.
 */
import t from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import { startGateway, usageOf } from './helpers/harness.js';

/** Text the mock provider produces for `chunks` pieces: "tok0 tok1 …". */
function mockText(chunks: number): string {
  let s = '';
  for (let i = 0; i < chunks; i++) s += `tok${i} `;
  return s;
}

const MODEL = 'claude-haiku-4-5';
/** claude-haiku-4-5 in the test catalogue: 1000 nUSD per input token, 5000 per output token. */
const PRICE = { input: 1000, output: 5000 };

interface Expected { stream: boolean; input: number; output: number }

const surfaces = [
  { mode: 'credit', path: '', keyArgs: ['--mode', 'credit', '--balance', '5'] },
  { mode: 'token', path: '/token', keyArgs: ['--mode', 'token', '--budget', '100000'] },
] as const;

for (const surface of surfaces) {
  t.test(`anthropic SDK on the ${surface.mode} surface (base${surface.path || ' URL'})`, async (t) => {
    const gw = await startGateway(t);
    const { key } = await gw.createKey([...surface.keyArgs]);
    const baseURL = `${gw.base}${surface.path}`;
    /** Headers of every request the SDK sent, to see which carrier held the key. */
    const sent: Headers[] = [];
    const recordingFetch = (input: any, init?: any): Promise<Response> => {
      sent.push(new Headers(init?.headers));
      return fetch(input, init);
    };
    const client = new Anthropic({ apiKey: key, baseURL, maxRetries: 0 });
    const expected: Expected[] = [];

    await t.test('messages.create, plain', async (t) => {
      const message = await client.messages.create({
        model: MODEL,
        max_tokens: 64,
        messages: [{ role: 'user', content: 'hello' }],
        mock: { inputTokens: 201, outputTokens: 21, chunks: 3 },
      } as any);
      t.equal(message.type, 'message');
      t.equal(message.role, 'assistant');
      t.equal(message.model, MODEL);
      const block = message.content[0];
      t.equal(block?.type === 'text' ? block.text : undefined, mockText(3));
      t.equal(message.usage.input_tokens, 201);
      t.equal(message.usage.output_tokens, 21);
      expected.push({ stream: false, input: 201, output: 21 });
    });

    await t.test('messages.stream with text events and finalMessage()', async (t) => {
      const stream = client.messages.stream({
        model: MODEL,
        max_tokens: 64,
        messages: [{ role: 'user', content: 'hello' }],
        mock: { inputTokens: 202, outputTokens: 22, chunks: 4 },
      } as any);
      let text = '';
      stream.on('text', (delta) => {
        text += delta;
      });
      const final = await stream.finalMessage();
      t.equal(text, mockText(4));
      const block = final.content[0];
      t.equal(block?.type === 'text' ? block.text : undefined, mockText(4));
      t.equal(final.stop_reason, 'end_turn');
      t.equal(final.usage.input_tokens, 202);
      t.equal(final.usage.output_tokens, 22);
      expected.push({ stream: true, input: 202, output: 22 });
    });

    await t.test('messages.create with stream: true', async (t) => {
      const stream = await client.messages.create({
        model: MODEL,
        max_tokens: 64,
        messages: [{ role: 'user', content: 'hello' }],
        stream: true,
        mock: { inputTokens: 203, outputTokens: 23, chunks: 5 },
      } as any) as unknown as AsyncIterable<Anthropic.Messages.RawMessageStreamEvent>;
      let text = '';
      const types: string[] = [];
      let output: number | undefined;
      let input: number | undefined;
      for await (const event of stream) {
        types.push(event.type);
        if (event.type === 'message_start') input = event.message.usage.input_tokens;
        if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text;
        if (event.type === 'message_delta') output = event.usage.output_tokens;
      }
      t.equal(text, mockText(5));
      t.equal(types[0], 'message_start');
      t.equal(types[types.length - 1], 'message_stop');
      t.equal(input, 203);
      t.equal(output, 23);
      expected.push({ stream: true, input: 203, output: 23 });
    });

    await t.test('models.list answers from the Anthropic catalogue, in its shape', async (t) => {
      const ids: string[] = [];
      for await (const model of client.models.list()) {
        t.equal(model.type, 'model');
        t.type(model.display_name, 'string');
        t.type(model.created_at, 'string');
        ids.push(model.id);
      }
      t.ok(ids.includes(MODEL));
      t.notOk(ids.includes('gpt-4o-mini'), 'not the OpenAI-style catalogue');
    });

    await t.test('an authToken (Bearer) client works', async (t) => {
      const bearer = new Anthropic({ authToken: key, baseURL, maxRetries: 0, fetch: recordingFetch });
      const message = await bearer.messages.create({
        model: MODEL,
        max_tokens: 64,
        messages: [{ role: 'user', content: 'hello' }],
        mock: { inputTokens: 204, outputTokens: 24 },
      } as any);
      t.equal(message.usage.input_tokens, 204);
      t.equal(sent.at(-1)?.get('authorization'), `Bearer ${key}`);
      expected.push({ stream: false, input: 204, output: 24 });
    });

    await t.test('a client sending the key in x-api-key works', async (t) => {
      const xApiKey = new Anthropic({
        baseURL,
        maxRetries: 0,
        fetch: recordingFetch,
        defaultHeaders: { 'X-Api-Key': key, Authorization: null },
      });
      const message = await xApiKey.messages.create({
        model: MODEL,
        max_tokens: 64,
        messages: [{ role: 'user', content: 'hello' }],
        mock: { inputTokens: 205, outputTokens: 25 },
      } as any);
      t.equal(message.usage.output_tokens, 25);
      const headers = sent.at(-1);
      t.equal(headers?.get('x-api-key'), key, 'the key travelled in x-api-key');
      t.equal(headers?.get('authorization'), null, 'and in no Authorization header');
      expected.push({ stream: false, input: 205, output: 25 });
    });

    await t.test('the usage checker shows the calls and the account moved', async (t) => {
      const usage = await usageOf(gw.base, key);
      t.equal(usage.key.mode, surface.mode);
      const records: any[] = usage.requests;
      t.equal(records.length, expected.length, 'one record per messages call, none for models.list');
      for (const e of expected) {
        const r = records.find((x) => x.inputTokens === e.input);
        t.ok(r, `record with ${e.input} input tokens`);
        if (!r) continue;
        t.equal(r.endpoint, 'messages');
        t.equal(r.model, MODEL);
        t.equal(r.status, 200);
        t.equal(r.error, null);
        t.equal(r.estimated, false);
        t.equal(r.stream, e.stream);
        t.equal(r.outputTokens, e.output);
        t.equal(r.tokensCharged, e.input + e.output);
        if (surface.mode === 'credit') t.equal(r.costNanoUsd, e.input * PRICE.input + e.output * PRICE.output);
        else t.equal(r.costNanoUsd, null);
      }
      if (surface.mode === 'credit') {
        const spent = expected.reduce((sum, e) => sum + e.input * PRICE.input + e.output * PRICE.output, 0);
        t.equal(usage.key.balanceNanoUsd, 5_000_000_000 - spent, 'balance fell by exactly the priced calls');
      } else {
        const used = expected.reduce((sum, e) => sum + e.input + e.output, 0);
        t.equal(usage.key.usedTokens, used, 'budget drawn by every input and output token');
        t.equal(usage.key.remainingTokens, 100_000 - used);
      }
    });
  });
}
