/**
 * A fault inside the gateway is its own: logged with the request id the client got, counted
 * (code="internal_error"), recorded against the key at zero cost, answered 500 internal_error
 * type api_error — never 502 upstream_unavailable, which would blame the provider.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { generateKey } from '../src/auth/keys.js';
import { startMockProvider } from './fixtures/mock-provider.js';
import { post, usageOf } from './helpers/harness.js';
import { parseMetrics } from './helpers/prometheus.js';

t.test('an internal exception: 500 internal_error, logged, counted, recorded at zero cost', async (t) => {
  const mock = await startMockProvider();
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-fault-'));
  const key = generateKey();
  const proc = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./fixtures/faulty-gateway.ts', import.meta.url)), mock.url, join(dir, 'data')], {
    env: { ...process.env, TEST_KEY: key, OPENAI_API_KEY: 'sk-test', ANTHROPIC_API_KEY: 'sk-ant' }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stdout.on('data', (d) => (out += d));
  proc.stderr.on('data', (d) => (err += d));
  t.teardown(async () => {
    proc.kill('SIGTERM');
    await new Promise((r) => proc.once('exit', r));
    await mock.close();
    rmSync(dir, { recursive: true, force: true });
  });
  for (let i = 0; i < 300 && !/admin listening on/.test(out); i++) await new Promise((r) => setTimeout(r, 50));
  const base = /tollgate listening on (\S+)/.exec(out)![1]!;
  const admin = /admin listening on (\S+)/.exec(out)![1]!;

  const r = await post(`${base}/v1/chat/completions`, key, { model: 'chat-only', messages: [] });
  t.equal(r.status, 500);
  t.same(r.json, { error: { message: r.json.error.message, type: 'api_error', code: 'internal_error', param: null } });
  const requestId = r.headers.get('x-request-id')!;
  t.ok(requestId, 'the client got a request id');
  t.equal(mock.requests.length, 0, 'nothing was forwarded');

  const logged = err.split('\n').filter((l) => l.includes('"internal_error"')).map((l) => JSON.parse(l));
  t.equal(logged.length, 1, 'logged once, on stderr');
  t.match(logged[0], { level: 'error', event: 'internal_error', requestId, keyPrefix: key.slice(0, 12) }, 'with the same request id');
  t.match(logged[0].error, /injected fault/, 'and the exception');

  const usage = await usageOf(base, key);
  t.match(usage.requests[0], { requestId, status: 500, error: 'internal_error', costNanoUsd: 0, tokensCharged: 0 }, 'recorded against the key at zero cost');
  t.equal(usage.key.balanceNanoUsd, 1e9, 'nothing charged');

  const metrics = parseMetrics(await (await fetch(`${admin}/metrics`)).text());
  t.equal(metrics.get('tollgate_requests_total{surface="credit",endpoint="chat",status="500",code="internal_error"}'), 1, 'counted');
  const line = out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).find((l) => l.requestId === requestId);
  t.match(line, { status: 500, code: 'internal_error', keyPrefix: key.slice(0, 12) }, 'and in the access log');

  const fine = await post(`${base}/v1/chat/completions`, key, { model: 'gpt-4o-mini', messages: [] });
  t.equal(fine.status, 200, 'other calls are unaffected');
});
