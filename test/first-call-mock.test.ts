/**
 * A newcomer's first call, as the README's first section shows it: `keys create` twice, then
 * `serve --mock` from the same directory with no provider credential anywhere in its
 * environment, then the official `openai` and `@anthropic-ai/sdk` clients on both surfaces,
 * their calls metered and billed. The one departure from the README: `--port 0`, so that
 * parallel tests never collide on 8080.
 *
 * Then what `--mock` promises besides: the listening line says so after the store, every
 * answer (forwarded, the gateway's own errors, health, the usage page and API, a preflight,
 * an answer to a request Node's parser refused, the admin listener's) carries
 * `x-tollgate-mock: 1`, no credential variable is read, and it works with `--workers 2`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import t, { type Test } from 'tap';
import { ADMIN_TOKEN, CLI } from './helpers/harness.js';
import { cleanEnv, tollgateIn } from './helpers/newcomer.js';
import { startRedis } from './helpers/redis.js';
import { exchange, parseResponses, portOf } from './helpers/raw-http.js';
import { pointedAtMock, MOCK_PROVIDER_ENV } from '../src/mock/offline.js';
import { loadConfig } from '../src/config/load.js';
import { buildUpstreams, closeUpstreams } from '../src/forward/pools.js';

/** `tollgate ARGS` run in `cwd`, as typed in a shell there. */
const tollgate = (cwd: string, args: string[]): ReturnType<typeof tollgateIn> => tollgateIn(cwd, args);

interface Served { proc: ChildProcess; base: string; line: string; admin: string | null; stderr(): string }

