/**
 * Traffic covering every outcome a request can have, N times each, and what the metrics and
 * the access log must then say about it. Shared by metrics-exact, access-log and
 * no-key-in-output.
 */
import type { Harness } from './harness.js';

export interface Expected {
  /** `surface|endpoint|status|code` → count */
  requests: Map<string, number>;
  /** `surface|endpoint|kind` → tokens */
  tokens: Map<string, number>;
  /** endpoint → nano-dollars billed */
  billedNano: Map<string, number>;
  /** `endpoint|stream` → requests */
  durations: Map<string, number>;
  /** every full key used, to search for in the output */
  secrets: string[];
  total: number;
}

/** Reads a body to its end; a reset connection (a cut stream) is not an error here. */
async function drain(res: Response): Promise<void> {
  try {
    await res.arrayBuffer();
  } catch {
    // the gateway destroys the connection of a stream the provider cut
  }
}

const add = (m: Map<string, number>, k: string, n = 1): void => {
  m.set(k, (m.get(k) ?? 0) + n);
};

export async function sendEveryOutcome(gw: Harness, n: number): Promise<Expected> {
  const e: Expected = { requests: new Map(), tokens: new Map(), billedNano: new Map(), durations: new Map(), secrets: [], total: 0 };
  const credit = await gw.createKey(['--mode', 'credit', '--balance', '10']);
  const token = await gw.createKey(['--mode', 'token', '--budget', '1000000']);
  const broke = await gw.createKey(['--mode', 'credit', '--balance', '0']);
  const suspended = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const limited = await gw.createKey(['--mode', 'credit', '--balance', '1', '--rpm', '1']);
  const narrow = await gw.createKey(['--mode', 'credit', '--balance', '1', '--models', 'gpt-4o']);
  if ((await gw.cli(['keys', 'suspend', suspended.id])).code !== 0) throw new Error('suspend failed');
  e.secrets.push(credit.key, token.key, broke.key, suspended.key, limited.key, narrow.key);

  const call = async (path: string, key: string | null, body: unknown, method = 'POST'): Promise<void> => {
    const res = await fetch(gw.base + path, {
      method,
      headers: { ...(key === null ? {} : { authorization: `Bearer ${key}` }), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    await drain(res);
    e.total++;
  };
  const chat = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], ...extra });
  const expect = (surface: string, endpoint: string, status: number, code: string, stream = false): void => {
    add(e.requests, `${surface}|${endpoint}|${status}|${code}`);
    add(e.durations, `${endpoint}|${stream}`);
  };

  // The one admitted call of the rate-limited key first.
  await call('/v1/chat/completions', limited.key, chat({ mock: { inputTokens: 1, outputTokens: 1 } }));
  expect('credit', 'chat', 200, 'ok');
  add(e.tokens, 'credit|chat|input', 1);
  add(e.tokens, 'credit|chat|output', 1);
  add(e.billedNano, 'chat', 150 + 600);

  for (let i = 0; i < n; i++) {
    // Success, plain: 10 in (4 cached), 5 out at gpt-4o-mini's 150/75/600 nUSD per token.
    await call('/v1/chat/completions', credit.key, chat({ mock: { inputTokens: 10, outputTokens: 5, cachedTokens: 4 } }));
    expect('credit', 'chat', 200, 'ok');
    add(e.tokens, 'credit|chat|input', 10);
    add(e.tokens, 'credit|chat|output', 5);
    add(e.tokens, 'credit|chat|cached_input', 4);
    add(e.billedNano, 'chat', 6 * 150 + 4 * 75 + 5 * 600);
    // Success, streamed (Messages): 20 in, 8 out at 3000/15000 nUSD.
    await call('/v1/messages', credit.key, { model: 'claude-sonnet-4-5', max_tokens: 16, stream: true, messages: [], mock: { inputTokens: 20, outputTokens: 8 } });
    expect('credit', 'messages', 200, 'ok', true);
    add(e.tokens, 'credit|messages|input', 20);
    add(e.tokens, 'credit|messages|output', 8);
    add(e.billedNano, 'messages', 20 * 3000 + 8 * 15000);
    // Token surface, Responses, with reasoning tokens.
    await call('/token/v1/responses', token.key, { model: 'gpt-4o-mini', input: 'hi', mock: { inputTokens: 7, outputTokens: 3, reasoningTokens: 2 } });
    expect('token', 'responses', 200, 'ok');
    add(e.tokens, 'token|responses|input', 7);
    add(e.tokens, 'token|responses|output', 3);
    add(e.tokens, 'token|responses|reasoning', 2);
    // The provider's own error status.
    await call('/v1/chat/completions', credit.key, chat({ mock: { status: 503 } }));
    expect('credit', 'chat', 503, 'upstream');
    // A stream the provider cuts: 200 was sent, then the connection is reset.
    await call('/v1/chat/completions', credit.key, chat({ stream: true, stream_options: { include_usage: true }, mock: { chunks: 6, cutAfter: 2 } }));
    expect('credit', 'chat', 200, 'upstream', true);
    // The gateway's refusals.
    await call('/v1/nowhere', credit.key, chat());
    expect('none', 'other', 404, 'unknown_endpoint');
    await call('/v1/chat/completions', null, chat());
    expect('credit', 'chat', 401, 'missing_api_key');
    await call('/v1/chat/completions', `gw_live_${'0'.repeat(32)}`, chat());
    expect('credit', 'chat', 401, 'invalid_api_key');
    await call('/v1/chat/completions', suspended.key, chat());
    expect('credit', 'chat', 403, 'key_suspended');
    await call('/v1/chat/completions', broke.key, chat());
    expect('credit', 'chat', 402, 'insufficient_credit');
    await call('/v1/chat/completions', limited.key, chat());
    expect('credit', 'chat', 429, 'rate_limit_exceeded');
    await call('/v1/chat/completions', credit.key, 'not json');
    expect('credit', 'chat', 400, 'model_required');
    await call('/v1/chat/completions', narrow.key, chat());
    expect('credit', 'chat', 403, 'model_not_allowed');
    await call('/v1/chat/completions', credit.key, chat({ model: 'no-such-model' }));
    expect('credit', 'chat', 403, 'model_not_available');
    // Not inference: the catalogue and the usage API.
    await call('/v1/models', credit.key, undefined, 'GET');
    expect('credit', 'models', 200, 'ok');
    await call('/usage/api', credit.key, undefined, 'GET');
    expect('none', 'usage', 200, 'ok');
  }
  return e;
}
