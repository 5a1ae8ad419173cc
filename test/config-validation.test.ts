/**
 * `tollgate serve --config FILE` refuses a bad configuration before it listens: exit 2 and one
 * line on stderr naming the offending field's path. And where the port and the data directory
 * come from: the flag wins over the environment variable, which wins over the file.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { CLI, defaultConfig, PROVIDER_ENV, runCli } from './helpers/harness.js';
import { unlistenedPort } from './helpers/ports.js';

const dir = mkdtempSync(join(tmpdir(), 'tollgate-config-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

/** The environment without any TOLLGATE_* setting of the caller's, plus `extra`. */
function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...PROVIDER_ENV };
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('TOLLGATE_')) env[k] = v;
  return { ...env, ...extra };
}

interface Served { code: number | null; stdout: string; stderr: string; listening: string | null }

/**
 * Runs `tollgate serve ARGS`. Resolves when it exits, or — once it printed its listening line —
 * stops it with SIGTERM and resolves after it exited. A guard kills it if it neither exits nor
 * listens, so no test leaves a server behind.
 */
function serve(args: string[], env: NodeJS.ProcessEnv = {}, cwd = dir): Promise<Served> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, 'serve', ...args], { env: cleanEnv(env), cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let listening: string | null = null;
    const guard = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.stdout.on('data', (d) => {
      stdout += d;
      const m = /listening on (http:\/\/\S+)/.exec(stdout);
      if (m && listening === null) {
        listening = m[1]!;
        child.kill('SIGTERM');
      }
    });
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(guard);
      resolve({ code, stdout, stderr, listening });
    });
  });
}

let n = 0;
/** Writes a config (the test default with `change` applied) and returns its path. */
function configWith(change: (c: any) => void): string {
  const c: any = defaultConfig('http://127.0.0.1:9');
  change(c);
  const file = join(dir, `config-${++n}.json`);
  writeFileSync(file, JSON.stringify(c));
  return file;
}

const data = join(dir, 'data');

