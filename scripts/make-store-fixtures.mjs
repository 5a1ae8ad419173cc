/**
 * Makes the stores of test/fixtures/store/: an LMDB data directory and a Redis RDB file (written
 * by redis-server's SAVE), each as a given build of tollgate writes it, and beside each a JSON of
 * what that build reads back from it. test/store-fixtures.test.ts opens both with the code of
 * this checkout and requires every key, account, hold, record and audit entry to read the same:
 * what is on disk and in Redis must not change when the code does.
 *
 *   npm run build && node scripts/make-store-fixtures.mjs [--build DIR] [--out DIR]
 *
 * --build: a checkout with dist/ built (default: this one); --out: default test/fixtures/store;
 * --commit: the commit the build was made from, for a build outside git.
 * Needs redis-server on PATH (Debian's 7.0, as the tests use).
 *
 * What goes in, on both backends: credit and token keys (an allowlist, a rate limit, a
 * concurrency limit, an expiry, a name, one suspended, one topped up, one rotated: two keys on
 * one account), model switches of both values, the audit entries of all of it, usage records
 * of the three formats (plain and streamed, with their day totals), owner records of stored
 * responses, then calls in flight of both phases (a stream held at the provider: hold placed;
 * a request whose body has not come yet, of a key with a concurrency limit: its slot only),
 * left so by killing the gateway (-9). Then rows of older shapes, written with the plain
 * clients as older builds wrote them: a usage record without a call id or the fields appended
 * later, an account without `held`, and (LMDB) a key without `concurrency`.
 */
import { spawn, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { build: { type: 'string' }, out: { type: 'string' }, 'read-back': { type: 'string' }, commit: { type: 'string' } } });
const ROOT = resolve(new URL('..', import.meta.url).pathname);
const BUILD = resolve(values.build ?? ROOT);
const OUT = resolve(values.out ?? join(ROOT, 'test', 'fixtures', 'store'));
const CLI = join(BUILD, 'dist', 'cli', 'main.js');
const { startMockProvider } = await import(pathToFileURL(join(BUILD, 'dist', 'mock', 'provider.js')).href);

const PROVIDER_ENV = { OPENAI_API_KEY: 'sk-fixture-openai', ANTHROPIC_API_KEY: 'sk-fixture-anthropic' };
const MODELS = {
  'gpt-4o-mini': { provider: 'openai', endpoints: ['chat', 'responses'], price: { input: 0.15, output: 0.6, cachedInput: 0.075 } },
  'gpt-4o': { provider: 'openai', endpoints: ['chat', 'responses'], price: { input: 2.5, output: 10 } },
  'chat-only': { provider: 'openai', endpoints: ['chat'], price: { input: 1, output: 2 }, enabled: false },
  'claude-haiku-4-5': { provider: 'anthropic', endpoints: ['messages'], price: { input: 1, output: 5 } },
};

function freePort() {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.once('error', rej);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => res(port));
    });
  });
}

function run(args, env) {
  const out = execFileSync(process.execPath, [CLI, ...args], { env: { ...process.env, ...PROVIDER_ENV, ...env }, encoding: 'utf8' });
  return out;
}

