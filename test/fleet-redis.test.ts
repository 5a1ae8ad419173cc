/**
 * A fleet: three `tollgate serve` processes, each in a directory of its own (its own config
 * file, its own data directory, nothing shared on disk), on one redis-server, with calls spread
 * across them. They behave as one gateway:
 * - 30 calls against an rpm-10 key admit exactly 10;
 * - 300 concurrent calls debit exactly the sum of their records;
 * - a suspend from a fourth process is obeyed by all three on their next call;
 * - kill -9 of one host mid-stream: its calls are settled by the survivors, once each, nothing
 *   stays held;
 * - Redis killed and restarted under traffic (AOF, appendfsync always): calls meanwhile are
 *   refused 503 store_unavailable and never forwarded, /readyz says 503, traffic resumes by
 *   itself, and no settled charge is lost.
 */
import t, { type Test } from 'tap';
import { eventually } from './helpers/client-gone.js';
import { allRecords, post, runCli, startGateway, usageOf, type Harness } from './helpers/harness.js';
import { startRedis, type RedisServer } from './helpers/redis.js';

const CALL = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };
const COST = 11 * 150 + 7 * 600; // the mock's default usage on gpt-4o-mini, nUSD
const LONG = { model: 'gpt-4o-mini', max_tokens: 100, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'Tell me a long story.' }], mock: { chunks: 1000, chunkDelayMs: 50 } };

async function fleet(t: Test, redis: RedisServer): Promise<Harness[]> {
  const hosts: Harness[] = [];
  for (let i = 0; i < 3; i++) hosts.push(await startGateway(t, { backend: 'redis', redisServer: redis }));
  return hosts;
}

const forwarded = (hosts: Harness[]): number => hosts.reduce((n, h) => n + h.mock.requests.length, 0);

