/**
 * While `tollgate serve` runs, every `tollgate keys …` / `tollgate models …` change is obeyed on
 * the very next request: no restart, no signal. Run twice: the command line on the data
 * directory, and the same commands through the admin API (`--admin-url`).
 */
import t, { type Test } from 'tap';
import { CLI_MODES, post, startGateway, usageOf, type Harness } from './helpers/harness.js';

const chatBody = (model = 'gpt-4o-mini'): Record<string, unknown> => ({ model, messages: [{ role: 'user', content: 'hi' }] });

async function chat(gw: Harness, key: string, model?: string, surface = '/v1'): Promise<{ status: number; code: string | undefined }> {
  const r = await post(`${gw.base}${surface}/chat/completions`, key, chatBody(model));
  return { status: r.status, code: r.json?.error?.code };
}

async function ok(t: Test, gw: Harness, args: string[]): Promise<string> {
  const r = await gw.cli(args);
  t.equal(r.code, 0, `tollgate ${args.join(' ')} exits 0`);
  return r.stdout;
}

for (const mode of CLI_MODES) t.test(`CLI changes take effect on the next request of a running server (${mode} command line)`, async (t) => {
  const gw = await startGateway(t, { cliMode: mode });
  const a = await gw.createKey(['--mode', 'credit', '--balance', '1', '--name', 'live']);
  t.same(await chat(gw, a.key), { status: 200, code: undefined });

  await t.test('KEY-REF by 12-character prefix', async (t) => {
    t.equal(a.prefix.length, 12);
    await ok(t, gw, ['keys', 'suspend', a.prefix]);
    t.same(await chat(gw, a.key), { status: 403, code: 'key_suspended' });
    await ok(t, gw, ['keys', 'resume', a.prefix]);
    t.same(await chat(gw, a.key), { status: 200, code: undefined });
    const shown = JSON.parse(await ok(t, gw, ['keys', 'show', a.prefix, '--json']));
    t.equal(shown.id, a.id);
  });

  await t.test('suspend and resume (the same key value works again)', async (t) => {
    await ok(t, gw, ['keys', 'suspend', a.id]);
    t.same(await chat(gw, a.key), { status: 403, code: 'key_suspended' });
    const u = await usageOf(gw.base, a.key);
    t.equal(u.key.status, 'suspended', 'the usage checker shows it too');
    await ok(t, gw, ['keys', 'resume', a.id]);
    t.same(await chat(gw, a.key), { status: 200, code: undefined });
  });

  await t.test('topup --usd on a zero-balance key', async (t) => {
    const z = await gw.createKey(['--mode', 'credit', '--balance', '0']);
    t.same(await chat(gw, z.key), { status: 402, code: 'insufficient_credit' });
    await ok(t, gw, ['keys', 'topup', z.id, '--usd', '0.5']);
    t.equal((await usageOf(gw.base, z.key)).key.balanceNanoUsd, 500_000_000);
    t.same(await chat(gw, z.key), { status: 200, code: undefined });
  });

  await t.test('topup --tokens on an exhausted token key', async (t) => {
    const k = await gw.createKey(['--mode', 'token', '--budget', '10']);
    t.same(await chat(gw, k.key, undefined, '/token/v1'), { status: 200, code: undefined }, 'a call of 18 tokens exhausts 10');
    t.same(await chat(gw, k.key, undefined, '/token/v1'), { status: 402, code: 'token_budget_exhausted' });
    await ok(t, gw, ['keys', 'topup', k.id, '--tokens', '1000']);
    const u = await usageOf(gw.base, k.key);
    t.match(u.key, { budgetTokens: 1010, usedTokens: 18, remainingTokens: 992 });
    t.same(await chat(gw, k.key, undefined, '/token/v1'), { status: 200, code: undefined });
  });

  await t.test('extend: a past date expires the key, never revives it', async (t) => {
    const r = await gw.cli(['keys', 'extend', a.id, '--expires', '2020-01-01']);
    t.equal(r.code, 0);
    t.match(r.stderr, /past/, 'the CLI warns');
    t.same(await chat(gw, a.key), { status: 403, code: 'key_expired' });
    await ok(t, gw, ['keys', 'extend', a.id, '--expires', 'never']);
    t.same(await chat(gw, a.key), { status: 200, code: undefined });
    t.equal((await usageOf(gw.base, a.key)).key.expiresAt, null);
  });

  await t.test('set --models / --all-models', async (t) => {
    await ok(t, gw, ['keys', 'set', a.id, '--models', 'gpt-4o']);
    t.same(await chat(gw, a.key, 'gpt-4o-mini'), { status: 403, code: 'model_not_allowed' });
    t.same(await chat(gw, a.key, 'gpt-4o'), { status: 200, code: undefined });
    t.same((await usageOf(gw.base, a.key)).key.models, ['gpt-4o']);
    await ok(t, gw, ['keys', 'set', a.id, '--all-models']);
    t.same(await chat(gw, a.key, 'gpt-4o-mini'), { status: 200, code: undefined });
    t.equal((await usageOf(gw.base, a.key)).key.models, null);
  });

  await t.test('set --rpm / --no-rpm', async (t) => {
    await ok(t, gw, ['keys', 'set', a.id, '--rpm', '1']);
    t.same(await chat(gw, a.key), { status: 200, code: undefined }, 'first call in the window');
    t.same(await chat(gw, a.key), { status: 429, code: 'rate_limit_exceeded' }, 'second call is over');
    await ok(t, gw, ['keys', 'set', a.id, '--no-rpm']);
    t.same(await chat(gw, a.key), { status: 200, code: undefined });
    t.equal((await usageOf(gw.base, a.key)).key.rateLimitRpm, null);
  });

  await t.test('rotate: a new key with its own id, sharing the same balance', async (t) => {
    const r = await gw.cli(['keys', 'rotate', a.id, '--json']);
    t.equal(r.code, 0);
    const lines = r.stdout.trim().split('\n');
    t.equal(lines.length, 1, 'one JSON object');
    const b = JSON.parse(lines[0]!);
    t.match(b.key, /^gw_live_[0-9a-f]{32}$/);
    t.not(b.key, a.key);
    t.not(b.id, a.id, 'its own id');
    t.equal(b.prefix, b.key.slice(0, 12));
    t.equal(b.mode, 'credit');

    t.same(await chat(gw, b.key), { status: 200, code: undefined }, 'the new key works');
    t.same(await chat(gw, a.key), { status: 200, code: undefined }, 'the old key still works');

    const before = (await usageOf(gw.base, a.key)).key.balanceNanoUsd;
    t.equal((await usageOf(gw.base, b.key)).key.balanceNanoUsd, before, 'both show the same balance');
    const spend = await post(`${gw.base}/v1/chat/completions`, b.key, { ...chatBody(), mock: { inputTokens: 1000, outputTokens: 1000 } });
    t.equal(spend.status, 200);
    const cost = 1000 * 150 + 1000 * 600;
    t.equal((await usageOf(gw.base, a.key)).key.balanceNanoUsd, before - cost, 'spending with the new key drops the old key\'s balance');
    t.equal((await usageOf(gw.base, b.key)).key.balanceNanoUsd, before - cost);

    await ok(t, gw, ['keys', 'suspend', a.id]);
    t.same(await chat(gw, a.key), { status: 403, code: 'key_suspended' }, 'the old key is suspended');
    t.same(await chat(gw, b.key), { status: 200, code: undefined }, 'the new key still works');
  });

  await t.test('models disable / enable', async (t) => {
    const c = await gw.createKey(['--mode', 'credit', '--balance', '1']);
    await ok(t, gw, ['models', 'disable', 'gpt-4o-mini']);
    t.same(await chat(gw, c.key, 'gpt-4o-mini'), { status: 403, code: 'model_not_available' });
    const resp = await post(`${gw.base}/v1/responses`, c.key, { model: 'gpt-4o-mini', input: 'hi' });
    t.equal(resp.json?.error?.code, 'model_not_available', 'on every endpoint');
    t.same(await chat(gw, c.key, 'gpt-4o'), { status: 200, code: undefined }, 'other models unaffected');
    await ok(t, gw, ['models', 'enable', 'gpt-4o-mini']);
    t.same(await chat(gw, c.key, 'gpt-4o-mini'), { status: 200, code: undefined });
    // A model switched off in the file can be switched on at run time.
    t.same(await chat(gw, c.key, 'switched-off'), { status: 403, code: 'model_not_available' });
    await ok(t, gw, ['models', 'enable', 'switched-off']);
    t.same(await chat(gw, c.key, 'switched-off'), { status: 200, code: undefined });
  });

  t.equal(gw.proc.exitCode, null, 'the server ran throughout, never restarted');
});
