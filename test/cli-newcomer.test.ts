/**
 * The command line a newcomer tries: --version, help at every level, keys show with a full
 * key, status printed once, rotated keys marked as sharing one account, --usd with too many
 * decimals, keys set --json, an allowlist naming a switched-off model, a config with only
 * providers.openai, and a demo that does not point at a server it stopped.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { defaultConfig, runCli } from './helpers/harness.js';

const dir = mkdtempSync(join(tmpdir(), 'tollgate-newcomer-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const configFile = join(dir, 'tollgate.config.json');
writeFileSync(configFile, JSON.stringify(defaultConfig('http://127.0.0.1:9')));
const cli = (args: string[]): ReturnType<typeof runCli> => runCli([...args, '--config', configFile, '--data', join(dir, 'data')]);

t.test('--version and help at every level exit 0', async (t) => {
  const v = await runCli(['--version']);
  t.equal(v.code, 0);
  t.match(v.stdout, /^tollgate 0\.1\.0 \(node v\d+\.\d+\.\d+\)\n$/);
  for (const args of [['help'], ['--help'], ['keys', '--help'], ['keys', 'help'], ['keys', 'create', '--help'], ['models', '--help'], ['models', 'help'], ['serve', '--help'], ['audit', '--help']]) {
    const r = await runCli(args);
    t.equal(r.code, 0, `tollgate ${args.join(' ')}: exit 0`);
    t.match(r.stdout, /tollgate (keys|models|serve|audit)/, `tollgate ${args.join(' ')}: usage on stdout`);
    t.equal(r.stderr, '');
  }
});

t.test('keys: status once, shared accounts marked, --usd decimals, set --json, switched-off models warn', async (t) => {
  const made = JSON.parse((await cli(['keys', 'create', '--mode', 'credit', '--balance', '3', '--json'])).stdout);
  t.equal((await cli(['keys', 'suspend', made.id])).code, 0);
  const shown = await cli(['keys', 'show', made.key]);
  t.equal(shown.code, 0, 'keys show takes the full key');
  t.match(shown.stdout, /^\s+status\s+suspended$/m, 'status printed once');
  t.notOk(shown.stdout.includes('suspended (suspended)'));
  t.equal((await cli(['keys', 'resume', made.id])).code, 0);

  const rotated = JSON.parse((await cli(['keys', 'rotate', made.id, '--json'])).stdout);
  const list = (await cli(['keys', 'list'])).stdout;
  t.match(list, new RegExp(`${made.id}[^\\n]*\\$3\\.000000 \\(shared by 2 keys\\)`), 'the balance once, marked as shared');
  t.match(list, new RegExp(`${rotated.id}[^\\n]*shared with ${made.id}`), 'the rotated key points at it');
  t.equal(list.match(/\$3\.000000/g)?.length, 1, 'not shown twice as though each key had it');

  const decimals = await cli(['keys', 'topup', made.id, '--usd', '0.0000000001']);
  t.equal(decimals.code, 2);
  t.match(decimals.stderr, /--usd has more than 9 decimals/);

  const set = await cli(['keys', 'set', made.id, '--rpm', '9', '--json']);
  t.equal(set.code, 0);
  t.match(JSON.parse(set.stdout), { id: made.id, rpm: 9 });

  t.equal((await cli(['models', 'disable', 'gpt-4o'])).code, 0);
  const warned = await cli(['keys', 'set', made.id, '--models', 'gpt-4o,gpt-4o-mini']);
  t.equal(warned.code, 0);
  t.match(warned.stderr, /^warning: model gpt-4o is switched off[^\n]*tollgate models enable gpt-4o\n$/);
  const created = await cli(['keys', 'create', '--mode', 'token', '--budget', '5', '--models', 'gpt-4o', '--json']);
  t.match(created.stderr, /warning: model gpt-4o is switched off/);
  const clean = await cli(['keys', 'set', made.id, '--models', 'gpt-4o-mini']);
  t.equal(clean.stderr, '', 'no warning for enabled models');
});

t.test('a config with only providers.openai is a whole configuration', async (t) => {
  const only = join(dir, 'openai-only.json');
  writeFileSync(only, JSON.stringify({ providers: { openai: { baseUrl: 'https://api.openai.com/v1', auth: 'bearer', apiKeyEnv: 'OPENAI_API_KEY' } } }));
  // The store the tests above made: a models command needs one (only serve and keys create start one).
  const r = await runCli(['models', 'list', '--json', '--config', only, '--data', join(dir, 'data')]);
  t.equal(r.code, 0, r.stderr);
  const models = JSON.parse(r.stdout);
  t.ok(models.length > 0, 'the built-in catalogue of that provider');
  t.ok(models.every((m: any) => m.provider === 'openai'), 'and only its models');
});

t.test('the demo does not end by pointing at the server it stopped', async (t) => {
  const r = await runCli(['demo']);
  t.equal(r.code, 0, r.stderr);
  const base = /gateway on (http:\/\/\S+);/.exec(r.stdout)![1]!;
  const after = r.stdout.slice(r.stdout.indexOf('stops now'));
  t.ok(after.length > 0, 'the closing lines are there');
  t.notOk(after.includes(base), 'the closing lines name no URL of the stopped demo server');
  t.match(r.stdout, /npm start/);
});
