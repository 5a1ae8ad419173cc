/**
 * The single binary (dist/tollgate, `npm run build:binary`) used as a host would use it: the
 * file alone, run from an empty directory with an empty environment (`env -i`, plus the
 * provider secrets where a gateway needs them). It prints its version and the embedded
 * Node.js's; issues keys; serves the official SDKs on both surfaces, plain and streamed, and
 * bills them exactly (values written by the server read back by the CLI, through msgpackr's
 * JavaScript decoder, since the binary carries no msgpackr-extract); runs the keys, models and
 * audit commands; runs two cluster workers that are the binary too, with the admin listener
 * summing their metrics and serving the command line's --admin-url; drains on SIGTERM; runs the demo; and writes its LMDB binding once to
 * the cache directory, under its SHA-256.
 *
 * CI builds the binary before `npm test` (.ci/run); there a missing binary fails this file.
 * Elsewhere it is built here when missing or older than the sources.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import t from 'tap';
import { ADMIN_TOKEN, childPids, post, runCli, startGateway, usageOf, type Binary } from './helpers/harness.js';
import { connectionsOutliveAStoppedWorker } from './helpers/worker-death.js';
import { parseMetrics, seriesOf } from './helpers/prometheus.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BINARY = join(ROOT, 'dist', 'tollgate');
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

/** Prices of the test catalogue in nUSD per token (test/helpers/harness.ts). */
const PRICE = { 'gpt-4o-mini': { input: 150, output: 600 }, 'claude-haiku-4-5': { input: 1000, output: 5000 } };

t.setTimeout(600_000); // a first local build (Node.js download, the LMDB binding) takes a while
ensureBinary();