const step = (what) => process.stderr.write(`${what}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function until(what, check) {
  for (let i = 0; i < 400; i++) {
    if (await check()) return;
    await sleep(25);
  }
  throw new Error(`timed out waiting for ${what}`);
}

function startServe(common, env) {
  const proc = spawn(process.execPath, [CLI, 'serve', ...common, '--host', '127.0.0.1', '--port', '0'], { env: { ...process.env, ...PROVIDER_ENV, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stderr.on('data', (d) => (err += d));
  return new Promise((res, rej) => {
    proc.stdout.on('data', (d) => {
      out += d;
      const m = /tollgate listening on (http:\/\/\S+)/.exec(out);
      if (m) res({ proc, base: m[1] });
    });
    proc.on('exit', (code) => rej(new Error(`serve exited ${code}: ${err}`)));
  });
}

async function call(base, key, path, body) {
  const res = await fetch(`${base}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${text}`);
  return text;
}

/** A request whose head and first body bytes are sent, the rest never: admitted, its body not read. */
function bodyNeverEnds(base, key, path) {
  const url = new URL(base);
  const socket = connect(Number(url.port), url.hostname);
  const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'never ends' }] });
  socket.on('error', () => undefined);
  socket.write(`POST ${path} HTTP/1.1\r\nhost: ${url.host}\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\ncontent-length: ${body.length + 100}\r\n\r\n${body.slice(0, 10)}`);
  return socket;
}

/** Everything the gateway of one backend is asked to write; returns the keys made. */
async function populate(common, env, mock, stopPoint) {
  // Each backend's streams are held under a tag of their own (a released tag is never held again).
  const tag = `fixture-${env.TOLLGATE_REDIS_URL === undefined ? 'lmdb' : 'redis'}`;
  const keys = {};
  const make = (name, args) => (keys[name] = JSON.parse(run(['keys', 'create', ...args, '--json', ...common], env)));
  make('alpha', ['--mode', 'credit', '--balance', '5', '--name', 'alpha', '--models', 'gpt-4o-mini,gpt-4o', '--rpm', '100', '--expires', '2031-01-01T00:00:00Z']);
  make('beta', ['--mode', 'token', '--budget', '100000', '--name', 'beta']);
  make('gamma', ['--mode', 'credit', '--balance', '1', '--concurrency', '3']);
  make('delta', ['--mode', 'credit', '--balance', '2']);
  make('epsilon', ['--mode', 'token', '--budget', '1000000', '--concurrency', '2', '--rpm', '50']);
  run(['keys', 'suspend', keys.delta.id, ...common], env);
  run(['keys', 'topup', keys.beta.id, '--tokens', '2500', ...common], env);
  run(['keys', 'extend', keys.alpha.id, '--expires', '2032-06-30T12:00:00Z', ...common], env);
  run(['keys', 'set', keys.gamma.id, '--name', 'gamma', '--rpm', '1000', ...common], env);
  keys.alpha2 = JSON.parse(run(['keys', 'rotate', keys.alpha.id, '--json', ...common], env));
  run(['models', 'disable', 'gpt-4o', ...common], env);
  run(['models', 'enable', 'chat-only', ...common], env);
  run(['models', 'disable', 'gpt-4o', ...common], env);

  const gw = await startServe(common, env);
  const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }] };
  const stream = { ...chat, stream: true, stream_options: { include_usage: true } };
  await call(gw.base, keys.alpha.key, '/v1/chat/completions', { ...chat, mock: { inputTokens: 120, outputTokens: 30, cachedTokens: 20 } });
  await call(gw.base, keys.alpha2.key, '/v1/chat/completions', { ...stream, mock: { inputTokens: 40, outputTokens: 9 } });
  await call(gw.base, keys.gamma.key, '/v1/chat/completions', { model: 'chat-only', messages: [{ role: 'user', content: 'x' }] });
  await call(gw.base, keys.beta.key, '/token/v1/chat/completions', { ...stream, mock: { inputTokens: 300, outputTokens: 77, reasoningTokens: 5 } });
  await call(gw.base, keys.beta.key, '/token/v1/messages', { model: 'claude-haiku-4-5', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }], mock: { cacheWriteTokens: 10, cacheWrite1hTokens: 4 } });
  await call(gw.base, keys.gamma.key, '/v1/responses', { model: 'gpt-4o-mini', input: 'stored one', mock: { webSearchRequests: 1 } });
  await call(gw.base, keys.gamma.key, '/v1/responses', { model: 'gpt-4o-mini', input: 'stored two', stream: true });
  await call(gw.base, keys.beta.key, '/token/v1/responses', { model: 'gpt-4o-mini', input: 'stored three' });
  // Calls in flight: streams held at the provider after their first delta (hold placed) …
  const flights = [];
  for (const [key, path, body] of [
    [keys.gamma.key, '/v1/chat/completions', { ...stream, mock: { hold: tag, holdAfter: 1 } }],
    [keys.beta.key, '/token/v1/chat/completions', { ...stream, mock: { hold: tag, holdAfter: 1 } }],
    [keys.epsilon.key, '/token/v1/responses', { model: 'gpt-4o-mini', input: 'in flight', stream: true, mock: { hold: tag, holdAfter: 1 } }],
  ]) {
    flights.push(fetch(`${gw.base}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.body?.getReader().read()).catch(() => undefined));
  }
  await mock.waitHeld(tag, 3);
  await Promise.all(flights);
  // … and requests admitted whose body never came (a concurrency slot only).
  const sockets = [bodyNeverEnds(gw.base, keys.gamma.key, '/v1/chat/completions'), bodyNeverEnds(gw.base, keys.epsilon.key, '/token/v1/chat/completions')];
  await stopPoint(keys);
  gw.proc.kill('SIGKILL');
  await new Promise((r) => gw.proc.once('exit', r));
  for (const s of sockets) s.destroy();
  mock.release(tag);
  return keys;
}

