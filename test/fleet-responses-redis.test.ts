/**
 * A fleet on one Redis: a response made through one `tollgate serve` process belongs to its
 * account on every other process of the fleet. Two processes, each with its own config file
 * and data directory, in front of the same provider: the response made through the first is
 * continued, read and deleted through the second by its owner (and a rotated key of its
 * account, made from another process), and refused there to another account.
 */
import t from 'tap';
import OpenAI from 'openai';
import { defaultConfig, startGateway } from './helpers/harness.js';
import { startRedis } from './helpers/redis.js';

t.test('a response made through one process, continued through another', async (t) => {
  const redis = await startRedis(t);
  const first = await startGateway(t, { backend: 'redis', redisServer: redis });
  const second = await startGateway(t, { backend: 'redis', redisServer: redis, config: () => defaultConfig(first.mock.url) });
  const owner = await first.createKey(['--mode', 'credit', '--balance', '1']);
  const other = await second.createKey(['--mode', 'token', '--budget', '100000']);
  const via = (base: string, key: string, path = '/v1'): OpenAI => new OpenAI({ apiKey: key, baseURL: `${base}${path}`, maxRetries: 0 });

  const made = await via(first.base, owner.key).responses.create({ model: 'gpt-4o-mini', input: 'hello' });
  const next = await via(second.base, owner.key).responses.create({ model: 'gpt-4o-mini', input: 'go on', previous_response_id: made.id });
  t.equal(next.status, 'completed', 'continued through the other process');
  t.equal(JSON.parse(first.mock.requests.at(-1)!.body).previous_response_id, made.id, 'the provider got the id as sent');

  const rotated = JSON.parse((await second.cli(['keys', 'rotate', owner.id, '--json'])).stdout) as { key: string };
  t.equal((await via(second.base, rotated.key).responses.retrieve(next.id)).id, next.id, 'a rotated key reads, through either process');
  t.equal((await via(first.base, rotated.key).responses.retrieve(made.id)).id, made.id);

  const forwarded = first.mock.requests.length;
  const err = await via(second.base, other.key, '/token/v1').responses.create({ model: 'gpt-4o-mini', input: 'mine?', previous_response_id: made.id }).catch((e: unknown) => e);
  t.ok(err instanceof OpenAI.BadRequestError, 'another account: 400');
  t.equal((err as InstanceType<typeof OpenAI.BadRequestError>).code, 'previous_response_not_found');
  const notFound = await via(second.base, other.key, '/token/v1').responses.retrieve(made.id).catch((e: unknown) => e);
  t.ok(notFound instanceof OpenAI.NotFoundError, 'and 404 on reading it');
  t.equal(first.mock.requests.length, forwarded, 'neither was forwarded');

  await via(second.base, owner.key).responses.delete(made.id);
  t.same([first.mock.requests.at(-1)!.method, first.mock.requests.at(-1)!.path], ['DELETE', `/v1/responses/${made.id}`], 'deleted through the other process');
});