/** An empty directory to run the binary from, removed after the test. */
function emptyDir(t: { teardown(fn: () => unknown): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-binary-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const sha256 = (path: string): string => createHash('sha256').update(readFileSync(path)).digest('hex');

t.test('--version: tollgate and the embedded Node.js, from an empty environment', async (t) => {
  const r = await runCli(['--version'], {}, 30_000, { executable: BINARY, cwd: emptyDir(t) });
  t.equal(r.code, 0);
  t.equal(r.stderr, '');
  const m = /^tollgate (\S+) \(node v(\d+)\.\d+\.\d+\)\n$/.exec(r.stdout);
  t.ok(m, `one line: ${JSON.stringify(r.stdout)}`);
  t.equal(m?.[1], VERSION, "the package's version");
  t.ok(Number(m?.[2]) >= 24, `an LTS Node.js of line 24 or newer (${m?.[2]}), not the machine's ${process.version}`);
});

t.test('keys and models commands from an empty environment, with the built-in defaults', async (t) => {
  const launch: Binary = { executable: BINARY, cwd: emptyDir(t) };
  const run = async (...args: string[]): Promise<string> => {
    const r = await runCli(args, {}, 30_000, launch);
    t.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  const created = JSON.parse(await run('keys', 'create', '--mode', 'token', '--budget', '1000', '--name', 'alice', '--json'));
  t.match(created.key, /^gw_live_[0-9a-f]{32}$/);
  await run('keys', 'topup', created.prefix, '--tokens', '500');
  await run('keys', 'suspend', created.id);
  const shown = JSON.parse(await run('keys', 'show', created.id, '--json'));
  t.same([shown.name, shown.status, shown.budgetTokens], ['alice', 'suspended', 1500], 'keys show reads back what the commands wrote');
  const rotated = JSON.parse(await run('keys', 'rotate', created.id, '--json'));
  t.not(rotated.key, created.key);
  const models = JSON.parse(await run('models', 'list', '--json')) as { id: string; enabled: boolean }[];
  t.ok(models.length > 0, 'the built-in catalogue');
  const first = models[0]!.id;
  await run('models', 'disable', first);
  const after = JSON.parse(await run('models', 'list', '--json')) as { id: string; enabled: boolean }[];
  t.equal(after.find((m) => m.id === first)?.enabled, false, `${first} switched off`);
  const audit = JSON.parse(await run('audit', '--json')) as unknown[];
  t.ok(audit.length >= 5, `audit lists the issuer changes (${audit.length})`);
  t.ok(existsSync(join(launch.cwd, 'data')), 'the store is ./data');
});

t.test('keys and serve from an empty environment: both SDKs on both surfaces, billed exactly', async (t) => {
  const gw = await startGateway(t, { executable: BINARY });
  const credit = await gw.createKey(['--mode', 'credit', '--balance', '5']);
  const token = await gw.createKey(['--mode', 'token', '--budget', '100000']);
  const calls = [
    { model: 'gpt-4o-mini', stream: false, input: 101, output: 11 },
    { model: 'gpt-4o-mini', stream: true, input: 102, output: 12 },
    { model: 'claude-haiku-4-5', stream: false, input: 201, output: 21 },
    { model: 'claude-haiku-4-5', stream: true, input: 202, output: 22 },
  ] as const;

  for (const [surface, key, openaiBase, anthropicBase] of [
    ['credit', credit.key, `${gw.base}/v1`, gw.base],
    ['token', token.key, `${gw.base}/token/v1`, `${gw.base}/token`],
  ] as const) {
    const openai = new OpenAI({ apiKey: key, baseURL: openaiBase, maxRetries: 0 });
    const anthropic = new Anthropic({ apiKey: key, baseURL: anthropicBase, maxRetries: 0 });
    for (const call of calls) {
      const mock = { inputTokens: call.input, outputTokens: call.output, chunks: 3 };
      let usage: [number, number] | undefined;
      if (call.model === 'gpt-4o-mini' && !call.stream) {
        const completion = await openai.chat.completions.create({ model: call.model, messages: [{ role: 'user', content: 'hi' }], mock } as any);
        t.equal(completion.choices[0]?.message.content, 'tok0 tok1 tok2 ');
        usage = [completion.usage!.prompt_tokens, completion.usage!.completion_tokens];
      } else if (call.model === 'gpt-4o-mini') {
        const stream = await openai.chat.completions.create({ model: call.model, messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true }, mock } as any) as unknown as AsyncIterable<OpenAI.Chat.Completions.ChatCompletionChunk>;
        let text = '';
        for await (const chunk of stream) {
          text += chunk.choices[0]?.delta.content ?? '';
          if (chunk.usage) usage = [chunk.usage.prompt_tokens, chunk.usage.completion_tokens];
        }
        t.equal(text, 'tok0 tok1 tok2 ');
      } else if (!call.stream) {
        const message = await anthropic.messages.create({ model: call.model, max_tokens: 64, messages: [{ role: 'user', content: 'hi' }], mock } as any) as Anthropic.Message;
        t.equal(message.content[0]?.type === 'text' ? message.content[0].text : undefined, 'tok0 tok1 tok2 ');
        usage = [message.usage.input_tokens, message.usage.output_tokens];
      } else {
        const stream = anthropic.messages.stream({ model: call.model, max_tokens: 64, messages: [{ role: 'user', content: 'hi' }], mock } as any);
        let text = '';
        stream.on('text', (delta) => (text += delta));
        const message = await stream.finalMessage();
        t.equal(text, 'tok0 tok1 tok2 ');
        usage = [message.usage.input_tokens, message.usage.output_tokens];
      }
      t.same(usage, [call.input, call.output], `${surface}: ${call.model}${call.stream ? ', streamed' : ''}`);
    }
  }

  const creditUsage = await usageOf(gw.base, credit.key);
  const costs = calls.map((c) => c.input * PRICE[c.model].input + c.output * PRICE[c.model].output);
  t.same(creditUsage.requests.map((r: any) => [r.model, r.stream, r.status, r.inputTokens, r.outputTokens, r.costNanoUsd, r.error]).reverse(),
    calls.map((c, i) => [c.model, c.stream, 200, c.input, c.output, costs[i], null]), 'credit: one record per call, priced exactly');
  const spent = costs.reduce((a, b) => a + b, 0);
  t.equal(creditUsage.key.balanceNanoUsd, 5_000_000_000 - spent, 'credit: the balance moved by exactly the records');

  const tokenUsage = await usageOf(gw.base, token.key);
  const tokens = calls.reduce((s, c) => s + c.input + c.output, 0);
  t.same(tokenUsage.requests.map((r: any) => r.tokensCharged).reverse(), calls.map((c) => c.input + c.output), 'token: one record per call');
  t.equal(tokenUsage.key.usedTokens, tokens, 'token: the budget moved by exactly the records');

  // Another process of the binary reads back what the server wrote.
  const shown = await gw.cli(['keys', 'list', '--json']);
  t.equal(shown.code, 0, shown.stderr);
  const listed = new Map((JSON.parse(shown.stdout) as any[]).map((k) => [k.id, k]));
  t.equal(listed.get(credit.id)?.balanceUsd, creditUsage.key.balanceUsd, 'keys list: the same balance');
  t.equal(listed.get(token.id)?.usedTokens, tokens, 'keys list: the same tokens used');
  t.equal(await gw.stop(), 0, 'exit 0 on SIGTERM');
});

t.test('serve --workers 2: the workers are the binary, and billing and metrics stay exact across them', async (t) => {
  const gw = await startGateway(t, { executable: BINARY, workers: 2, admin: true });
  const workers = childPids(gw.proc.pid!);
  t.equal(workers.length, 2, 'two workers');
  for (const pid of workers) t.equal(readlinkSync(`/proc/${pid}/exe`), realpathSync(BINARY), `worker ${pid} runs the binary`);
  // Enough for the holds of 40 calls in flight at once (each holds its worst case until it settles).
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '100']);
  const replies = await Promise.all(Array.from({ length: 40 }, () => post(`${gw.base}/v1/chat/completions`, key, { model: 'gpt-4o-mini', messages: [], mock: { inputTokens: 10, outputTokens: 5 } })));
  t.same(replies.map((r) => r.status), replies.map(() => 200), 'every call answered');
  const usage = await usageOf(gw.base, key, '?limit=100');
  t.equal(usage.requests.length, 40, 'every call recorded');
  t.equal(usage.key.balanceNanoUsd, 100_000_000_000 - 40 * (10 * 150 + 5 * 600), 'balance exact');
  // The admin listener (prom-client, summed across the workers over cluster IPC).
  t.equal((await fetch(`${gw.admin}/healthz`)).status, 200, 'admin /healthz');
  const metrics = parseMetrics(await (await fetch(`${gw.admin}/metrics`)).text());
  const served = seriesOf(metrics, 'tollgate_requests_total').filter((s) => s.labels.endpoint === 'chat' && s.labels.status === '200');
  t.equal(served.reduce((sum, s) => sum + s.value, 0), 40, 'tollgate_requests_total counts the 40 calls');
  // The command line through the admin API (--admin-url), from another empty directory.
  const remote = await runCli(['keys', 'list', '--json', '--admin-url', gw.admin!], { TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN }, 30_000, { executable: BINARY, cwd: emptyDir(t) });
  t.equal(remote.code, 0, remote.stderr);
  t.equal(JSON.parse(remote.stdout)[0]?.balanceUsd, usage.key.balanceUsd, 'keys list --admin-url: the same balance');
  t.equal(await gw.stop(), 0, 'exit 0 on SIGTERM');
});