t.test('bad configurations: exit 2 before listening, stderr names the field path', async (t) => {
  const cases: [string, string, RegExp][] = [
    ['unknown top-level field', configWith((c) => (c.colour = 'blue')), /\bcolour\b/],
    ['unknown field inside a model', configWith((c) => (c.models['gpt-4o-mini'].colour = 'blue')), /models\.gpt-4o-mini\.colour/],
    ['unknown field inside a price', configWith((c) => (c.models['gpt-4o'].price.reasoning = 1)), /models\.gpt-4o\.price\.reasoning/],
    ['unknown field inside a provider', configWith((c) => (c.providers.openai.timeout = 5)), /providers\.openai\.timeout/],
    ['price as a string', configWith((c) => (c.models['gpt-4o-mini'].price.input = '0.15')), /models\.gpt-4o-mini\.price\.input/],
    ['negative price', configWith((c) => (c.models['gpt-4o-mini'].price.output = -0.6)), /models\.gpt-4o-mini\.price\.output/],
    ['price with 4 decimals', configWith((c) => (c.models['gpt-4o-mini'].price.cachedInput = 0.0755)), /models\.gpt-4o-mini\.price\.cachedInput/],
    ['price missing', configWith((c) => delete c.models['claude-haiku-4-5'].price.output), /models\.claude-haiku-4-5\.price\.output/],
    ['endpoint not chat/responses/messages', configWith((c) => (c.models['gpt-4o-mini'].endpoints = ['chat', 'completions'])), /models\.gpt-4o-mini\.endpoints/],
    ['model naming an unknown provider', configWith((c) => (c.models['gpt-4o'].provider = 'azure')), /models\.gpt-4o\.provider/],
    ['catalogProvider naming an unknown provider', configWith((c) => (c.catalogProvider.anthropic = 'bedrock')), /catalogProvider\.anthropic/],
    ['an empty model id', configWith((c) => (c.models[''] = c.models['gpt-4o'])), /models\."": the model id is empty/],
    ['a model id longer than a request can send', configWith((c) => (c.models['m'.repeat(300)] = c.models['gpt-4o'])), /models\.m+…: the model id is 300 bytes long/],
    ['an endpoint named twice', configWith((c) => (c.models['gpt-4o'].endpoints = ['chat', 'chat'])), /models\.gpt-4o\.endpoints\[1\]: "chat" is named twice/],
    ['a price of a trillion per million tokens', configWith((c) => (c.models['gpt-4o'].price.input = 1e12)), /models\.gpt-4o\.price\.input: must be at most 5000 \(USD per million tokens\)/],
    ['a request timeout below the headers default', configWith((c) => (c.limits = { clientRequestTimeoutMs: 100 })), /limits\.clientRequestTimeoutMs: must be at least limits\.clientHeadersTimeoutMs \(20000, its default\)/],
    ['bad provider auth', configWith((c) => (c.providers.anthropic.auth = 'basic')), /providers\.anthropic\.auth/],
    ['bad server port', configWith((c) => (c.server = { port: 'eighty' })), /server\.port/],
    ['nesting depth of 1', configWith((c) => (c.limits = { maxJsonDepth: 1 })), /limits\.maxJsonDepth/],
    ['no connections allowed', configWith((c) => (c.limits = { maxConnections: 0 })), /limits\.maxConnections/],
    ['a client stall limit of 10 ms', configWith((c) => (c.limits = { clientStallMs: 10 })), /limits\.clientStallMs/],
    ['headers allowed longer than the whole request', configWith((c) => (c.limits = { clientHeadersTimeoutMs: 5000, clientRequestTimeoutMs: 1000 })), /limits\.clientHeadersTimeoutMs/],
    ['header limit as a string', configWith((c) => (c.limits = { maxHeaderBytes: '16k' })), /limits\.maxHeaderBytes/],
    ['no header field allowed', configWith((c) => (c.limits = { maxHeaderCount: 0 })), /limits\.maxHeaderCount/],
    ['header count as a fraction', configWith((c) => (c.limits = { maxHeaderCount: 50.5 })), /limits\.maxHeaderCount/],
    ['a provider with both apiKeyEnv and credentials', configWith((c) => (c.providers.openai.credentials = [{ name: 'org-a', apiKeyEnv: 'OPENAI_API_KEY' }])), /providers\.openai\.apiKeyEnv: cannot be given with providers\.openai\.credentials/],
    ['a credential name with capitals and a space', configWith((c) => {
      delete c.providers.openai.apiKeyEnv;
      c.providers.openai.credentials = [{ name: 'Org A', apiKeyEnv: 'OPENAI_API_KEY' }];
    }), /providers\.openai\.credentials\[0\]\.name/],
    ['a credential weight of 0', configWith((c) => {
      delete c.providers.openai.apiKeyEnv;
      c.providers.openai.credentials = [{ name: 'org-a', apiKeyEnv: 'OPENAI_API_KEY' }, { name: 'org-b', apiKeyEnv: 'OPENAI_API_KEY', weight: 0 }];
    }), /providers\.openai\.credentials\[1\]\.weight/],
    ['two credentials of one name', configWith((c) => {
      delete c.providers.anthropic.apiKeyEnv;
      c.providers.anthropic.credentials = [{ name: 'eu', apiKeyEnv: 'ANTHROPIC_API_KEY' }, { name: 'eu', apiKeyEnv: 'OPENAI_API_KEY' }];
    }), /providers\.anthropic\.credentials\[1\]\.name/],
  ];
  const badJson = join(dir, 'broken.json');
  writeFileSync(badJson, '{ "providers": { ');
  cases.push(['invalid JSON', badJson, /broken\.json/]);
  const missing = join(dir, 'no-such-config.json');
  cases.push(['missing file', missing, /no-such-config\.json/]);

  for (let i = 0; i < cases.length; i += 4) {
    const batch = cases.slice(i, i + 4);
    const results = await Promise.all(batch.map(([, file]) => serve(['--config', file, '--data', data, '--host', '127.0.0.1', '--port', '0'])));
    batch.forEach(([name, , path], j) => {
      const r = results[j]!;
      t.equal(r.listening, null, `${name}: never listens`);
      t.equal(r.code, 2, `${name}: exit 2`);
      t.match(r.stderr, path, `${name}: stderr names ${path} (${JSON.stringify(r.stderr)})`);
      t.match(r.stderr, /^[^\n]+\n$/, `${name}: one line`);
    });
  }
  t.notOk(existsSync(join(data, 'data.mdb')), 'no bad start created a database');
});