/** The store module of the build: where openStore lives (it moved once). */
async function storeModule() {
  for (const f of ['store/store.js', 'store/open.js']) {
    const mod = await import(pathToFileURL(join(BUILD, 'dist', f)).href);
    if (typeof mod.openStore === 'function') return mod;
  }
  throw new Error('no openStore in the build');
}

/** What the build reads back through the store's interfaces (both backends alike). */
async function readBack(store, responseIds) {
  const all = await store.allKeys();
  const out = { keys: all, accounts: {}, usage: {}, daily: {}, audit: await store.auditTrail(undefined, 1e6), switches: {}, responses: [] };
  for (const k of all) {
    out.accounts[k.account] ??= await store.account(k.account);
    out.usage[k.id] = await store.usageOf(k, 1000);
  }
  // The days the records fall on, and one either side (as the test reads them): on Redis each
  // day is one read, and a century of them per key outlasts the command timeout on a busy machine.
  const ats = Object.values(out.usage).flat().map((u) => u.at);
  const day = (at) => new Date(at).toISOString().slice(0, 10);
  const [fromDay, toDay] = [day(Math.min(...ats) - 86_400_000), day(Math.max(...ats) + 86_400_000)];
  for (const k of all) out.daily[k.id] = Object.fromEntries(await store.dailyOf(k, fromDay, toDay));
  for (const m of Object.keys(MODELS)) out.switches[m] = (await store.modelSwitch(m)) ?? null;
  for (const [account, id] of responseIds) {
    const owner = await new Promise((res, rej) => store.responseOwner(account, id, (o, failure) => (failure ? rej(failure) : res(o ?? null))));
    out.responses.push({ account, id, owner });
  }
  return out;
}

async function lmdbFixture(mock, configFile) {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-fixture-'));
  const data = join(dir, 'data');
  const common = ['--config', configFile, '--data', data];
  let responseIds = [];
  const { open } = await import('lmdb');
  const keys = await populate(common, {}, mock, async () => {
    // The calls in flight are committed (read in a process of its own, as another host would).
    await until('the calls in flight', () => {
      const env = open({ path: data, maxDbs: 16, readOnly: true });
      const calls = env.openDB({ name: 'calls' }).getRange().asArray.map((e) => [e.key, e.value[9]]);
      env.close();
      return calls.length >= 5;
    });
  });
  step('lmdb: rows of older shapes');
  const old = JSON.parse(run(['keys', 'create', '--mode', 'credit', '--balance', '3', '--name', 'old', '--json', ...common], {}));
  keys.old = old;
  // Rows of older shapes, with the plain lmdb client, as older builds wrote them.
  const env = open({ path: data, maxDbs: 16, overlappingSync: false });
  const keysDb = env.openDB({ name: 'keys' });
  const accounts = env.openDB({ name: 'accounts' });
  const usage = env.openDB({ name: 'usage' });
  const responses = env.openDB({ name: 'responses' });
  env.transactionSync(() => {
    const hash = hashOf(old);
    const row = keysDb.get(hash);
    keysDb.put(hash, row.slice(0, 12)); // no concurrency (written before it existed)
    const acct = accounts.get(row[10]);
    accounts.put(row[10], acct.slice(0, 4)); // no held
    // A record of before calls had their own id, and before the appended fields.
    usage.put([old.id, Date.UTC(2026, 0, 15, 10, 0, 0), 'req_old_1'], [Date.UTC(2026, 0, 15, 10, 0, 0), 'req_old_1', 'chat', 'gpt-4o-mini', 0, 200, 100, 20, 0, 0, 0, 27000, 0, null, 0, 0]);
    usage.put([old.id, Date.UTC(2026, 0, 15, 11, 0, 0), 'call_old_2'], [Date.UTC(2026, 0, 15, 11, 0, 0), 'req_old_2', 'messages', 'claude-haiku-4-5', 1, 200, 50, 5, 0, 0, 0, 75000, 0, null, 1, 1, 'call_old_2']);
  });
  for (const { key } of responses.getRange()) responseIds.push(key);
  const processes = [];
  for (const { key, value } of env.openDB({ name: 'processes' }).getRange()) processes.push({ owner: key, row: value });
  const calls = [];
  for (const { key, value } of env.openDB({ name: 'calls' }).getRange()) calls.push({ key, row: value });
  await env.close();
  step('lmdb: read back');
  const expected = { ...readBackElsewhere({ backend: 'lmdb', dataDir: data }, responseIds), rawCalls: calls, rawProcesses: processes };
  const target = join(OUT, 'lmdb');
  rmSync(target, { recursive: true, force: true });
  mkdirSync(target, { recursive: true });
  copyFileSync(join(data, 'data.mdb'), join(target, 'data.mdb'));
  writeFileSync(join(OUT, 'lmdb.expected.json'), `${JSON.stringify(expected, null, 1)}\n`);
  rmSync(dir, { recursive: true, force: true });
}