t.test('serve --workers 2: connections opened while a worker is stopped, then killed, are all answered by the other', async (t) => {
  await connectionsOutliveAStoppedWorker(t, await startGateway(t, { executable: BINARY, workers: 2 }));
});

t.test('SIGTERM drains the calls in flight, which are billed, then exits 0', async (t) => {
  const gw = await startGateway(t, { executable: BINARY });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const slow = post(`${gw.base}/v1/chat/completions`, key, { model: 'gpt-4o-mini', messages: [], mock: { delayMs: 1500, inputTokens: 100, outputTokens: 10 } });
  const stream = post(`${gw.base}/v1/messages`, key, { model: 'claude-haiku-4-5', max_tokens: 8, stream: true, messages: [], mock: { chunks: 10, chunkDelayMs: 120 } }, { 'anthropic-version': '2023-06-01' });
  // Both calls have reached the provider: they are in flight when the signal comes.
  while (gw.mock.requests.filter((r) => r.method === 'POST').length < 2) await new Promise((r) => setTimeout(r, 10));
  gw.proc.kill('SIGTERM');
  const [plain, streamed] = await Promise.all([slow, stream]);
  t.equal(plain.status, 200, 'the plain call completed');
  t.equal(streamed.status, 200);
  t.match(streamed.text, /event: message_stop/, 'the stream ran to its end');
  t.equal(await gw.stop(), 0, 'exit 0');
  const shown = await gw.cli(['keys', 'list', '--json']);
  t.equal(JSON.parse(shown.stdout)[0].balanceUsd, ((1e9 - (100 * 150 + 10 * 600) - (11 * 1000 + 7 * 5000)) / 1e9).toFixed(6), 'both calls billed');
});