t.test('a valid configuration starts', async (t) => {
  const r = await serve(['--config', configWith(() => {}), '--data', data, '--host', '127.0.0.1', '--port', '0']);
  t.match(r.listening, /^http:\/\/127\.0\.0\.1:\d+$/);
  t.equal(r.code, 0, 'and exits 0 on SIGTERM');
});

/** Occupies a port, so that a server told to use it could not start. */
function occupy(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(port, '127.0.0.1', () => resolve(s));
  });
}

const portOf = (url: string | null): number => Number(new URL(url!).port);

t.test('port and data directory: flag > environment > file', async (t) => {
  const filePort = await unlistenedPort();
  const envPort = await unlistenedPort();
  const fileData = join(dir, 'from-file');
  const envData = join(dir, 'from-env');
  const flagData = join(dir, 'from-flag');
  const file = configWith((c) => {
    c.server = { host: '127.0.0.1', port: filePort };
    c.dataDir = './from-file'; // relative to the working directory, like --data
  });
  // The file sits in a directory of its own, so "relative to the file" would be another place.
  mkdirSync(join(dir, 'conf'), { recursive: true });
  const fileElsewhere = join(dir, 'conf', 'tollgate.json');
  renameSync(file, fileElsewhere);

  const fromFile = await serve(['--config', fileElsewhere]);
  t.equal(fromFile.code, 0, fromFile.stderr);
  t.equal(portOf(fromFile.listening), filePort, 'the file\'s port when nothing overrides it');
  t.ok(existsSync(join(fileData, 'data.mdb')), 'the file\'s dataDir, relative to the working directory');
  t.notOk(existsSync(join(dir, 'conf', 'from-file')), 'not relative to the config file');

  const blockFile = await occupy(filePort);
  t.teardown(() => blockFile.close());
  const fromEnv = await serve(['--config', fileElsewhere], { TOLLGATE_PORT: String(envPort), TOLLGATE_DATA_DIR: envData });
  t.equal(fromEnv.code, 0, fromEnv.stderr);
  t.equal(portOf(fromEnv.listening), envPort, 'TOLLGATE_PORT beats the file');
  t.ok(existsSync(join(envData, 'data.mdb')), 'TOLLGATE_DATA_DIR beats the file');

  const blockEnv = await occupy(envPort);
  t.teardown(() => blockEnv.close());
  const fromFlag = await serve(['--config', fileElsewhere, '--port', '0', '--data', flagData], { TOLLGATE_PORT: String(envPort), TOLLGATE_DATA_DIR: envData });
  t.equal(fromFlag.code, 0, fromFlag.stderr);
  const port = portOf(fromFlag.listening);
  t.ok(port > 0 && port !== envPort && port !== filePort, '--port 0 beats TOLLGATE_PORT: a fresh port');
  t.ok(existsSync(join(flagData, 'data.mdb')), '--data beats TOLLGATE_DATA_DIR');

  const badEnv = await serve(['--config', fileElsewhere], { TOLLGATE_PORT: 'eighty' });
  t.equal(badEnv.code, 2, 'a bad TOLLGATE_PORT is bad usage');
  t.match(badEnv.stderr, /TOLLGATE_PORT/, 'and the reason names the variable');
  t.equal(badEnv.listening, null);
});

t.test('TOLLGATE_CONFIG names the file; --config beats it', async (t) => {
  const bad = configWith((c) => (c.bogus = true));
  const good = configWith(() => {});
  const viaEnv = await serve(['--data', data, '--port', '0'], { TOLLGATE_CONFIG: bad });
  t.equal(viaEnv.code, 2, 'the file named by TOLLGATE_CONFIG is loaded');
  t.match(viaEnv.stderr, /bogus/);
  const viaFlag = await serve(['--config', good, '--data', data, '--port', '0'], { TOLLGATE_CONFIG: bad });
  t.equal(viaFlag.code, 0, viaFlag.stderr);
  t.not(viaFlag.listening, null, '--config wins');
});

