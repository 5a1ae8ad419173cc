/**
 * The command line cannot be aimed wrong: only `serve` and `keys create` make a store, every
 * other command run where there is none exits 1 with one line naming the directory and how to
 * point elsewhere, creating nothing; global options go before or after the command; `--help`
 * on every command prints its usage and runs nothing; output into a closed pipe ends the
 * command quietly (exit 0), the demo removing its temporary directory on every way out; a
 * local `models list` names what the server's environment must provide.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ADMIN_TOKEN, CLI, startGateway } from './helpers/harness.js';
import { cleanEnv, tollgateIn } from './helpers/newcomer.js';

t.setTimeout(10 * 60_000);

/** A fresh empty directory, removed with the test. */
function emptyDir(t: { teardown(fn: () => void): void }, name: string): string {
  const dir = mkdtempSync(join(tmpdir(), `tollgate-${name}-`));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

t.test('where there is no store: exit 1, one line naming the directory, nothing created', async (t) => {
  const cwd = emptyDir(t, 'no-store');
  const cases: Array<[string[], string]> = [
    [['keys', 'list'], join(cwd, 'data')],
    [['keys', 'set', 'gw_live_abcd', '--rpm', '5'], join(cwd, 'data')],
    [['keys', 'show', 'key_0000000000000000'], join(cwd, 'data')],
    [['models', 'list'], join(cwd, 'data')],
    [['models', 'disable', 'gpt-4o-mini'], join(cwd, 'data')],
    [['audit'], join(cwd, 'data')],
    [['store', 'migrate', '--to', 'redis://127.0.0.1:1', '--data', './typo'], join(cwd, 'typo')],
    [['keys', 'list', '--data', './typo'], join(cwd, 'typo')],
    [['--data', './typo', 'keys', 'list'], join(cwd, 'typo')],
  ];
  for (const [args, dir] of cases) {
    const r = await tollgateIn(cwd, args);
    t.equal(r.code, 1, `tollgate ${args.join(' ')}: exit 1`);
    t.equal(r.stdout, '', 'nothing on stdout');
    t.match(r.stderr, /^tollgate: [^\n]+\n$/, 'one line on stderr');
    t.ok(r.stderr.includes(`no store in ${dir}:`), `it names ${dir}: ${r.stderr.trim()}`);
    t.match(r.stderr, /--data DIR/, 'and how to point at the right one');
    t.same(readdirSync(cwd), [], 'nothing was created');
  }
  // The two that start a store do.
  const made = await tollgateIn(cwd, ['keys', 'create', '--mode', 'credit', '--balance', '1']);
  t.equal(made.code, 0, made.stderr);
  t.same(readdirSync(cwd), ['data'], 'keys create made ./data');
  const listed = await tollgateIn(cwd, ['keys', 'list']);
  t.equal(listed.code, 0, 'and now keys list finds it');
});

t.test('global options before or after the command, and before a subcommand', async (t) => {
  const cwd = emptyDir(t, 'options');
  const data = join(cwd, 'elsewhere');
  const made = JSON.parse((await tollgateIn(cwd, ['--data', data, 'keys', 'create', '--mode', 'credit', '--balance', '1', '--json'])).stdout);
  for (const args of [
    ['--data', data, 'keys', 'list', '--json'],
    [`--data=${data}`, 'keys', 'list', '--json'],
    ['keys', '--data', data, 'list', '--json'],
    ['keys', 'list', '--json', '--data', data],
  ]) {
    const r = await tollgateIn(cwd, args);
    t.equal(r.code, 0, `tollgate ${args.join(' ')}: ${r.stderr}`);
    t.equal(JSON.parse(r.stdout || '[]')[0]?.id, made.id, 'the key of that store');
  }
  const audit = await tollgateIn(cwd, ['--data', data, 'audit', '--json']);
  t.equal(audit.code, 0, audit.stderr);

  const gw = await startGateway(t, { admin: true });
  const remote = await tollgateIn(cwd, ['--admin-url', gw.admin!, 'keys', 'list', '--json'], { TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN });
  t.equal(remote.code, 0, `--admin-url before the command: ${remote.stderr}`);
  t.same(JSON.parse(remote.stdout), [], 'the server\'s (empty) list');
  const config = await tollgateIn(cwd, ['--config', gw.configFile, '--data', gw.dataDir, 'models', 'list', '--json']);
  t.equal(config.code, 0, `--config before the command: ${config.stderr}`);
  t.ok(JSON.parse(config.stdout).some((m: { id: string }) => m.id === 'gpt-4o-mini'), 'the models of that config');
});

t.test('--help on every command prints its usage and runs nothing', async (t) => {
  const cwd = emptyDir(t, 'help');
  const tmp = join(cwd, 'tmp');
  mkdirSync(tmp);
  for (const args of [
    ['serve', '--help'], ['serve', '--mock', '-h'], ['demo', '--help'], ['keys', 'list', '--help'], ['keys', 'create', '--mode', 'credit', '--help'],
    ['models', 'list', '--help'], ['audit', '--help'], ['store', 'migrate', '--help'], ['--data', './x', 'demo', '--help'],
  ]) {
    const r = await tollgateIn(cwd, args, { TMPDIR: tmp });
    const command = args.find((a) => !a.startsWith('-') && a !== './x')!;
    t.equal(r.code, 0, `tollgate ${args.join(' ')}: exit 0`);
    t.match(r.stdout, new RegExp(`^tollgate ${command}`), 'its usage on stdout');
    t.equal(r.stderr, '', 'nothing on stderr');
    t.same(readdirSync(cwd), ['tmp'], 'no store, no data directory');
    t.same(readdirSync(tmp), [], 'no temporary directory (the demo did not run)');
  }
});

t.test('into a closed pipe: exit 0, quietly; the demo removes its temporary directory', async (t) => {
  const cwd = emptyDir(t, 'pipes');
  const tmp = join(cwd, 'tmp');
  mkdirSync(tmp);
  await tollgateIn(cwd, ['keys', 'create', '--mode', 'credit', '--balance', '1']);
  for (const args of [['models', 'list'], ['keys', 'list'], ['demo'], ['help']]) {
    const r = await tollgateIn(cwd, args, { TMPDIR: tmp }, true);
    t.equal(r.code, 0, `tollgate ${args.join(' ')} into a closed pipe: exit 0`);
    t.equal(r.stderr, '', 'no EPIPE stack trace');
    t.same(readdirSync(tmp), [], 'no temporary directory left behind');
  }

  // `tollgate demo | head -n 1`, as typed: head leaves after the first line, the demo writes on.
  const shell = spawn('bash', ['-c', `set -o pipefail; "${process.execPath}" "${CLI}" demo | head -n 1`], { cwd, env: cleanEnv({ TMPDIR: tmp }), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  shell.stdout.on('data', (d) => (out += d));
  shell.stderr.on('data', (d) => (err += d));
  const code = await new Promise((resolve) => shell.on('close', resolve));
  t.equal(code, 0, 'demo | head -n 1: both exit 0');
  t.equal(out.split('\n').length, 2, 'one line through');
  t.equal(err, '', 'nothing on stderr');
  t.same(readdirSync(tmp), [], 'the demo\'s directory is gone');

  // Stopped while it runs (Ctrl-C, or a supervisor's SIGTERM): its directory goes too.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    const demo = spawn(process.execPath, [CLI, 'demo'], { cwd, env: cleanEnv({ TMPDIR: tmp }), stdio: ['ignore', 'pipe', 'pipe'] });
    await new Promise((resolve) => demo.stdout.once('data', resolve));
    t.equal(readdirSync(tmp).length, 1, 'while it runs, its directory is there');
    demo.kill(signal);
    const [exitCode] = await new Promise<[number | null, string | null]>((resolve) => demo.on('exit', (c, s) => resolve([c, s])));
    t.equal(exitCode, signal === 'SIGINT' ? 130 : 143, `${signal}: the shell's exit code for it`);
    t.same(readdirSync(tmp), [], `${signal}: the directory is gone`);
  }
});

t.test('a local models list names the variables the server must have, whatever this shell has', async (t) => {
  const cwd = emptyDir(t, 'models');
  await tollgateIn(cwd, ['keys', 'create', '--mode', 'credit', '--balance', '1']);
  const without = await tollgateIn(cwd, ['models', 'list']);
  const withKeys = await tollgateIn(cwd, ['models', 'list'], { OPENAI_API_KEY: 'sk-x', ANTHROPIC_API_KEY: 'sk-ant-x' });
  t.equal(without.code, 0, without.stderr);
  t.equal(without.stdout, withKeys.stdout, 'this shell\'s environment changes nothing');
  t.match(without.stdout, /OPENAI_API_KEY \(openai\)/, 'names OpenAI\'s variable');
  t.match(without.stdout, /ANTHROPIC_API_KEY \(anthropic\)/, 'and Anthropic\'s');
  t.match(without.stdout, /server/, 'as the server\'s to provide');
  t.notMatch(without.stdout, /unusable/, 'judges no provider unusable from here');
  t.notMatch(without.stdout, /\b(null|undefined|NaN)\b/, 'no raw null, undefined or NaN');
});

t.test('keys list, keys show and audit print no raw null, undefined or NaN for settings left empty', async (t) => {
  const cwd = emptyDir(t, 'no-null');
  const made = JSON.parse((await tollgateIn(cwd, ['keys', 'create', '--mode', 'credit', '--balance', '1', '--json'])).stdout);
  await tollgateIn(cwd, ['keys', 'create', '--mode', 'token', '--budget', '5']);
  for (const args of [['keys', 'list'], ['keys', 'show', made.id], ['audit']]) {
    const r = await tollgateIn(cwd, args);
    t.equal(r.code, 0, r.stderr);
    t.notMatch(r.stdout, /\b(null|undefined|NaN)\b/, `tollgate ${args.join(' ')}: none`);
  }
  t.match((await tollgateIn(cwd, ['audit'])).stdout, /models=all rpm=unlimited concurrency=unlimited expiresAt=never/, 'audit says what an empty setting means');
});