t.test('three hosts, one Redis: one gateway', async (t) => {
  const redis = await startRedis(t, { aof: true });
  const hosts = await fleet(t, redis);

  await t.test('30 calls against 10 rpm, spread over three hosts: exactly 10 admitted', async (t) => {
    const { key } = await hosts[0]!.createKey(['--mode', 'credit', '--balance', '1', '--rpm', '10']);
    const before = forwarded(hosts);
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => post(`${hosts[i % 3]!.base}/v1/chat/completions`, key, CALL)));
    t.equal(results.filter((r) => r.status === 200).length, 10, 'exactly 10 admitted');
    t.ok(results.filter((r) => r.status === 429).every((r) => r.json.error.code === 'rate_limit_exceeded' && Number(r.headers.get('retry-after')) >= 1), 'the other 20: 429 with retry-after');
    t.equal(results.filter((r) => r.status === 429).length, 20);
    t.equal(forwarded(hosts) - before, 10, 'the providers received exactly 10');
    const u = await usageOf(hosts[1]!.base, key);
    t.equal(u.requests.length, 10, 'ten records, seen from any host');
    t.equal(u.key.balanceNanoUsd, 1e9 - 10 * COST, 'ten charges');
  });

  await t.test('300 concurrent calls over three hosts debit exactly their sum', async (t) => {
    const { key } = await hosts[0]!.createKey(['--mode', 'credit', '--balance', '10']);
    const token = await hosts[0]!.createKey(['--mode', 'token', '--budget', '1000000']);
    // A small output cap, so that 150 holds in flight at once fit the balance and the budget.
    const small = { ...CALL, max_tokens: 50 };
    const results = await Promise.all(Array.from({ length: 300 }, (_, i) => i % 2 === 0
      ? post(`${hosts[i % 3]!.base}/v1/chat/completions`, key, small)
      : post(`${hosts[i % 3]!.base}/token/v1/chat/completions`, token.key, small)));
    t.equal(results.filter((r) => r.status === 200).length, 300, 'all answered');
    const credit = await allRecords(hosts[2]!.base, key, 500);
    t.equal(credit.records.length, 150, '150 credit records');
    t.equal(new Set(credit.records.map((r: any) => r.callId)).size, 150, 'none twice');
    const u = await usageOf(hosts[2]!.base, key);
    t.equal(u.key.balanceNanoUsd, 10e9 - credit.records.reduce((s: number, r: any) => s + r.costNanoUsd, 0), 'balance = opening − the records');
    t.equal(u.key.balanceNanoUsd, 10e9 - 150 * COST, '= 150 charges exactly');
    t.equal(u.key.heldNanoUsd, 0, 'nothing held');
    const tu = await usageOf(hosts[0]!.base, token.key);
    t.equal(tu.key.usedTokens, 150 * 18, 'token key: 150 × 18 tokens exactly');
    t.equal(tu.key.heldTokens, 0);
  });

  await t.test('a suspend from a fourth process is obeyed by all three on their next call', async (t) => {
    const { key, id } = await hosts[0]!.createKey(['--mode', 'credit', '--balance', '1']);
    for (const h of hosts) t.equal((await post(`${h.base}/v1/chat/completions`, key, CALL)).status, 200, 'works everywhere first');
    // A fourth process: a CLI of its own, with no config file and no data directory of any host.
    const r = await runCli(['keys', 'suspend', id], { TOLLGATE_REDIS_URL: redis.url });
    t.equal(r.code, 0, r.stderr);
    for (const h of hosts) {
      const res = await post(`${h.base}/v1/chat/completions`, key, CALL);
      t.equal(res.status, 403, 'refused on the next call');
      t.equal(res.json.error.code, 'key_suspended');
    }
    t.equal((await runCli(['keys', 'resume', id], { TOLLGATE_REDIS_URL: redis.url })).code, 0);
    for (const h of hosts) t.equal((await post(`${h.base}/v1/chat/completions`, key, CALL)).status, 200, 'and the resume');
    const off = await runCli(['models', 'disable', 'gpt-4o-mini'], { TOLLGATE_REDIS_URL: redis.url });
    t.equal(off.code, 0, off.stderr);
    for (const h of hosts) t.equal((await post(`${h.base}/v1/chat/completions`, key, CALL)).json.error.code, 'model_not_available', 'a model switched off, everywhere');
    t.equal((await runCli(['models', 'enable', 'gpt-4o-mini'], { TOLLGATE_REDIS_URL: redis.url })).code, 0);
    t.equal((await post(`${hosts[1]!.base}/v1/chat/completions`, key, CALL)).status, 200);
  });

  await t.test('kill -9 of one host mid-stream: the survivors settle its calls once each', async (t) => {
    const { key } = await hosts[0]!.createKey(['--mode', 'credit', '--balance', '1']);
    const victim = hosts[2]!;
    const streams = [];
    for (let i = 0; i < 4; i++) {
      const res = await fetch(`${victim.base}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(LONG) });
      const reader = res.body!.getReader();
      await reader.read();
      streams.push(reader.read().then(async () => {
        for (;;) if ((await reader.read()).done) return 'complete';
      }).catch(() => 'broken'));
    }
    t.equal((await post(`${hosts[0]!.base}/v1/chat/completions`, key, CALL)).status, 200, 'a call elsewhere meanwhile');
    t.ok((await usageOf(hosts[0]!.base, key)).key.heldNanoUsd > 0, 'the streams hold funds');
    victim.proc.kill('SIGKILL');
    await victim.stop();
    t.same(await Promise.all(streams), ['broken', 'broken', 'broken', 'broken'], 'its streams broke');
    const settled = await eventually(async () => {
      const u = await usageOf(hosts[0]!.base, key);
      return u.key.heldNanoUsd === 0 ? u : undefined;
    });
    const { records } = await allRecords(hosts[1]!.base, key, 100);
    t.equal(records.length, 5, 'one record per call');
    t.equal(new Set(records.map((r: any) => r.callId)).size, 5, 'none twice');
    t.equal(records.filter((r: any) => r.error === 'interrupted').length, 4, 'the four streams: interrupted');
    t.equal(settled.key.balanceNanoUsd, 1e9 - records.reduce((s: number, r: any) => s + r.costNanoUsd, 0), 'balance = opening − the records');
    // The survivor logs the settlement after its last Redis round trip for it, and its log comes
    // through a pipe: it may show after the records do.
    const logged = (): string => hosts[0]!.serverLog() + hosts[1]!.serverLog();
    t.ok(await eventually(async () => /orphaned_calls_settled/.test(logged()) || undefined), 'a survivor settled them');
    await victim.restart();
  });

  await t.test('Redis killed and restarted under traffic: refused meanwhile, nothing settled is lost', async (t) => {
    const { key } = await hosts[0]!.createKey(['--mode', 'credit', '--balance', '10']);
    let ok = 0;
    /** Calls of the traffic that have ended, whatever their outcome (one is in flight at a time). */
    let ended = 0;
    const okIds: string[] = [];
    /** The traffic's answers other than 200 or 503 store_unavailable (status and code): none is due. */
    const unexpected: string[] = [];
    let running = true;
    const traffic = (async () => {
      for (let i = 0; running; i++) {
        const r = await post(`${hosts[i % 3]!.base}/v1/chat/completions`, key, CALL).catch(() => null);
        ended++;
        if (r?.status === 200) {
          ok++;
          okIds.push(r.headers.get('x-request-id')!);
        } else if (r !== null && (r.status !== 503 || r.json?.error?.code !== 'store_unavailable')) unexpected.push(`${r.status} ${r.json?.error?.code}`);
      }
    })();
    await eventually(async () => (ok >= 20 ? true : undefined));
    await redis.stop('SIGKILL');
    // A call whose hold Redis answered just before it died is forwarded all the same, a moment
    // later. Once a call begun after the kill has ended, none from before it is in flight: what
    // reaches the provider from then on came while the store was down.
    const endedAtKill = ended;
    await eventually(async () => (ended >= endedAtKill + 2 ? true : undefined));
    const before = forwarded(hosts);
    const refused = await post(`${hosts[0]!.base}/v1/chat/completions`, key, CALL);
    t.equal(refused.status, 503, 'a call while Redis is down: 503');
    t.equal(refused.json.error.code, 'store_unavailable');
    const ready = await fetch(`${hosts[1]!.base}/readyz`);
    t.equal(ready.status, 503, '/readyz: 503 while the store does not answer');
    t.equal(forwarded(hosts) - before, 0, 'nothing forwarded meanwhile');
    await redis.start();
    const okBefore = ok;
    await eventually(async () => (ok >= okBefore + 20 ? true : undefined), 30_000);
    running = false;
    await traffic;
    t.same(unexpected, [], 'the traffic\'s calls were answered 200, or refused 503 store_unavailable while the store was down');
    // Each host reconnects by itself: every one of them ready again.
    for (const h of hosts) await eventually(async () => ((await fetch(`${h.base}/readyz`)).status === 200 ? true : undefined));
    const u = await eventually(async () => {
      const v = await usageOf(hosts[0]!.base, key);
      return v.key.heldNanoUsd === 0 ? v : undefined;
    });
    const { records } = await allRecords(hosts[0]!.base, key, 500);
    const recorded = new Set(records.map((r: any) => r.requestId));
    t.same(okIds.filter((id) => !recorded.has(id)), [], 'every call answered 200 is recorded');
    t.equal(u.key.balanceNanoUsd, 10e9 - records.reduce((s: number, r: any) => s + (r.costNanoUsd ?? 0), 0), 'balance = opening − the records');
    t.equal(new Set(records.map((r: any) => r.callId)).size, records.length, 'none twice');
  });
});