t.test('a config file without dataDir keeps its data in ./data of the working directory', async (t) => {
  const cwd = join(dir, 'workdir');
  mkdirSync(join(dir, 'elsewhere'), { recursive: true });
  mkdirSync(cwd, { recursive: true });
  const file = join(dir, 'elsewhere', 'tollgate.json');
  renameSync(configWith(() => {}), file);
  const served = await serve(['--config', file, '--port', '0'], {}, cwd);
  t.equal(served.code, 0, served.stderr);
  t.ok(existsSync(join(cwd, 'data', 'data.mdb')), './data under the working directory');
  t.notOk(existsSync(join(dir, 'elsewhere', 'data')), 'not beside the config file');
});

t.test('a file that sets only some sections keeps the built-in defaults for the rest', async (t) => {
  const file = join(dir, 'only-port.json');
  const port = await unlistenedPort();
  writeFileSync(file, JSON.stringify({ server: { host: '127.0.0.1', port } }));
  const served = await serve(['--config', file, '--data', data]);
  t.equal(served.code, 0, served.stderr);
  t.equal(portOf(served.listening), port, 'the port from the file');
  const listed = await runCli(['models', 'list', '--json', '--config', file, '--data', data]);
  t.equal(listed.code, 0, listed.stderr);
  const ids = (JSON.parse(listed.stdout) as Array<{ id: string }>).map((m) => m.id);
  t.ok(ids.includes('gpt-4o-mini') && ids.some((id) => id.startsWith('claude-')), 'the default catalogue');
});

t.test('a ./tollgate.config.json that is there but cannot be read is refused, not replaced by the defaults', async (t) => {
  const cwd = join(dir, 'dangling');
  mkdirSync(cwd, { recursive: true });
  symlinkSync('/nonexistent/tollgate.json', join(cwd, 'tollgate.config.json'));
  const served = await serve(['--port', '0'], {}, cwd);
  t.equal(served.listening, null, 'never listens on the built-in defaults');
  t.equal(served.code, 2);
  t.equal(served.stderr, 'tollgate: config: tollgate.config.json: cannot be read (ENOENT: a symbolic link to /nonexistent/tollgate.json, which does not exist)\n');
  t.notOk(existsSync(join(cwd, 'data')), 'no store made');
  const keys = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [CLI, 'keys', 'list'], { env: cleanEnv(), cwd, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code, stderr }));
  });
  t.equal(keys.code, 2, 'keys list too');
  t.match(keys.stderr, /^tollgate: config: tollgate\.config\.json: cannot be read/);
});

t.test('a config file saved with a UTF-8 byte order mark starts', async (t) => {
  const file = join(dir, 'with-bom.json');
  writeFileSync(file, `\uFEFF${JSON.stringify(defaultConfig('http://127.0.0.1:9'))}`);
  const served = await serve(['--config', file, '--data', data, '--port', '0']);
  t.equal(served.code, 0, served.stderr);
  t.not(served.listening, null);
});

t.test('built-in catalogue providers without a provider of their name are said at start-up', async (t) => {
  const file = join(dir, 'myoai.json');
  writeFileSync(file, JSON.stringify({ providers: { myoai: { baseUrl: 'http://127.0.0.1:9/v1', auth: 'bearer', apiKeyEnv: 'OPENAI_API_KEY' } } }));
  const served = await serve(['--config', file, '--data', data, '--port', '0']);
  t.equal(served.code, 0, served.stderr);
  t.match(served.stdout, /tollgate serves 0 models\n/);
  const warning = served.stderr.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((l) => l.event === 'built_in_models_left_out');
  t.match(warning, { level: 'warn', providers: 'openai,anthropic', consequence: /models of openai and anthropic are not served/ }, 'named, before the server listens');
  const usual = await serve(['--config', configWith(() => {}), '--data', data, '--port', '0']);
  t.notMatch(usual.stderr, /built_in_models_left_out/, 'not with builtInModels false');
});

