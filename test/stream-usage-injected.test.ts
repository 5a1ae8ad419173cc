import t from 'tap';
import { normaliseIds } from './helpers/normalise.js';
import { post, startGateway, usageOf } from './helpers/harness.js';

// A chat stream whose client did not ask for usage is still metered exactly: the gateway asks
// the provider for usage, and the client receives exactly the bytes the provider sends a client
// that did not ask: the usage-only chunk removed and the "usage":null member taken out of every
// other chunk, nothing else changed (compared with what the mock sends for the client's own body).

const body = { model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'hi' }], mock: { inputTokens: 120, outputTokens: 45, cachedTokens: 20, chunks: 6 } };

function events(text: string): string[] {
  return text.split('\n\n').filter((e) => e.length > 0);
}

/** What the mock provider sends a client that sent `clientBody` itself. */
async function direct(mockUrl: string, clientBody: unknown): Promise<string> {
  const res = await fetch(`${mockUrl}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(clientBody) });
  return normaliseIds(await res.text());
}

t.test('without include_usage: the client gets byte for byte what the provider sends a client that did not ask, billed exactly', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const res = await post(`${gw.base}/v1/chat/completions`, key, body);
  t.equal(res.status, 200);

  // What the provider was sent: the client's bytes with the option spliced in after the brace.
  const forwarded = gw.mock.requests.at(-1)!.body;
  t.equal(forwarded, `{"stream_options":{"include_usage":true},${JSON.stringify(body).slice(1)}`);

  // The provider's stream for that body has the usage chunk and "usage":null everywhere…
  const asked = await direct(gw.mock.url, JSON.parse(forwarded));
  t.equal(events(asked).filter((e) => /"choices":\[\]/.test(e)).length, 1, 'the stream the gateway got has one usage-only chunk');
  t.equal(events(asked).filter((e) => e.includes('"usage":null')).length, 8, 'and "usage":null in every other chunk');
  // …and the client gets what the provider sends a client that did not ask.
  const unasked = await direct(gw.mock.url, body);
  t.notMatch(unasked, /"usage"/, 'the provider sends no usage member to a client that did not ask');
  t.equal(normaliseIds(res.text), unasked, 'client bytes = the provider stream for a client that did not ask');

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

t.test('events split across network writes: still byte for byte what the provider sends a client that did not ask', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  // chunkDelayMs makes the mock write every event separately, so the gateway reads them apart.
  const slow = { ...body, mock: { ...body.mock, chunkDelayMs: 5 } };
  const res = await post(`${gw.base}/v1/chat/completions`, key, slow);
  t.equal(normaliseIds(res.text), await direct(gw.mock.url, slow));
  t.equal(events(res.text).length, 6 + 3, 'role chunk, 6 deltas, finish chunk, [DONE]');
});

t.test('a service tier in every chunk: only the usage members go, the tier stays where the provider put it', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'token', '--budget', '100000']);
  const tiered = { ...body, mock: { ...body.mock, serviceTier: 'default' } };
  const res = await post(`${gw.base}/token/v1/chat/completions`, key, tiered);
  t.match(res.text, /"service_tier":"default"/);
  t.equal(normaliseIds(res.text), await direct(gw.mock.url, tiered));
});