async function redisFixture(mock, configFile) {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-fixture-redis-'));
  const port = await freePort();
  const redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no', '--dbfilename', 'dump.rdb', '--protected-mode', 'no'], { stdio: ['ignore', 'pipe', 'pipe'] });
  await new Promise((res, rej) => {
    let out = '';
    redis.stdout.on('data', (d) => {
      out += d;
      if (/Ready to accept connections/.test(out)) res();
    });
    redis.once('exit', () => rej(new Error(out)));
  });
  const url = `redis://127.0.0.1:${port}`;
  const cli = (...args) => execFileSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8' }).trim();
  const env = { TOLLGATE_REDIS_URL: url };
  const data = join(dir, 'unused');
  const common = ['--config', configFile, '--data', data];
  const keys = await populate(common, env, mock, async (k) => {
    await until('the calls in flight', () => {
      const n = ['gamma', 'beta', 'epsilon'].reduce((sum, name) => sum + Number(cli('HLEN', `tg:{${hashOf(k[name])}}:c`)), 0);
      return n >= 5;
    });
  });
  step('redis: rows of older shapes');
  // Older shapes: an account without `held`, records without a call id or the appended fields.
  const old = JSON.parse(run(['keys', 'create', '--mode', 'credit', '--balance', '3', '--name', 'old', '--json', ...common], env));
  keys.old = old;
  const oldHash = hashOf(old);
  const oldKey = JSON.parse(cli('GET', `tg:{${oldHash}}:k`));
  cli('HDEL', `tg:{${oldKey.account}}:a`, 'held');
  const oldRows = [
    [Date.UTC(2026, 0, 15, 10, 0, 0), 'req_old_1', [Date.UTC(2026, 0, 15, 10, 0, 0), 'req_old_1', 'chat', 'gpt-4o-mini', 0, 200, 100, 20, 0, 0, 0, 27000, 0, null, 0, 0]],
    [Date.UTC(2026, 0, 15, 11, 0, 0), 'call_old_2', [Date.UTC(2026, 0, 15, 11, 0, 0), 'req_old_2', 'messages', 'claude-haiku-4-5', 1, 200, 50, 5, 0, 0, 0, 75000, 0, null, 1, 1, 'call_old_2']],
  ];
  for (const [at, id, row] of oldRows) {
    const member = `${String(at).padStart(15, '0')}:${id}`;
    cli('ZADD', `tg:{${oldHash}}:u`, '0', member);
    cli('HSET', `tg:{${oldHash}}:ur`, member, JSON.stringify(row));
  }
  const responseIds = cli('--scan', '--pattern', 'tg:{*}:rs:*').split('\n').filter(Boolean).map((name) => {
    const m = /^tg:\{([^}]+)\}:rs:(.+)$/.exec(name);
    return [m[1], m[2]];
  });
  // The calls in flight and the owner index, as stored (the interfaces do not list them).
  const rawCalls = {};
  for (const name of Object.keys(keys)) {
    const hash = cli('HGET', 'tg:ids', keys[name].id);
    const entries = cli('HGETALL', `tg:{${hash}}:c`).split('\n').filter(Boolean);
    for (let i = 0; i + 1 < entries.length; i += 2) rawCalls[`${hash} ${entries[i]}`] = entries[i + 1];
  }
  const owners = cli('SMEMBERS', 'tg:owners').split('\n').filter(Boolean);
  const ownerCalls = Object.fromEntries(owners.map((o) => [o, cli('SMEMBERS', `tg:o:${o}`).split('\n').filter(Boolean).sort()]));
  cli('SAVE');
  const names = cli('--scan', '--pattern', 'tg:*').split('\n').filter(Boolean).sort();
  const ttls = Object.fromEntries(names.filter((n) => n.includes(':rs:')).map((n) => [n, Number(cli('PTTL', n))]));
  const target = join(OUT, 'redis');
  rmSync(target, { recursive: true, force: true });
  mkdirSync(target, { recursive: true });
  copyFileSync(join(dir, 'dump.rdb'), join(target, 'dump.rdb'));
  step('redis: read back');
  const expected = { ...readBackElsewhere({ backend: 'redis', url }, responseIds), rawCalls, ownerCalls, names, responseTtlsAtSave: ttls, savedAt: Date.now() };
  writeFileSync(join(OUT, 'redis.expected.json'), `${JSON.stringify(expected, null, 1)}\n`);
  redis.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
}

