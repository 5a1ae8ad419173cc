import t from 'tap';
import { leverConfig } from './helpers/lever-models.js';
import { post, startGateway, usageOf } from './helpers/harness.js';

// Audio and image tokens, read from the usage details, are billed at their own rates and kept
// in the record. On a model whose price has no such rate they are billed at the price's
// highest rate (never the text rate) and named. Chat and Responses, plain and streamed.

const FORMATS = [
  { name: 'chat', path: '/v1/chat/completions', body: { messages: [{ role: 'user', content: 'hi' }] }, stream: { stream: true, stream_options: { include_usage: true } } },
  { name: 'responses', path: '/v1/responses', body: { input: 'hi' }, stream: { stream: true } },
];
const MODES = [false, true];

t.test('audio (chat) and image tokens at their own rates, each kind in the record', async (t) => {
  const gw = await startGateway(t, { config: leverConfig });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '10']);
  for (const f of FORMATS) {
    for (const stream of MODES) {
      const label = `${f.name} ${stream ? 'streamed' : 'plain'}`;
      const audio = f.name === 'chat' ? { audioInputTokens: 300, audioOutputTokens: 40 } : {};
      const mock = { inputTokens: 1000, outputTokens: 200, imageInputTokens: 100, imageOutputTokens: 60, ...audio };
      const res = await post(gw.base + f.path, key, { model: 'media', ...f.body, ...(stream ? f.stream : {}), mock });
      t.equal(res.status, 200, label);
      const r = (await usageOf(gw.base, key)).requests[0];
      const aIn = f.name === 'chat' ? 300 : 0;
      const aOut = f.name === 'chat' ? 40 : 0;
      // media: text in 1000, audio in 40000, image in 10000, text out 4000, audio out 80000, image out 40000
      const expected = (1000 - aIn - 100) * 1000 + aIn * 40000 + 100 * 10000 + (200 - aOut - 60) * 4000 + aOut * 80000 + 60 * 40000;
      t.equal(r.costNanoUsd, expected, `${label}: each kind at its rate`);
      t.match(r, { audioInputTokens: aIn, audioOutputTokens: aOut, imageInputTokens: 100, imageOutputTokens: 60, worstCase: null, estimated: false }, label);
    }
  }
});

t.test('without audio or image rates: those tokens at the highest rate, named', async (t) => {
  const gw = await startGateway(t, { config: leverConfig });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '10']);
  for (const f of FORMATS) {
    for (const stream of MODES) {
      const label = `${f.name} ${stream ? 'streamed' : 'plain'}`;
      const audio = f.name === 'chat' ? { audioInputTokens: 300 } : {};
      const mock = { inputTokens: 1000, outputTokens: 200, imageOutputTokens: 60, ...audio };
      const res = await post(gw.base + f.path, key, { model: 'base-only', ...f.body, ...(stream ? f.stream : {}), mock });
      t.equal(res.status, 200, label);
      const r = (await usageOf(gw.base, key)).requests[0];
      const aIn = f.name === 'chat' ? 300 : 0;
      // base-only: input 1000, output 4000, highest 4000
      t.equal(r.costNanoUsd, (1000 - aIn) * 1000 + aIn * 4000 + 140 * 4000 + 60 * 4000, `${label}: unpriced kinds at 4000`);
      t.equal(r.worstCase, f.name === 'chat' ? 'audioInput,imageOutput' : 'imageOutput', label);
    }
  }
});
