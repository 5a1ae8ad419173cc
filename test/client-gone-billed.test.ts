import t from 'tap';
import { eventually, startCall } from './helpers/client-gone.js';
import { defaultConfig, startGateway, usageOf } from './helpers/harness.js';

// A client that leaves mid-stream, or before a plain answer arrives, is still billed: the
// gateway keeps reading the provider's answer and bills the usage the provider reports. The mock
// holds each answer until the client has left (and the gateway has seen it go), so the order of
// the two is fixed, never raced.

const formats = [
  { name: 'chat', path: '/v1/chat/completions', body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] } },
  { name: 'responses', path: '/v1/responses', body: { model: 'gpt-4o-mini', input: 'hi' } },
  { name: 'messages', path: '/v1/messages', body: { model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] } },
];

for (const f of formats) {
  t.test(`${f.name}: client leaves mid-stream → billed from the provider's usage, not estimated`, async (t) => {
    const gw = await startGateway(t);
    const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
    const mock = { inputTokens: 300, outputTokens: 90, chunks: 12, hold: 'rest', holdAfter: 3 };
    const client = await startCall(gw.base + f.path, key, { ...f.body, stream: true, mock });
    await client.events(2);
    await client.leave();
    gw.mock.release('rest');
    const record = await eventually(async () => (await usageOf(gw.base, key)).requests[0]);
    t.match(record, { clientGone: true, estimated: false, error: null, inputTokens: 300, outputTokens: 90 });
    const u = await usageOf(gw.base, key);
    t.equal(u.key.balanceNanoUsd, 1e9 - record.costNanoUsd);
    t.ok(record.costNanoUsd > 0);
  });

  t.test(`${f.name}: client leaves before a plain answer arrives → billed exactly`, async (t) => {
    const gw = await startGateway(t);
    const { key } = await gw.createKey(['--mode', 'token', '--budget', '10000']);
    const mock = { inputTokens: 40, outputTokens: 60, hold: 'answer' };
    const client = await startCall(gw.base + f.path.replace('/v1', '/token/v1'), key, { ...f.body, mock });
    await gw.mock.waitHeld('answer');
    await client.leave();
    gw.mock.release('answer');
    const record = await eventually(async () => (await usageOf(gw.base, key)).requests[0]);
    t.match(record, { clientGone: true, estimated: false, tokensCharged: 100 });
    t.equal((await usageOf(gw.base, key)).key.usedTokens, 100);
  });
}

t.test('when the grace period passes first, the provider is stopped and an estimate is billed, marked as one', async (t) => {
  const gw = await startGateway(t, {
    config: (url) => ({ ...defaultConfig(url), limits: { clientGoneGraceMs: 600 } }),
  });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  for (const f of formats) {
    // 100 events, held after the fifth and never released: only the gateway's grace period ends it.
    const mock = { inputTokens: 500, outputTokens: 900, chunks: 100, hold: 'never', holdAfter: 5 };
    const client = await startCall(gw.base + f.path, key, { ...f.body, stream: true, mock });
    await client.events(1);
    await client.leave();
  }
  const records = await eventually(async () => {
    const r = (await usageOf(gw.base, key)).requests;
    return r.length === 3 ? r : undefined;
  });
  for (const r of records) {
    t.match(r, { clientGone: true, estimated: true, estimateReason: 'client_gone', error: null }, r.endpoint);
    t.ok(r.outputTokens > 0 && r.outputTokens < 900, `${r.endpoint}: output estimated from the text seen so far (${r.outputTokens})`);
    t.ok(r.costNanoUsd > 0, `${r.endpoint}: the estimate is billed`);
  }
  const messages = records.find((r: { endpoint: string }) => r.endpoint === 'messages');
  t.equal(messages.inputTokens, 500, 'Messages streams report input first: that figure is used');
  const chat = records.find((r: { endpoint: string }) => r.endpoint === 'chat');
  t.ok(chat.inputTokens >= 1 && chat.inputTokens < 20, `chat input estimated from the prompt text (${chat.inputTokens})`);
  const u = await usageOf(gw.base, key);
  t.equal(u.key.balanceNanoUsd, 1e9 - records.reduce((s: number, r: { costNanoUsd: number }) => s + r.costNanoUsd, 0));
});

t.test('when the grace period passes before the provider answers at all, the estimate is recorded with status 499, not 502', async (t) => {
  const gw = await startGateway(t, {
    config: (url) => ({ ...defaultConfig(url), limits: { clientGoneGraceMs: 300 } }),
  });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  // The provider holds its answer (an error) and never sends it; the client leaves first.
  const client = await startCall(gw.base + formats[0]!.path, key, { ...formats[0]!.body, mock: { status: 400, hold: 'never' } });
  await gw.mock.waitHeld('never');
  await client.leave();
  const record = await eventually(async () => (await usageOf(gw.base, key)).requests[0]);
  t.match(record, { status: 499, clientGone: true, estimated: true, error: null, outputTokens: 0 });
  t.ok(record.inputTokens > 0, 'input estimated from the request');
  t.equal((await usageOf(gw.base, key)).key.balanceNanoUsd, 1e9 - record.costNanoUsd);
});
