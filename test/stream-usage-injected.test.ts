import t from 'tap';
import { normaliseIds } from './helpers/normalise.js';
import { post, startGateway, usageOf } from './helpers/harness.js';

// A chat stream whose client did not ask for usage is still metered exactly: the gateway asks
// the provider for usage and removes the one usage-only chunk from what that client receives.

const body = { model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'hi' }], mock: { inputTokens: 120, outputTokens: 45, cachedTokens: 20, chunks: 6 } };

function events(text: string): string[] {
  return text.split('\n\n').filter((e) => e.length > 0);
}

t.test('without include_usage: the client gets the provider stream minus exactly the usage chunk, billed exactly', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const res = await post(`${gw.base}/v1/chat/completions`, key, body);
  t.equal(res.status, 200);

  // What the provider was sent: the client's bytes with the option spliced in after the brace.
  const forwarded = gw.mock.requests.at(-1)!.body;
  t.equal(forwarded, `{"stream_options":{"include_usage":true},${JSON.stringify(body).slice(1)}`);

  // What the provider sends for that body, fetched directly.
  const direct = await fetch(`${gw.mock.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: forwarded });
  const providerEvents = events(normaliseIds(await direct.text()));
  const usageEvents = providerEvents.filter((e) => /"choices":\[\]/.test(e));
  t.equal(usageEvents.length, 1, 'the provider stream has one usage-only chunk');
  const expected = providerEvents.filter((e) => e !== usageEvents[0]).join('\n\n') + '\n\n';
  t.equal(normaliseIds(res.text), expected, 'client bytes = provider bytes minus the usage chunk');
  t.notMatch(res.text, /"choices":\[\]/);
  t.match(res.text, /data: \[DONE\]\n\n$/);

  const u = await usageOf(gw.base, key);
  t.match(u.requests[0], { inputTokens: 120, outputTokens: 45, cachedInputTokens: 20, estimated: false, error: null });
  // 100 fresh × 150 + 20 cached × 75 + 45 × 600 nUSD
  t.equal(u.requests[0].costNanoUsd, 100 * 150 + 20 * 75 + 45 * 600);
});

t.test('with include_usage: the stream is untouched and the body forwarded byte for byte', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'token', '--budget', '100000']);
  const asked = JSON.stringify({ ...body, stream_options: { include_usage: true } });
  const res = await post(`${gw.base}/token/v1/chat/completions`, key, asked);
  t.equal(gw.mock.requests.at(-1)!.body, asked);
  const direct = await fetch(`${gw.mock.url}/v1/chat/completions`, { method: 'POST', body: asked });
  t.equal(normaliseIds(res.text), normaliseIds(await direct.text()));
  t.match(res.text, /"choices":\[\]/, 'the client that asked sees its usage chunk');
  const u = await usageOf(gw.base, key);
  t.match(u.requests[0], { tokensCharged: 165, estimated: false });
});

t.test('stream_options without include_usage: the flag is set, the client options kept, the chunk hidden', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const res = await post(`${gw.base}/v1/chat/completions`, key, { ...body, stream_options: { include_usage: false, include_obfuscation: false } });
  t.equal(res.status, 200);
  const forwarded = JSON.parse(gw.mock.requests.at(-1)!.body);
  t.same(forwarded.stream_options, { include_usage: true, include_obfuscation: false });
  t.same(forwarded.messages, body.messages);
  t.notMatch(res.text, /"choices":\[\]/);
  const u = await usageOf(gw.base, key);
  t.match(u.requests[0], { inputTokens: 120, outputTokens: 45, estimated: false });
});

t.test('a usage chunk split across network writes is still removed whole', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  // chunkDelayMs makes the mock write every event separately, so chunk boundaries move.
  const res = await post(`${gw.base}/v1/chat/completions`, key, { ...body, mock: { ...body.mock, chunkDelayMs: 5 } });
  t.notMatch(res.text, /"choices":\[\]/);
  t.equal(events(res.text).length, 6 + 3, 'role chunk, 6 deltas, finish chunk, [DONE]');
});