/** `tollgate serve ARGS` in `cwd`, stopped with the test; resolves once it listens. */
async function serve(t: Test, cwd: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<Served> {
  const proc = spawn(process.execPath, [CLI, 'serve', ...args], { cwd, env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  t.teardown(() => {
    proc.kill('SIGTERM');
    return exited;
  });
  let out = '';
  let err = '';
  proc.stderr!.on('data', (d) => (err += d));
  await new Promise<void>((resolve, reject) => {
    proc.stdout!.on('data', (d) => {
      out += d;
      if (/^tollgate listening on .*\n/m.test(out) && (!args.includes('--admin-port') || /admin listening on \S+/.test(out))) resolve();
    });
    proc.once('exit', (code) => reject(new Error(`serve exited with ${code}: ${err}`)));
  });
  const line = /^tollgate listening on .*$/m.exec(out)![0];
  return { proc, base: /listening on (http:\/\/\S+)/.exec(line)![1]!, line, admin: /admin listening on (\S+)/.exec(out)?.[1] ?? null, stderr: () => err };
}

t.test('the README\'s first section: keys create, serve --mock, both SDKs on both surfaces', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-first-call-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));

  const credit = await tollgate(dir, ['keys', 'create', '--mode', 'credit', '--balance', '5']);
  const token = await tollgate(dir, ['keys', 'create', '--mode', 'token', '--budget', '100000']);
  t.equal(credit.code, 0, credit.stderr);
  t.equal(token.code, 0, token.stderr);
  const CREDIT_KEY = /gw_live_[0-9a-f]{32}/.exec(credit.stdout)![0];
  const TOKEN_KEY = /gw_live_[0-9a-f]{32}/.exec(token.stdout)![0];

  const server = await serve(t, dir, ['--mock', '--port', '0']);
  t.equal(server.line, `tollgate listening on ${server.base} (store: lmdb ${join(dir, 'data')}) (mock providers)`, 'the listening line names the store, then the mock');
  t.notMatch(server.stderr(), /provider_credential_missing/, 'no credential is asked for: none is needed');
  const base = server.base;

  // The README's code, with its base URLs on this server.
  const openai = new OpenAI({ apiKey: CREDIT_KEY, baseURL: `${base}/v1` });
  const { data: chat, response: chatResponse } = await openai.chat.completions.create({ model: 'gpt-5-mini', messages: [{ role: 'user', content: 'Hello' }] }).withResponse();
  t.equal(chat.choices[0]!.message.content, 'tok0 tok1 tok2 tok3 tok4 ', 'openai, credit surface: the mock\'s answer');
  t.equal(chatResponse.headers.get('x-tollgate-mock'), '1');

  const anthropic = new Anthropic({ apiKey: CREDIT_KEY, baseURL: base });
  const { data: message, response: messageResponse } = await anthropic.messages.create({ model: 'claude-sonnet-5-5', max_tokens: 256, messages: [{ role: 'user', content: 'Hello' }] }).withResponse();
  t.equal(message.content[0]!.type === 'text' ? message.content[0]!.text : null, 'tok0 tok1 tok2 tok3 tok4 ', 'anthropic, credit surface');
  t.equal(messageResponse.headers.get('x-tollgate-mock'), '1');

  const openaiT = new OpenAI({ apiKey: TOKEN_KEY, baseURL: `${base}/token/v1` });
  const chatT = await openaiT.chat.completions.create({ model: 'gpt-5-mini', messages: [{ role: 'user', content: 'Hello' }] });
  t.equal(chatT.usage?.total_tokens, 18, 'openai, token surface');
  const anthropicT = new Anthropic({ apiKey: TOKEN_KEY, baseURL: `${base}/token` });
  const messageT = await anthropicT.messages.create({ model: 'claude-sonnet-5-5', max_tokens: 256, messages: [{ role: 'user', content: 'Hello' }] });
  t.equal(messageT.usage.input_tokens + messageT.usage.output_tokens, 18, 'anthropic, token surface');

  // Metered as real calls: the token key has used 2 × 18 tokens, the credit key paid for two.
  const usage = async (key: string): Promise<any> => (await fetch(`${base}/usage/api`, { headers: { authorization: `Bearer ${key}` } })).json();
  const [creditUsage, tokenUsage] = await Promise.all([usage(CREDIT_KEY), usage(TOKEN_KEY)]);
  t.equal(creditUsage.requests.length, 2, 'both credit calls recorded');
  t.ok(creditUsage.key.balanceNanoUsd < 5_000_000_000, 'and charged to the balance');
  t.equal(tokenUsage.key.usedTokens, 36, 'both token calls charged to the budget');

  // The README's curl calls, as curl sends them (its headers, its bodies).
  const curled = [
    await fetch(`${base}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${CREDIT_KEY}`, 'content-type': 'application/json' }, body: '{"model": "gpt-5-mini", "messages": [{"role": "user", "content": "Hello"}]}' }),
    await fetch(`${base}/v1/messages`, { method: 'POST', headers: { 'x-api-key': CREDIT_KEY, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' }, body: '{"model": "claude-sonnet-5-5", "max_tokens": 256, "messages": [{"role": "user", "content": "Hello"}]}' }),
  ];
  t.same(curled.map((r) => r.status), [200, 200], 'the curl calls: answered');
  const [curledChat, curledMessage] = await Promise.all(curled.map((r) => r.json() as Promise<any>));
  t.equal(curledChat.choices[0].message.content, 'tok0 tok1 tok2 tok3 tok4 ');
  t.equal(curledMessage.content[0].text, 'tok0 tok1 tok2 tok3 tok4 ');
  t.equal((await usage(CREDIT_KEY)).requests.length, 4, 'and recorded');

  // The README's way to keep a new key for a script: --json, read with node.
  const json = await tollgate(dir, ['keys', 'create', '--mode', 'credit', '--balance', '5', '--json']);
  t.match(JSON.parse(json.stdout), { key: /^gw_live_[0-9a-f]{32}$/, mode: 'credit' }, 'keys create --json: one object with the key');

  // The model lists are the catalogue's: each SDK lists its provider's entries, the README's
  // example models among them, and nothing of the other provider.
  const catalogue = JSON.parse((await tollgate(dir, ['models', 'list', '--json'])).stdout) as Array<{ id: string; provider: string; enabled: boolean }>;
  const servedBy = (provider: string): string[] => catalogue.filter((m) => m.provider === provider && m.enabled).map((m) => m.id).sort();
  const openaiListed: string[] = [];
  for await (const m of openai.models.list()) openaiListed.push(m.id);
  const anthropicListed: string[] = [];
  for await (const m of anthropic.models.list()) anthropicListed.push(m.id);
  t.ok(openaiListed.includes('gpt-5-mini') && anthropicListed.includes('claude-sonnet-5-5'), 'the README\'s models are listed');
  t.same(openaiListed.sort(), servedBy('openai'), 'openai.models.list(): every OpenAI entry of the catalogue, no other');
  t.same(anthropicListed.sort(), servedBy('anthropic'), 'anthropic.models.list(): every Anthropic entry of the catalogue, no other');
});

t.test('--mock: every answer says so, and no credential variable is read', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-mock-answers-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const made = await tollgate(dir, ['keys', 'create', '--mode', 'credit', '--balance', '1', '--json']);
  const { key } = JSON.parse(made.stdout);
  // A real-looking credential in the environment: named nowhere, never warned about, never used.
  const server = await serve(t, dir, ['--mock', '--port', '0', '--admin-port', '0'], { OPENAI_API_KEY: '', TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN });
  const { base } = server;
  const auth = { authorization: `Bearer ${key}` };
  const answers: Array<[string, Promise<Response>]> = [
    ['forwarded call', fetch(`${base}/v1/chat/completions`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-5-mini', messages: [] }) })],
    ['forwarded stream', fetch(`${base}/v1/chat/completions`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-5-mini', stream: true, messages: [] }) })],
    ['GET /v1/models', fetch(`${base}/v1/models`, { headers: auth })],
    ['a refusal (no key)', fetch(`${base}/v1/chat/completions`, { method: 'POST', body: '{}' })],
    ['a refusal (unknown model)', fetch(`${base}/v1/chat/completions`, { method: 'POST', headers: auth, body: '{"model":"no-such-model"}' })],
    ['unknown endpoint', fetch(`${base}/nowhere`)],
    ['/healthz', fetch(`${base}/healthz`)],
    ['/readyz', fetch(`${base}/readyz`)],
    ['/usage', fetch(`${base}/usage`)],
    ['/usage/api', fetch(`${base}/usage/api`, { headers: auth })],
    ['/usage/api, bad query', fetch(`${base}/usage/api?limit=0`, { headers: auth })],
    ['preflight', fetch(`${base}/v1/chat/completions`, { method: 'OPTIONS', headers: { origin: 'https://example.com', 'access-control-request-method': 'POST' } })],
    ['admin /healthz', fetch(`${server.admin}/healthz`)],
    ['admin API', fetch(`${server.admin}/admin/v1/keys`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })],
    ['admin API refusal', fetch(`${server.admin}/admin/v1/keys`)],
  ];
  for (const [what, answer] of answers) {
    const res = await answer;
    await res.arrayBuffer();
    t.equal(res.headers.get('x-tollgate-mock'), '1', `${what} (${res.status}): x-tollgate-mock: 1`);
  }
  // A request Node's parser refuses is answered on the bare socket: it says so too.
  const { data } = await exchange(portOf(base), 'GET /usage HTTP/1.1\r\nhost: x\r\nbad header\r\n\r\n');
  const [refused] = parseResponses(data).responses;
  t.equal(refused?.status, 400);
  t.equal(refused?.headers['x-tollgate-mock'], '1', 'a malformed request\'s answer carries it too');
  t.notMatch(server.stderr(), /provider_credential_missing/, 'the empty OPENAI_API_KEY is not read, so not warned about');

  // What the gateway sends the in-process mock: its own credential, never a variable of the host.
  const config = pointedAtMock(loadConfig(undefined), 'http://127.0.0.1:1');
  const quiet = { out: () => {}, back: () => {}, rested: () => {} };
  const upstreams = buildUpstreams(config, { ...MOCK_PROVIDER_ENV, OPENAI_API_KEY: 'sk-real', ANTHROPIC_API_KEY: 'sk-ant-real' }, Date.now, quiet);
  for (const u of upstreams.values()) {
    t.equal(u.provider.origin, 'http://127.0.0.1:1', `${u.provider.name} goes to the mock`);
    t.ok(u.usable, `${u.provider.name} is usable`);
    for (const c of u.rotation.credentials) t.notMatch(c.header[1], /real/, `${u.provider.name} never carries the host's credential`);
  }
  await closeUpstreams(upstreams);
});

t.test('serve --mock --workers 2: the primary runs the mock, both workers call it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-mock-workers-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // $5: enough for eight calls in flight at once, each holding its worst case until it ends.
  const { key } = JSON.parse((await tollgate(dir, ['keys', 'create', '--mode', 'credit', '--balance', '5', '--json'])).stdout);
  const server = await serve(t, dir, ['--mock', '--port', '0', '--workers', '2']);
  t.equal(server.line, `tollgate listening on ${server.base} (store: lmdb ${join(dir, 'data')}) (2 workers) (mock providers)`);
  const client = new OpenAI({ apiKey: key, baseURL: `${server.base}/v1`, maxRetries: 0 });
  // At once, so on several connections, which the workers take from the shared socket.
  const answers = await Promise.all(Array.from({ length: 8 }, () => client.chat.completions.create({ model: 'gpt-5-mini', messages: [] }).withResponse()));
  t.ok(answers.every(({ data, response }) => data.choices[0]!.message.content === 'tok0 tok1 tok2 tok3 tok4 ' && response.headers.get('x-tollgate-mock') === '1'), 'every call answered by the mock, and marked');
  // Billed at the catalogue's price: 11 input and 7 output tokens a call (the mock's defaults).
  const models = JSON.parse((await tollgate(dir, ['models', 'list', '--json'])).stdout) as Array<{ id: string; price: { input: number; output: number } }>;
  const { price } = models.find((m) => m.id === 'gpt-5-mini')!;
  const perCallNano = Math.round(11 * price.input * 1000 + 7 * price.output * 1000);
  const list = JSON.parse((await tollgate(dir, ['keys', 'list', '--json'])).stdout);
  t.equal(list[0].balanceUsd, ((5e9 - 8 * perCallNano) / 1e9).toFixed(6), 'all eight billed');
});

t.test('serve --mock on Redis: the listening line names it, keys made there are served', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-mock-redis-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const redis = await startRedis(t);
  const { key } = JSON.parse((await tollgateIn(dir, ['keys', 'create', '--mode', 'token', '--budget', '1000', '--json', '--redis', redis.url])).stdout);
  const server = await serve(t, dir, ['--redis', redis.url, '--mock', '--port', '0']);
  t.equal(server.line, `tollgate listening on ${server.base} (store: redis 127.0.0.1:${redis.port}) (mock providers)`);
  const anthropic = new Anthropic({ apiKey: key, baseURL: `${server.base}/token` });
  const message = await anthropic.messages.create({ model: 'claude-sonnet-5-5', max_tokens: 16, messages: [{ role: 'user', content: 'Hello' }] });
  t.equal(message.usage.input_tokens + message.usage.output_tokens, 18, 'answered by the mock, metered on Redis');
  t.same(readdirSync(dir), [], 'nothing written to the working directory');
});
