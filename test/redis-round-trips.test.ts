/**
 * On Redis, a plain inference call costs two round trips, each one script: the admission, which
 * also places the call's hold when the body came with the request's head, and the settlement
 * (counted by Redis itself, INFO commandstats). A body that arrives after the head is read after
 * the admission, as always, and takes the hold's script of its own (three). Either way the
 * refusals are those of the order of checks, and nothing stays held or in flight. A Responses
 * call continuing a response of its account costs the same two: the owner record is read inside
 * the admission (or the hold), and the settlement writes the new response's.
 */
import t from 'tap';
import { post, startGateway, usageOf, type Harness } from './helpers/harness.js';
import { open, parseResponses, portOf } from './helpers/raw-http.js';
import { startRedis, type RedisServer } from './helpers/redis.js';

const CALL = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };

/** Script calls so far (EVALSHA, and EVAL after a NOSCRIPT). */
async function scriptCalls(redis: RedisServer): Promise<number> {
  let n = 0;
  for (const m of (await redis.cli('info', 'commandstats')).matchAll(/^cmdstat_(evalsha|eval):calls=(\d+)/gm)) n += Number(m[2]);
  return n;
}

/** A call whose head and body go out in two writes, `gapMs` apart: the body is not at hand at admission. */
async function splitCall(gw: Harness, key: string, gapMs: number, path = '/v1/chat/completions', call: unknown = CALL): Promise<number> {
  const socket = await open(portOf(gw.base));
  const body = JSON.stringify(call);
  socket.write(`POST ${path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n`);
  await new Promise((r) => setTimeout(r, gapMs));
  socket.write(body);
  let data = Buffer.alloc(0);
  for (;;) {
    const chunk = await new Promise<Buffer>((resolve) => socket.once('data', resolve));
    data = Buffer.concat([data, chunk]);
    const { responses } = parseResponses(data);
    if (responses.length > 0) {
      socket.destroy();
      return responses[0]!.status;
    }
  }
}

t.test('a plain call: two round trips, each one script', async (t) => {
  const redis = await startRedis(t);
  const gw = await startGateway(t, { backend: 'redis', redisServer: redis });
  const credit = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const token = await gw.createKey(['--mode', 'token', '--budget', '1000000']);
  const limited = await gw.createKey(['--mode', 'credit', '--balance', '1', '--rpm', '1000', '--concurrency', '2', '--models', 'gpt-4o-mini,gpt-4o']);
  // The first call of a connection to Redis loads each script (EVAL): not counted.
  t.equal((await post(`${gw.base}/v1/chat/completions`, credit.key, CALL)).status, 200);
  t.equal((await post(`${gw.base}/token/v1/chat/completions`, token.key, CALL)).status, 200);

  const N = 20;
  for (const [name, base, key] of [['credit', '/v1', credit.key], ['token', '/token/v1', token.key], ['rpm, concurrency and allowlist', '/v1', limited.key]] as const) {
    const before = await scriptCalls(redis);
    for (let i = 0; i < N; i++) {
      const r = await post(`${gw.base}${base}/chat/completions`, key, { ...CALL, stream: i % 2 === 1 });
      t.equal(r.status, 200, `${name}: answered`);
    }
    t.equal((await scriptCalls(redis)) - before, 2 * N, `${name}: ${N} calls, ${2 * N} scripts (admission with the hold, settlement)`);
  }

  for (const [name, key] of [['credit', credit.key], ['limited', limited.key]] as const) {
    const u = await usageOf(gw.base, key);
    t.equal(u.key.heldNanoUsd, 0, `${name}: nothing held`);
  }
  t.equal((await usageOf(gw.base, token.key)).key.heldTokens, 0, 'token: nothing held');
  t.equal(await redis.cli('hlen', `tg:{${await hashOf(gw, limited.id)}}:c`).then((s) => s.trim()), '0', 'no call left in flight');
});

t.test('a body that comes after the head: read after the admission, three scripts', async (t) => {
  const redis = await startRedis(t);
  const gw = await startGateway(t, { backend: 'redis', redisServer: redis });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  t.equal((await post(`${gw.base}/v1/chat/completions`, key, CALL)).status, 200);
  const before = await scriptCalls(redis);
  t.equal(await splitCall(gw, key, 100), 200, 'answered');
  t.equal((await scriptCalls(redis)) - before, 3, 'admission, hold, settlement');
  t.equal((await usageOf(gw.base, key)).key.heldNanoUsd, 0, 'nothing held');
});

