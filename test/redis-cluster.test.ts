/**
 * One run against a Redis Cluster of three masters started by the test: every check of a call
 * is one script on one shard (keys hash-tagged by key and account, an account's id chosen in
 * its keys' slot, a rotated key's secret drawn in its account's slot), and the gateway and the
 * command line work on it as on one server: billing on both surfaces, the rate window, a
 * concurrency limit, a rotated key drawing on the same balance, suspend and model switches
 * obeyed on the next call, a stored response continued and read by its account only (its owner
 * record in its account's slot), the usage API and the audit trail.
 */
import t from 'tap';
import { eventually } from './helpers/client-gone.js';
import { post, startGateway, usageOf } from './helpers/harness.js';
import { startRedisCluster } from './helpers/redis.js';

const CALL = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };
const COST = 11 * 150 + 7 * 600;

t.test('a three-master Redis Cluster', async (t) => {
  const nodes = await startRedisCluster(t);
  const gw = await startGateway(t, { backend: 'redis', redisServer: nodes[0]! });

  const keys = await Promise.all(Array.from({ length: 6 }, () => gw.createKey(['--mode', 'credit', '--balance', '1', '--rpm', '5'])));
  // Six keys land on more than one shard (their slots are their hashes').
  for (const { key } of keys) {
    const results = await Promise.all(Array.from({ length: 8 }, () => post(`${gw.base}/v1/chat/completions`, key, CALL)));
    t.equal(results.filter((r) => r.status === 200).length, 5, 'rpm 5: exactly 5 of 8 admitted');
    const u = await usageOf(gw.base, key);
    t.equal(u.key.balanceNanoUsd, 1e9 - 5 * COST, 'charged exactly 5 calls');
    t.equal(u.requests.length, 5);
  }

  const token = await gw.createKey(['--mode', 'token', '--budget', '1000', '--concurrency', '2']);
  // The provider holds every answer until released: the calls admitted stay in flight.
  gw.mock.pause();
  const calls = Array.from({ length: 4 }, () => post(`${gw.base}/token/v1/chat/completions`, token.key, { ...CALL, max_tokens: 20 }));
  await eventually(async () => (gw.mock.held === 2 ? true : undefined));
  gw.mock.release();
  const held = await Promise.all(calls);
  t.equal(held.filter((r) => r.status === 200).length, 2, 'concurrency 2: two of four at once');
  t.ok(held.filter((r) => r.status === 429).every((r) => r.json.error.code === 'concurrency_limit_exceeded'));

  const rotated = await gw.cli(['keys', 'rotate', keys[0]!.id, '--json']);
  t.equal(rotated.code, 0, rotated.stderr);
  const next = JSON.parse(rotated.stdout) as { key: string };
  const before = (await usageOf(gw.base, keys[0]!.key)).key.balanceNanoUsd;
  t.equal((await post(`${gw.base}/v1/responses`, next.key, { model: 'gpt-4o-mini', input: 'hi' })).status, 200, 'the rotated key works');
  t.ok((await usageOf(gw.base, keys[0]!.key)).key.balanceNanoUsd < before, 'and draws on the same balance');

  // A stored response: its owner record lives in its account's slot, read by the admission there.
  const owner = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const ownerRotated = JSON.parse((await gw.cli(['keys', 'rotate', owner.id, '--json'])).stdout) as { key: string };
  const strangers = await Promise.all(Array.from({ length: 4 }, () => gw.createKey(['--mode', 'credit', '--balance', '1'])));
  const made = await post(`${gw.base}/v1/responses`, owner.key, { model: 'gpt-4o-mini', input: 'remember' });
  for (const key of [owner.key, ownerRotated.key]) {
    t.equal((await post(`${gw.base}/v1/responses`, key, { model: 'gpt-4o-mini', input: 'more', previous_response_id: made.json.id })).status, 200, 'its account continues the response');
    t.equal((await fetch(`${gw.base}/v1/responses/${made.json.id}`, { headers: { authorization: `Bearer ${key}` } })).status, 200, 'and reads it');
  }
  for (const { key } of strangers) {
    t.equal((await post(`${gw.base}/v1/responses`, key, { model: 'gpt-4o-mini', input: 'mine?', previous_response_id: made.json.id })).json.error.code, 'previous_response_not_found', 'another account, on any shard, cannot');
    t.equal((await (await fetch(`${gw.base}/v1/responses/${made.json.id}`, { headers: { authorization: `Bearer ${key}` } })).json()).error.code, 'response_not_found');
  }

  t.equal((await gw.cli(['keys', 'suspend', keys[1]!.id])).code, 0);
  t.equal((await post(`${gw.base}/v1/chat/completions`, keys[1]!.key, CALL)).json.error.code, 'key_suspended', 'suspended: obeyed at once');
  t.equal((await gw.cli(['models', 'disable', 'gpt-4o'])).code, 0);
  t.equal((await post(`${gw.base}/v1/chat/completions`, next.key, { ...CALL, model: 'gpt-4o' })).json.error.code, 'model_not_available', 'a model switched off: obeyed at once');
  // On a Cluster the switch is read beside the admission: it still comes before the response check.
  t.equal((await post(`${gw.base}/v1/responses`, strangers[0]!.key, { model: 'gpt-4o', input: 'x', previous_response_id: made.json.id })).json.error.code, 'model_not_available', 'step 10 before previous_response_not_found');
  t.equal((await post(`${gw.base}/v1/responses`, owner.key, { model: 'gpt-4o', input: 'x', previous_response_id: made.json.id })).json.error.code, 'model_not_available', 'and for the owner');
  t.equal((await usageOf(gw.base, strangers[0]!.key)).key.heldNanoUsd, 0, 'nothing held');

  const audit = await gw.cli(['audit', '--json']);
  t.equal(audit.code, 0, audit.stderr);
  const actions = (JSON.parse(audit.stdout) as { action: string }[]).map((e) => e.action);
  t.same(actions.filter((a) => a !== 'key.create'), ['key.rotate', 'key.rotate', 'key.suspend', 'model.disable'], 'the audit trail, in order');
});
