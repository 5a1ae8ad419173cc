import t from 'tap';
import { startGateway, usageOf } from './helpers/harness.js';

// A stream the provider cuts, or that carries an error event, must not look complete to the
// client: its connection is destroyed, and the record is a provider error at zero cost.

const calls = [
  { name: 'chat', path: '/v1/chat/completions', body: { model: 'gpt-4o-mini', stream: true, stream_options: { include_usage: true }, messages: [] }, failure: 'upstream_stream_error' },
  { name: 'responses', path: '/v1/responses', body: { model: 'gpt-4o-mini', stream: true, input: 'hi' }, failure: 'upstream_response_failed' },
  { name: 'messages', path: '/v1/messages', body: { model: 'claude-sonnet-4-5', stream: true, max_tokens: 64, messages: [] }, failure: 'upstream_stream_error' },
];

/** Reads a streamed body to its end; resolves to the text and whether it ended cleanly. */
async function readStream(res: Response): Promise<{ text: string; clean: boolean }> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { text, clean: true };
      text += decoder.decode(value, { stream: true });
    }
  } catch {
    return { text, clean: false };
  }
}

for (const call of calls) {
  t.test(`${call.name}: a cut stream is destroyed towards the client and recorded as upstream_cut`, async (t) => {
    const gw = await startGateway(t);
    const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
    const res = await fetch(gw.base + call.path, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...call.body, mock: { chunks: 10, cutAfter: 3, chunkDelayMs: 5 } }),
    });
    t.equal(res.status, 200);
    const { text, clean } = await readStream(res);
    t.equal(clean, false, 'the client sees an aborted body, not a clean end');
    t.match(text, /tok2/, 'what arrived before the cut was passed on');
    t.notMatch(text, /tok3/);
    const u = await usageOf(gw.base, key);
    t.match(u.requests[0], { error: 'upstream_cut', costNanoUsd: 0, inputTokens: 0, outputTokens: 0 });
    t.equal(u.key.balanceUsd, '1.000000');
  });

  t.test(`${call.name}: an error event inside the stream ends in a destroyed connection and a zero-cost error record`, async (t) => {
    const gw = await startGateway(t);
    const { key } = await gw.createKey(['--mode', 'token', '--budget', '5000']);
    const res = await fetch(gw.base + call.path.replace('/v1', '/token/v1'), {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...call.body, mock: { chunks: 3, errorEvent: true } }),
    });
    const { text, clean } = await readStream(res);
    t.equal(clean, false);
    t.match(text, /error|failed/, 'the error event itself reached the client');
    const u = await usageOf(gw.base, key);
    t.match(u.requests[0], { error: call.failure, tokensCharged: 0 });
    t.equal(u.key.usedTokens, 0);
  });
}