t.test('the refusals after step 7, decided by the admission that holds', async (t) => {
  const redis = await startRedis(t);
  const gw = await startGateway(t, { backend: 'redis', redisServer: redis });
  const { key, id } = await gw.createKey(['--mode', 'credit', '--balance', '1', '--rpm', '5', '--concurrency', '1', '--models', 'gpt-4o,switched-off']);
  const url = `${gw.base}/v1/chat/completions`;
  const code = async (body: unknown): Promise<string> => {
    const r = await post(url, key, body);
    return r.status === 200 ? 'ok' : r.json.error.code;
  };
  t.equal(await code(CALL), 'model_not_allowed', 'not on the allowlist');
  t.equal(await code({ ...CALL, model: 'switched-off' }), 'model_not_available', 'allowed, switched off by default');
  t.equal((await gw.cli(['models', 'disable', 'gpt-4o'])).code, 0);
  t.equal(await code({ ...CALL, model: 'gpt-4o' }), 'model_not_available', 'allowed, switched off at run time');
  t.equal((await gw.cli(['models', 'enable', 'gpt-4o'])).code, 0);
  t.equal(await code({ ...CALL, model: 'gpt-4o' }), 'ok', 'allowed and on');
  t.equal(await code({ ...CALL, model: 'gpt-4o' }), 'ok', 'the fifth call of the window');
  // Each call above counted against the rate window (as a call refused after step 7 does): the sixth is over it.
  t.equal(await code({ ...CALL, model: 'gpt-4o' }), 'rate_limit_exceeded', 'the rate window counted every admitted call');
  t.equal((await usageOf(gw.base, key)).key.heldNanoUsd, 0, 'nothing held');
  t.equal(await redis.cli('hlen', `tg:{${await hashOf(gw, id)}}:c`).then((s) => s.trim()), '0', 'no slot taken by a refused call');
});

t.test('a Responses call naming previous_response_id: the same round trips, the check inside them', async (t) => {
  const redis = await startRedis(t);
  const gw = await startGateway(t, { backend: 'redis', redisServer: redis });
  const owner = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const other = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const url = `${gw.base}/v1/responses`;
  const first = await post(url, owner.key, { model: 'gpt-4o-mini', input: 'hi' });
  t.equal(first.status, 200);
  t.equal((await post(url, other.key, { model: 'gpt-4o-mini', input: 'hi' })).status, 200, 'both keys have loaded the scripts');

  const N = 20;
  let before = await scriptCalls(redis);
  for (let i = 0; i < N; i++) {
    const r = await post(url, owner.key, { model: 'gpt-4o-mini', input: 'more', previous_response_id: first.json.id, stream: i % 2 === 1 });
    t.equal(r.status, 200, 'continued');
  }
  t.equal((await scriptCalls(redis)) - before, 2 * N, `${N} continuations, ${2 * N} scripts (admission with the hold and the owner check, settlement)`);

  const forwarded = gw.mock.requests.length;
  before = await scriptCalls(redis);
  const refused = await post(url, other.key, { model: 'gpt-4o-mini', input: 'steal', previous_response_id: first.json.id });
  t.equal(refused.json?.error?.code, 'previous_response_not_found');
  t.equal((await scriptCalls(redis)) - before, 1, "another account's id: refused by the admission, one script");
  before = await scriptCalls(redis);
  t.equal(await splitCall(gw, other.key, 100, '/v1/responses', { model: 'gpt-4o-mini', input: 'steal', previous_response_id: first.json.id }), 400, 'a body after the head: refused by the hold');
  t.equal((await scriptCalls(redis)) - before, 2, 'admission, hold');
  t.equal(gw.mock.requests.length, forwarded, 'neither was forwarded');
  for (const key of [owner.key, other.key]) t.equal((await usageOf(gw.base, key)).key.heldNanoUsd, 0, 'nothing held');
});

async function hashOf(gw: Harness, id: string): Promise<string> {
  return (await gw.redis!.cli('hget', 'tg:ids', id)).trim();
}

t.test('a server that lost its scripts (SCRIPT FLUSH) is sent them again', async (t) => {
  const redis = await startRedis(t);
  const gw = await startGateway(t, { backend: 'redis', redisServer: redis });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  t.equal((await post(`${gw.base}/v1/chat/completions`, key, CALL)).status, 200);
  await redis.cli('script', 'flush');
  const results = await Promise.all(Array.from({ length: 5 }, () => post(`${gw.base}/v1/chat/completions`, key, CALL)));
  t.same(results.map((r) => r.status), [200, 200, 200, 200, 200], 'answered, each admitted, held and settled once');
  const u = await usageOf(gw.base, key);
  t.equal(u.requests.length, 6, 'six records');
  t.equal(u.key.heldNanoUsd, 0, 'nothing held');
});
