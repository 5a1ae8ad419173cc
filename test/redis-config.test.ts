/**
 * Choosing the store: storage.backend / storage.redisUrl in the file, TOLLGATE_REDIS_URL, and
 * --redis on any command (flag over variable over file), each checked with a clear error; an
 * unreachable Redis fails a command at once with exit 1, never a hang.
 */
import t from 'tap';
import { compileConfig } from '../src/config/load.js';
import { runCli } from './helpers/harness.js';
import { unlistenedPort } from './helpers/ports.js';
import { startRedis } from './helpers/redis.js';

t.test('storage.backend and storage.redisUrl are validated with the field named', async (t) => {
  t.equal(compileConfig({}, null).storage.backend, 'lmdb', 'LMDB by default');
  const redis = compileConfig({ storage: { backend: 'redis', redisUrl: 'redis://user:pw@cache.internal:6380/2' } }, null).storage;
  t.same([redis.backend, redis.redisUrl], ['redis', 'redis://user:pw@cache.internal:6380/2']);
  t.throws(() => compileConfig({ storage: { backend: 'mongo' } }, null), /storage\.backend: must be "lmdb" or "redis"/);
  t.throws(() => compileConfig({ storage: { backend: 'redis' } }, null), /storage\.redisUrl: is required when storage\.backend is "redis"/);
  t.throws(() => compileConfig({ storage: { redisUrl: 'redis://h:1' } }, null), /storage\.redisUrl: is used only with storage\.backend "redis"/);
  for (const bad of ['http://h:1', 'redis://h', 'redis://:1', 'redis://h:1/x', 'redis://h:1/0?x=1', 'nonsense', '']) {
    t.throws(() => compileConfig({ storage: { backend: 'redis', redisUrl: bad } }, null), /storage\.redisUrl: must be redis:\/\//, `refused: '${bad}'`);
  }
});

t.test('--redis over TOLLGATE_REDIS_URL over the file; bad or unreachable URLs fail clearly', async (t) => {
  const redis = await startRedis(t);
  const dead = `redis://127.0.0.1:${await unlistenedPort()}`;
  const bad = await runCli(['keys', 'list', '--redis', 'redis://nowhere']);
  t.equal(bad.code, 2, 'a malformed --redis is bad usage');
  t.match(bad.stderr, /--redis must be redis:\/\/.*\(no port\)/);
  const badVar = await runCli(['keys', 'list'], { TOLLGATE_REDIS_URL: 'http://x:1' });
  t.equal(badVar.code, 2);
  t.match(badVar.stderr, /TOLLGATE_REDIS_URL must be redis:\/\//);
  const unreachable = await runCli(['keys', 'list', '--redis', dead]);
  t.equal(unreachable.code, 1, 'nothing listening: a runtime failure');
  t.match(unreachable.stderr, /^tollgate: cannot reach Redis at redis:\/\/127\.0\.0\.1:\d+: connect ECONNREFUSED 127\.0\.0\.1:\d+\n$/, 'one line saying why');
  // The flag wins over a variable naming a dead server.
  const created = await runCli(['keys', 'create', '--mode', 'credit', '--balance', '1', '--json', '--redis', redis.url], { TOLLGATE_REDIS_URL: dead });
  t.equal(created.code, 0, created.stderr);
  const listed = await runCli(['keys', 'list', '--json'], { TOLLGATE_REDIS_URL: redis.url });
  t.equal(listed.code, 0, listed.stderr);
  t.equal(JSON.parse(listed.stdout)[0].id, JSON.parse(created.stdout).id, 'the variable alone selects the same Redis');
  t.notMatch(listed.stdout + listed.stderr, JSON.parse(created.stdout).key, 'the secret is never printed again');
});