t.test('a provider credential no header can carry is refused at start-up, naming the variable and not the value', async (t) => {
  const pool = configWith((c) => {
    delete c.providers.openai.apiKeyEnv;
    c.providers.openai.credentials = [{ name: 'org-a', apiKeyEnv: 'OPENAI_API_KEY' }, { name: 'org-b', apiKeyEnv: 'OPENAI_KEY_B' }];
  });
  const fresh = join(dir, 'never-made');
  for (const [what, file, env, variable] of [
    ['apiKeyEnv', configWith(() => {}), { ANTHROPIC_API_KEY: 'sk-ant-sec\nret' }, 'ANTHROPIC_API_KEY'],
    ['a pool credential', pool, { OPENAI_KEY_B: 'sk-b-\u0007secret\n' }, 'OPENAI_KEY_B'],
  ] as const) {
    const r = await serve(['--config', file, '--data', fresh, '--port', '0'], env);
    t.equal(r.listening, null, `${what}: never listens`);
    t.equal(r.code, 2, `${what}: exit 2`);
    t.match(r.stderr, new RegExp(`^tollgate: ${variable} holds a character no HTTP header can carry[^\n]*\n$`), `${what}: one line naming ${variable}`);
    t.notMatch(r.stderr, /sk-/, `${what}: the value is not shown`);
  }
  const curly = await serve(['--config', pool, '--data', fresh, '--port', '0'], { OPENAI_API_KEY: 'sk-a', OPENAI_KEY_B: 'sk-b\u2019s' });
  t.equal(curly.code, 2, 'a character beyond Latin-1: exit 2');
  t.match(curly.stderr, /^tollgate: OPENAI_KEY_B holds a character no HTTP header can carry \(a control character, or one beyond Latin-1, inside the value/, 'the message fits what was found');
  t.notOk(existsSync(fresh), 'nothing opened');
});

t.test('two credentials of a pool holding the same key for the same base URL are refused at start-up', async (t) => {
  const pool = (credentials: Array<Record<string, unknown>>): string => configWith((c) => {
    delete c.providers.openai.apiKeyEnv;
    c.providers.openai.credentials = credentials;
  });
  const fresh = join(dir, 'never-made-twice');
  for (const [what, file, env, said] of [
    ['one variable named twice', pool([{ name: 'org-a', apiKeyEnv: 'OPENAI_API_KEY' }, { name: 'org-b', apiKeyEnv: 'OPENAI_API_KEY' }]), { OPENAI_API_KEY: 'sk-same' }, 'both from OPENAI_API_KEY'],
    ['two variables set to one value', pool([{ name: 'org-a', apiKeyEnv: 'OPENAI_API_KEY' }, { name: 'org-b', apiKeyEnv: 'OPENAI_KEY_B' }]), { OPENAI_API_KEY: 'sk-same', OPENAI_KEY_B: ' sk-same\n' }, 'from OPENAI_API_KEY and OPENAI_KEY_B'],
  ] as const) {
    const r = await serve(['--config', file, '--data', fresh, '--port', '0'], env);
    t.equal(r.listening, null, `${what}: never listens`);
    t.equal(r.code, 2, `${what}: exit 2`);
    t.equal(r.stderr, `tollgate: providers.openai: the credentials "org-a" and "org-b" hold the same key (${said}): each entry of a pool must be a key of its own, or a call one refuses is sent to the same key again\n`, `${what}: one line naming both`);
  }
  t.notOk(existsSync(fresh), 'nothing opened');
  const regions = pool([{ name: 'us', apiKeyEnv: 'OPENAI_API_KEY' }, { name: 'eu', apiKeyEnv: 'OPENAI_API_KEY', baseUrl: 'http://127.0.0.1:9/eu/v1' }]);
  const served = await serve(['--config', regions, '--data', data, '--port', '0'], { OPENAI_API_KEY: 'sk-same' });
  t.equal(served.code, 0, `one key at two base URLs is two credentials: ${served.stderr}`);
  t.not(served.listening, null);
});

t.test('a provider without its credential is named at start-up, with the way to try the gateway without one', async (t) => {
  const served = await serve(['--config', configWith(() => {}), '--data', data, '--port', '0'], { OPENAI_API_KEY: '' });
  t.equal(served.code, 0, served.stderr);
  const warning = served.stderr.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((l) => l.event === 'provider_credential_missing');
  t.match(warning, { provider: 'openai', env: 'OPENAI_API_KEY', consequence: /model_not_available.*tollgate serve --mock/ });
});