t.test('demo from an empty environment', async (t) => {
  const r = await runCli(['demo'], {}, 60_000, { executable: BINARY, cwd: emptyDir(t) });
  t.equal(r.code, 0, r.stderr);
  t.equal((r.stdout.match(/→ 200 /g) ?? []).length, 6, 'six calls answered');
  t.match(r.stdout, /chat {2}gpt-4o-mini +→ 200 +12 in +34 out {2}charged \$0\.000022 +balance \$0\.999978/, 'metered and billed');
  t.match(r.stdout, /budget 1000\/10000 tokens/);
});

t.test('the LMDB binding is written once to the cache directory, named by its SHA-256, and replaced when altered', async (t) => {
  // Under the checkout, not /tmp: a noexec /tmp would send the binary to its next directory.
  mkdirSync(join(ROOT, '.cache'), { recursive: true });
  const cache = mkdtempSync(join(ROOT, '.cache', 'xdg-test-'));
  t.teardown(() => rmSync(cache, { recursive: true, force: true }));
  const launch: Binary = { executable: BINARY, cwd: emptyDir(t) };
  const run = async (): Promise<void> => {
    // keys create: the command that opens (and here makes) a store, so loads the binding.
    const r = await runCli(['keys', 'create', '--mode', 'credit', '--balance', '1'], { XDG_CACHE_HOME: cache }, 30_000, launch);
    t.equal(r.code, 0, r.stderr);
  };
  await run();
  const files = readdirSync(join(cache, 'tollgate'));
  t.equal(files.length, 1, `one file: ${files.join(', ')}`);
  const file = join(cache, 'tollgate', files[0]!);
  t.equal(files[0], `lmdb-${sha256(file)}.node`, 'named by its SHA-256');
  const written = statSync(file).mtimeMs;
  await run();
  t.equal(statSync(file).mtimeMs, written, 'not written again');
  writeFileSync(file, 'not a shared object');
  await run();
  t.equal(files[0], `lmdb-${sha256(file)}.node`, 'an altered file is replaced before it is loaded');
});

/** dist/tollgate, built here when missing or older than what it is built from (not in CI). */
function ensureBinary(): void {
  const inputs = [join(ROOT, 'src'), join(ROOT, 'scripts'), join(ROOT, 'package-lock.json')];
  const newest = Math.max(...inputs.flatMap((p) => filesUnder(p)).map((f) => statSync(f).mtimeMs));
  const fresh = existsSync(BINARY) && statSync(BINARY).mtimeMs >= newest;
  if (fresh) return;
  if (process.env.CI) {
    throw new Error(`${BINARY} is ${existsSync(BINARY) ? 'older than the sources' : 'missing'}: CI builds it with \`npm run build:binary\` before \`npm test\` (.ci/run)`);
  }
  // Its output goes to stderr: stdout is this file's TAP stream.
  const build = spawnSync('npm', ['run', 'build:binary'], { cwd: ROOT, stdio: ['ignore', 2, 2] });
  if (build.status !== 0) throw new Error(`npm run build:binary failed (exit ${build.status})`);
}

function filesUnder(path: string): string[] {
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
}