/** The commit a build was made from (--commit names it for a build outside git). */
function commitOf(dir) {
  try {
    return execFileSync('git', ['-C', dir, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return '(a build outside git)';
  }
}

/** A key's SHA-256 (how both backends name it). */
function hashOf(made) {
  return createHash('sha256').update(made.key).digest('hex');
}

/**
 * The build's reading of a store, in a process of its own (an LMDB environment opened twice in
 * one process, once by the plain client above, is not what a gateway does).
 */
function readBackElsewhere(plan, responseIds) {
  const out = execFileSync(process.execPath, [new URL(import.meta.url).pathname, '--build', BUILD, '--read-back', JSON.stringify({ plan, responseIds })], { encoding: 'utf8', maxBuffer: 1 << 28 });
  return JSON.parse(out);
}

if (values['read-back'] !== undefined) {
  const { plan, responseIds } = JSON.parse(values['read-back']);
  const { openStore } = await storeModule();
  const store = await openStore(plan);
  const read = await readBack(store, responseIds);
  // LMDB: everything it holds, as `tollgate store migrate` reads it (calls in flight included).
  if (typeof store.dump === 'function') read.dump = store.dump();
  await store.close();
  process.stdout.write(JSON.stringify(read));
  process.exit(0);
}

const mock = await startMockProvider();
const dir = mkdtempSync(join(tmpdir(), 'tollgate-fixture-config-'));
const configFile = join(dir, 'tollgate.config.json');
writeFileSync(configFile, JSON.stringify({
  providers: {
    openai: { baseUrl: `${mock.url}/v1`, auth: 'bearer', apiKeyEnv: 'OPENAI_API_KEY' },
    anthropic: { baseUrl: `${mock.url}/v1`, auth: 'x-api-key', apiKeyEnv: 'ANTHROPIC_API_KEY' },
  },
  catalogProvider: { openai: 'openai', anthropic: 'anthropic' },
  models: MODELS,
  // Owner records of ten years: the Redis TTLs outlive the fixture's life in the repository.
  storage: { responseRetentionDays: 3650 },
}, null, 2));
mkdirSync(OUT, { recursive: true });
try {
  await lmdbFixture(mock, configFile);
  await redisFixture(mock, configFile);
  writeFileSync(join(OUT, 'README.md'), `Stores written by tollgate ${values.commit ?? commitOf(BUILD)}, made by scripts/make-store-fixtures.mjs on ${new Date().toISOString().slice(0, 10)}: an LMDB data directory (lmdb/data.mdb), a Redis RDB file (redis/dump.rdb, redis-server ${execFileSync('redis-server', ['--version'], { encoding: 'utf8' }).match(/v=(\S+)/)?.[1]} SAVE), and what that build read back from each (*.expected.json). Read by test/store-fixtures.test.ts.\n`);
} finally {
  await mock.close();
  rmSync(dir, { recursive: true, force: true });
}
if (!existsSync(join(OUT, 'redis', 'dump.rdb'))) process.exit(1);
