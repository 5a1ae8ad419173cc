import t from 'tap';
import { post, startGateway, usageOf } from './helpers/harness.js';

// Issuer commands run in parallel next to a running server (two cluster workers, so three
// processes besides the CLIs hold the environment) while calls keep the workers committing, must
// each land exactly once: no command fails, no key is lost, no top-up is counted twice or dropped,
// and every call is still billed. Each command opens the environment while the workers commit:
// with lmdb-js's prebuilt binding that open could make a concurrent commit be lost
// (scripts/build-lmdb.mjs, bench/lmdb-multiprocess.ts). A race shows up only sometimes, so the
// test makes many writers collide at once, several times over.
t.test('parallel keys create / topup / models commands next to a busy server all land exactly', async (t) => {
  const gw = await startGateway(t, { workers: 2 });
  const shared = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const busy = await gw.createKey(['--mode', 'token', '--budget', '10000000']);
  const callsPerRound = 40;
  const tokensPerCall = 10 + 5;
  const created: Array<{ id: string; key: string }> = [];
  const rounds = 3;
  const width = 12;
  for (let round = 0; round < rounds; round++) {
    const results = await Promise.all([
      ...Array.from({ length: width }, (_, i) => gw.cli(['keys', 'create', '--mode', i % 2 ? 'credit' : 'token', ...(i % 2 ? ['--balance', '2'] : ['--budget', '500']), '--json'])),
      ...Array.from({ length: width }, () => gw.cli(['keys', 'topup', shared.id, '--usd', '0.25'])),
      gw.cli(['models', round % 2 ? 'enable' : 'disable', 'gpt-4o']),
      ...Array.from({ length: callsPerRound }, () => post(`${gw.base}/token/v1/chat/completions`, busy.key, { model: 'gpt-4o-mini', messages: [], mock: { inputTokens: 10, outputTokens: 5 } })),
    ]);
    const commands = results.slice(0, 2 * width + 1) as Array<{ code: number | null; stderr: string }>;
    for (const r of commands) t.equal(r.code, 0, r.stderr || 'command succeeded');
    const calls = results.slice(2 * width + 1) as Array<{ status: number }>;
    t.same(calls.filter((r) => r.status !== 200), [], 'every call during the commands succeeded');
    for (const r of results.slice(0, width) as Array<{ code: number | null; stdout: string }>) if (r.code === 0) created.push(JSON.parse(r.stdout));
  }
  const listed = JSON.parse((await gw.cli(['keys', 'list', '--json'])).stdout) as Array<{ id: string }>;
  t.equal(listed.length, rounds * width + 2, 'every key created is listed');
  for (const k of created) {
    const u = await usageOf(gw.base, k.key);
    t.ok(u.key.prefix && k.key.startsWith(u.key.prefix), `${k.id} is known to the server`);
  }
  const balance = (await usageOf(gw.base, shared.key)).key.balanceNanoUsd;
  t.equal(balance, 1e9 + rounds * width * 250_000_000, 'every top-up counted once');
  const used = (await usageOf(gw.base, busy.key)).key.usedTokens;
  t.equal(used, rounds * callsPerRound * tokensPerCall, 'every call during the commands billed once');
  // The last models command of the last round was 'disable' (round 2 is even).
  const refused = await post(`${gw.base}/v1/chat/completions`, shared.key, { model: 'gpt-4o', messages: [] });
  t.equal(refused.json?.error?.code, 'model_not_available', 'the last models command is in force');
});
