import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { displayPrefix, generateKey, hashKey } from '../auth/keys.js';
import { compileConfig } from '../config/load.js';
import { offlineProviders } from '../mock/offline.js';
import { formatUsd } from '../money.js';
import { createGateway } from '../server.js';
import { openStore } from '../store/store.js';
import type { KeyRecord } from '../domain/types.js';
import { parse } from './common.js';

/**
 * `tollgate demo`: the product end to end, offline. A built-in mock provider stands in for
 * OpenAI and Anthropic; a throw-away data directory holds two fresh keys; a few real HTTP calls
 * go through the gateway and the metered cost of each is shown.
 */
export async function demoCommand(args: string[]): Promise<void> {
  parse(args, {}, 0);
  const out = (line = ''): boolean => process.stdout.write(`${line}\n`);
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-demo-'));
  // The directory goes on every way out: the end, an error, a reader that left (main.ts exits
  // on EPIPE), SIGINT or SIGTERM (their default action would skip 'exit' listeners).
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  process.once('SIGINT', () => process.exit(130));
  process.once('SIGTERM', () => process.exit(143));
  // The built-in providers (OpenAI, Anthropic), served by the mock provider in this process.
  const { mock, config, env } = await offlineProviders(compileConfig({
    models: {
      'gpt-4o-mini': { provider: 'openai', endpoints: ['chat', 'responses'], price: { input: 0.15, output: 0.6, cachedInput: 0.075 } },
      'claude-sonnet-4-5': { provider: 'anthropic', endpoints: ['messages'], price: { input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75 } },
    },
    dataDir: dir,
  }, null));
  const store = await openStore({ backend: 'lmdb', dataDir: dir });
  const gateway = createGateway(config, store, { env });
  await new Promise<void>((resolve) => gateway.server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(gateway.server.address() as AddressInfo).port}`;

  const makeKey = async (mode: 'credit' | 'token', amount: number): Promise<[KeyRecord, string]> => {
    const secret = generateKey();
    const key = await store.createKey({ hash: hashKey(secret), prefix: displayPrefix(secret), name: `demo ${mode}`, mode, models: null, rpm: 60, concurrency: null, expiresAt: null, amount });
    return [key, secret];
  };
  const [credit, creditSecret] = await makeKey('credit', 1_000_000_000);
  const [token, tokenSecret] = await makeKey('token', 10_000);

  const left = async (key: KeyRecord): Promise<string> => {
    const a = (await store.account(key.account))!;
    return a.mode === 'credit' ? `balance $${formatUsd(a.balanceNano)}` : `budget ${a.budgetTokens - a.usedTokens}/${a.budgetTokens} tokens`;
  };

  const call = async (label: string, secret: string, key: KeyRecord, path: string, body: unknown, headers: Record<string, string> = {}): Promise<void> => {
    const res = await fetch(base + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}`, ...headers },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    const requestId = res.headers.get('x-request-id');
    if (res.status >= 400 && text.includes('"code"')) {
      out(`  ${label.padEnd(44)} → ${res.status} ${JSON.parse(text).error.code}`);
      return;
    }
    const record = (await store.usageOf(key, 20)).find((r) => r.requestId === requestId);
    const cost = record?.costNano === null || record === undefined ? `${record?.tokensCharged ?? 0} tokens` : `$${formatUsd(record.costNano)}`;
    const cached = record?.cachedInputTokens ? ` (${record.cachedInputTokens} cached)` : '';
    out(`  ${label.padEnd(44)} → ${res.status}  ${String(record?.inputTokens ?? 0).padStart(5)} in${cached.padEnd(14)} ${String(record?.outputTokens ?? 0).padStart(5)} out  charged ${cost.padEnd(12)} ${await left(key)}`);
  };

  try {
    out('tollgate demo — offline, against a built-in mock provider');
    out(`gateway on ${base}; data in ${dir}`);
    out();
    out(`credit key ${credit.prefix}… with $1.00 (base URL ${base}/v1)`);
    await call('chat  gpt-4o-mini', creditSecret, credit, '/v1/chat/completions', { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello' }], mock: { inputTokens: 12, outputTokens: 34 } });
    await call('chat  gpt-4o-mini, streamed', creditSecret, credit, '/v1/chat/completions', { model: 'gpt-4o-mini', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'Hello' }], mock: { inputTokens: 1200, outputTokens: 350 } });
    await call('responses  gpt-4o-mini', creditSecret, credit, '/v1/responses', { model: 'gpt-4o-mini', input: 'Hello', mock: { inputTokens: 800, outputTokens: 200, cachedTokens: 400 } });
    await call('messages  claude-sonnet-4-5, streamed', creditSecret, credit, '/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 256, stream: true, messages: [{ role: 'user', content: 'Hello' }], mock: { inputTokens: 2000, outputTokens: 500 } }, { 'anthropic-version': '2023-06-01' });
    await call('chat  unknown-model', creditSecret, credit, '/v1/chat/completions', { model: 'unknown-model', messages: [] });
    await call('chat  on the token surface (wrong surface)', creditSecret, credit, '/token/v1/chat/completions', { model: 'gpt-4o-mini', messages: [] });
    out();
    out(`token key ${token.prefix}… with 10,000 tokens (base URL ${base}/token/v1)`);
    await call('chat  gpt-4o-mini', tokenSecret, token, '/token/v1/chat/completions', { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello' }], mock: { inputTokens: 900, outputTokens: 100 } });
    await call('messages  claude-sonnet-4-5', tokenSecret, token, '/token/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 256, messages: [{ role: 'user', content: 'Hi' }], mock: { inputTokens: 4000, outputTokens: 1000, cachedTokens: 3000 } }, { 'anthropic-version': '2023-06-01' });
    out();
    out('This demo\'s gateway stops now, and its keys and data go with it.');
    out('Run the real thing with `tollgate serve` (`npm start` in a checkout; see README.md: providers, keys, SDK base URLs); each key holder');
    out('then reads these figures at {base}/usage, or as JSON: curl -H "Authorization: Bearer <key>" {base}/usage/api');
  } finally {
    await gateway.close(1000);
    await mock.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
