/**
 * The CLI's contract for bad usage (exit 2, one line on stderr, nothing on stdout, nothing
 * written), its JSON output for created keys, how a bare expiry date is read, and that a key's
 * secret is shown once and stored nowhere in the data directory.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { CLI_MODES, defaultConfig, runCli, startGateway, type CliResult } from './helpers/harness.js';

// Some 90 processes of their own, 4 at a time, local and remote: on a shared two-core machine
// under load the file has taken more than tap's default 120 s while every check passed.
t.setTimeout(10 * 60_000);

const dir = mkdtempSync(join(tmpdir(), 'tollgate-cli-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const configFile = join(dir, 'tollgate.config.json');
writeFileSync(configFile, JSON.stringify(defaultConfig('http://127.0.0.1:9')));

/** Every file under a data directory, as bytes. */
function dataBytes(dataDir: string): Buffer {
  const parts: Buffer[] = [];
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else parts.push(readFileSync(p));
    }
  };
  walk(dataDir);
  return Buffer.concat(parts);
}

// The same tests for the command line on a data directory and through a server's admin API.
for (const mode of CLI_MODES) t.test(`${mode} command line`, async (t) => {
  let dataDir = join(dir, 'data');
  let cli = (args: string[]): Promise<CliResult> => runCli([...args, '--config', configFile, '--data', dataDir]);
  if (mode === 'remote') {
    const gw = await startGateway(t, { cliMode: 'remote' });
    dataDir = gw.dataDir;
    cli = gw.cli;
  }

  async function create(args: string[]): Promise<{ id: string; key: string; prefix: string; mode: string }> {
    const r = await cli(['keys', 'create', ...args, '--json']);
    if (r.code !== 0) throw new Error(`keys create failed: ${r.stderr}`);
    return JSON.parse(r.stdout);
  }

  t.test('keys create --json prints exactly one JSON object with id, key, prefix, mode', async (t) => {
    for (const args of [['--mode', 'credit', '--balance', '5'], ['--mode', 'token', '--budget', '1000']]) {
      const r = await cli(['keys', 'create', ...args, '--json']);
      t.equal(r.code, 0, r.stderr);
      t.equal(r.stderr, '');
      const lines = r.stdout.split('\n').filter((l) => l.length > 0);
      t.equal(lines.length, 1, 'one line');
      const o = JSON.parse(lines[0]!);
      t.type(o, 'object');
      t.type(o.id, 'string');
      t.ok(o.id.length > 0);
      t.equal(o.key.length, 40);
      t.match(o.key, /^gw_live_[0-9a-f]{32}$/);
      t.equal(o.prefix.length, 12);
      t.equal(o.prefix, o.key.slice(0, 12));
      t.equal(o.mode, args[1]);
      if (o.mode === 'credit') t.same([o.balanceUsd, o.balanceNanoUsd, o.heldNanoUsd], ['5.000000', 5_000_000_000, 0], 'a credit key: its balance in USD and, exact, in nano-dollars');
    }
  });

  t.test('the full key is shown only at creation and rotation, and stored only hashed', async (t) => {
    const a = await create(['--mode', 'credit', '--balance', '1']);
    const rot = await cli(['keys', 'rotate', a.id, '--json']);
    t.equal(rot.code, 0);
    const b = JSON.parse(rot.stdout);
    t.match(b.key, /^gw_live_[0-9a-f]{32}$/);

    const list = await cli(['keys', 'list', '--json']);
    t.equal(list.code, 0);
    const listed = JSON.parse(list.stdout);
    t.ok(Array.isArray(listed));
    t.ok(listed.some((k: any) => k.id === a.id) && listed.some((k: any) => k.id === b.id), 'both keys listed');
    for (const secret of [a.key, b.key]) {
      t.notOk(list.stdout.includes(secret), 'keys list --json never holds a full key');
      t.notOk(list.stdout.includes(secret.slice(8)), 'nor its secret part');
    }
    const plain = await cli(['keys', 'list']);
    t.notOk(plain.stdout.includes(a.key) || plain.stdout.includes(b.key), 'nor does the table');
    const show = await cli(['keys', 'show', a.id, '--json']);
    t.notOk(show.stdout.includes(a.key), 'nor keys show');
    t.equal(JSON.parse(show.stdout).prefix, a.prefix);

    const bytes = dataBytes(dataDir);
    t.ok(bytes.includes(a.prefix), 'the data files do hold the key records (the search is not vacuous)');
    for (const secret of [a.key, b.key]) {
      t.equal(bytes.indexOf(secret), -1, 'the full key is nowhere in the data directory');
      t.equal(bytes.indexOf(secret.slice(8)), -1, 'nor its 32 hex characters');
      t.equal(bytes.indexOf(Buffer.from(secret.slice(8), 'hex')), -1, 'nor its raw bytes');
      t.not(bytes.indexOf(createHash('sha256').update(secret).digest('hex')), -1, 'its hash is what is stored');
    }

    // The full key is accepted as a KEY-REF (looked up by its hash) and is not printed back.
    const byKey = await cli(['keys', 'show', a.key, '--json']);
    t.equal(byKey.code, 0, byKey.stderr);
    t.equal(JSON.parse(byKey.stdout).id, a.id, 'keys show FULL-KEY finds the key');
    t.notOk(byKey.stdout.includes(a.key), 'and does not print it');
  });

  t.test('--expires: a bare date means the end of that day, UTC', async (t) => {
    const k = await create(['--mode', 'credit', '--balance', '1', '--expires', '2031-05-17']);
    const show = await cli(['keys', 'show', k.id, '--json']);
    t.equal(show.code, 0);
    t.equal(JSON.parse(show.stdout).expiresAt, '2031-05-17T23:59:59.999Z', 'the last millisecond of that day');
    const end = await create(['--mode', 'credit', '--balance', '1', '--expires', '2031-12-31']);
    t.equal(JSON.parse((await cli(['keys', 'show', end.id, '--json'])).stdout).expiresAt, '2031-12-31T23:59:59.999Z', 'at a year end');
    const exact = await create(['--mode', 'credit', '--balance', '1', '--expires', '2031-05-17T10:30:00Z']);
    t.equal(JSON.parse((await cli(['keys', 'show', exact.id, '--json'])).stdout).expiresAt, '2031-05-17T10:30:00.000Z', 'a date-time is taken as given');
    const ext = await cli(['keys', 'extend', k.id, '--expires', '2032-02-29']);
    t.equal(ext.code, 0);
    t.equal(JSON.parse((await cli(['keys', 'show', k.id, '--json'])).stdout).expiresAt, '2032-02-29T23:59:59.999Z', 'extend reads it the same way');
  });

  t.test('a past --expires works (exit 0) but warns, and the key shows as expired', async (t) => {
    const r = await cli(['keys', 'create', '--mode', 'credit', '--balance', '1', '--expires', '2020-01-01', '--json']);
    t.equal(r.code, 0);
    t.match(r.stderr, /past|expired/i, 'a warning on stderr');
    t.equal(r.stderr.trim().split('\n').length, 1);
    const k = JSON.parse(r.stdout);
    t.equal(k.state, 'expired');
    const show = JSON.parse((await cli(['keys', 'show', k.id, '--json'])).stdout);
    t.equal(show.expiresAt, '2020-01-01T23:59:59.999Z');
    t.equal(show.state, 'expired');
    t.equal(show.status, 'active', 'expiry is not a status change');
  });

  t.test('bad usage: exit 2, one line on stderr, nothing on stdout', async (t) => {
    const credit = await create(['--mode', 'credit', '--balance', '1']);
    const token = await create(['--mode', 'token', '--budget', '100']);
    const unusedPrefix = ['gw_live_0000', 'gw_live_0001', 'gw_live_0002'].find((p) => p !== credit.prefix && p !== token.prefix)!;
    const before = JSON.parse((await cli(['keys', 'list', '--json'])).stdout);

    const cases: [string, string[]][] = [
      ['unknown command', ['frobnicate']],
      ['unknown keys subcommand', ['keys', 'frobnicate']],
      ['unknown models subcommand', ['models', 'frobnicate']],
      ['unknown flag', ['keys', 'list', '--bogus']],
      ['unknown flag on create', ['keys', 'create', '--mode', 'credit', '--balance', '1', '--colour', 'red']],
      ['flag of another subcommand', ['keys', 'create', '--mode', 'credit', '--balance', '1', '--usd', '1']],
      ['create without --mode', ['keys', 'create', '--balance', '1']],
      ['create with an unknown mode', ['keys', 'create', '--mode', 'gold', '--balance', '1']],
      ['credit with --budget', ['keys', 'create', '--mode', 'credit', '--budget', '100']],
      ['credit without --balance', ['keys', 'create', '--mode', 'credit']],
      ['token with --balance', ['keys', 'create', '--mode', 'token', '--balance', '1']],
      ['--balance abc', ['keys', 'create', '--mode', 'credit', '--balance', 'abc']],
      ['--balance -1', ['keys', 'create', '--mode', 'credit', '--balance', '-1']],
      ['--budget -3', ['keys', 'create', '--mode', 'token', '--budget', '-3']],
      ['topup --usd -1', ['keys', 'topup', credit.id, '--usd', '-1']],
      ['--balance 1e3', ['keys', 'create', '--mode', 'credit', '--balance', '1e3']],
      ['--rpm abc', ['keys', 'create', '--mode', 'credit', '--balance', '1', '--rpm', 'abc']],
      ['--rpm 0', ['keys', 'create', '--mode', 'credit', '--balance', '1', '--rpm', '0']],
      ['--expires tomorrow', ['keys', 'create', '--mode', 'credit', '--balance', '1', '--expires', 'tomorrow']],
      ['--expires 2027-02-30', ['keys', 'create', '--mode', 'credit', '--balance', '1', '--expires', '2027-02-30']],
      ['unknown model in --models', ['keys', 'create', '--mode', 'credit', '--balance', '1', '--models', 'gpt-4o-mini,gpt-9']],
      ['set with nothing to set', ['keys', 'set', credit.id]],
      ['set --rpm and --no-rpm', ['keys', 'set', credit.id, '--rpm', '5', '--no-rpm']],
      ['topup with both flags', ['keys', 'topup', credit.id, '--usd', '1', '--tokens', '5']],
      ['topup with neither flag', ['keys', 'topup', credit.id]],
      ['topup --tokens on a credit key', ['keys', 'topup', credit.id, '--tokens', '5']],
      ['topup --usd on a token key', ['keys', 'topup', token.id, '--usd', '1']],
      ['topup --usd 0', ['keys', 'topup', credit.id, '--usd', '0']],
      ['extend without --expires', ['keys', 'extend', credit.id]],
      ['show without KEY-REF', ['keys', 'show']],
      ['unknown key id', ['keys', 'show', 'key_0000000000000000']],
      ['unknown prefix', ['keys', 'suspend', unusedPrefix]],
      ['a whole key that is no key', ['keys', 'show', `gw_live_${'0'.repeat(32)}`]],
      ['--usd with 10 decimals', ['keys', 'topup', credit.id, '--usd', '1.0000000001']],
      ['--balance past the most a key can hold', ['keys', 'create', '--mode', 'credit', '--balance', '9223372']],
      ['--budget past the most a key can hold', ['keys', 'create', '--mode', 'token', '--budget', '9007199254740992']],
      ['a top-up whose sum passes the most a key can hold', ['keys', 'topup', credit.id, '--usd', '9007199.254740991']],
      ['a top-up in tokens whose sum passes it', ['keys', 'topup', token.id, '--tokens', '9007199254740991']],
      ['--name with a line break', ['keys', 'create', '--mode', 'credit', '--balance', '1', '--name', 'a\nkey_fake']],
      ['set --name with a terminal escape', ['keys', 'set', credit.id, '--name', '\u001b[2J']],
      ['a KEY-REF that is neither', ['keys', 'resume', 'my-key']],
      ['extra argument', ['keys', 'show', credit.id, 'extra']],
      ['models enable unknown model', ['models', 'enable', 'gpt-9']],
      ['serve with a bad port', ['serve', '--port', 'http']],
      ['store without a subcommand', ['store']],
    ];
    // A few at a time: each is a process of its own.
    const results: CliResult[] = [];
    for (let i = 0; i < cases.length; i += 4) results.push(...(await Promise.all(cases.slice(i, i + 4).map(([, args]) => cli(args)))));
    cases.forEach(([name, args], i) => {
      const r = results[i]!;
      t.equal(r.code, 2, `${name}: exit 2`);
      t.equal(r.stdout, '', `${name}: nothing on stdout`);
      t.match(r.stderr, /^[^\n]+\n$/, `${name}: exactly one line on stderr (${JSON.stringify(r.stderr)})`);
      const fullKey = args.find((a) => /^gw_live_[0-9a-f]{32}$/.test(a));
      if (fullKey !== undefined) t.notOk(r.stderr.includes(fullKey), `${name}: the key is not echoed back`);
      const flag = args.find((a, j) => a.startsWith('--') && /^-\d/.test(args[j + 1] ?? ''));
      if (flag !== undefined) t.match(r.stderr, flag, `${name}: the reason names ${flag}, not an "ambiguous" option`);
    });

    const bare = await runCli([]);
    t.equal(bare.code, 2, 'no command at all: exit 2');
    t.match(bare.stderr, /^tollgate: a command is needed[^\n]*\n$/, 'with one line saying so');
    for (const command of ['serve', 'keys', 'models', 'audit', 'store', 'demo', 'help']) t.match(bare.stderr, new RegExp(`\\b${command}\\b`), `the line names ${command}`);
    for (const args of [['--bogus'], ['--bogus=1', 'keys', 'list'], ['--data', dir, '--verbose', 'keys', 'list']]) {
      const r = await runCli(args);
      t.equal(r.code, 2, `${args.join(' ')}: exit 2`);
      t.match(r.stderr, /^tollgate: unknown option '--(bogus|verbose)' before the command \(global options: [^\n]*\n$/, `${args.join(' ')}: one line calling it an option, not a command`);
    }
    // An admin URL that cannot be one is bad usage too, named by where it came from (the
    // option wins over the variable, so these run without the remote mode's own --admin-url).
    const adminUrls: Array<[string, string[], NodeJS.ProcessEnv, RegExp]> = [
      ['no URL', ['keys', 'list', '--admin-url', 'notaurl'], {}, /^tollgate: --admin-url must be [^\n]*got 'notaurl'\n$/],
      ['another scheme, before the command', ['--admin-url', 'redis://127.0.0.1:6379', 'keys', 'list'], {}, /^tollgate: --admin-url must be [^\n]*got 'redis:\/\/127\.0\.0\.1:6379'\n$/],
      ['no URL, from the variable', ['models', 'list'], { TOLLGATE_ADMIN_URL: '127.0.0.1:8081' }, /^tollgate: TOLLGATE_ADMIN_URL must be [^\n]*got '127\.0\.0\.1:8081'\n$/],
    ];
    for (const [name, args, env, line] of adminUrls) {
      const r = await runCli(args, env);
      t.equal(r.code, 2, `an admin URL that is ${name}: exit 2`);
      t.match(r.stderr, line, `an admin URL that is ${name}: one line naming it`);
    }
    const amount = await cli(['keys', 'create', '--mode', 'credit', '--balance', 'abc']);
    t.match(amount.stderr, /must be an amount in USD like 5 or 12\.50, got 'abc'/, '--balance abc: "an amount", as English has it');
    const large = await cli(['keys', 'create', '--mode', 'credit', '--balance', '9223372']);
    t.equal(large.stderr, "tollgate: --balance is too large: a key can hold at most 9007199.254740991 USD, got '9223372'\n", 'a well-formed amount past the most: said too large, with the most');
    const help = await runCli(['help']);
    t.equal(help.code, 0, 'tollgate help: exit 0');
    t.match(help.stdout, /tollgate keys create/);

    const after = JSON.parse((await cli(['keys', 'list', '--json'])).stdout);
    t.same(after, before, 'no bad command changed anything');
  });

});

t.test('an unusable data directory: exit 1 and one line naming it, promptly', async (t) => {
  const file = join(dir, 'a-file');
  writeFileSync(file, 'not a directory');
  const cases: Array<[string, string, RegExp]> = [
    ['under /proc (Node 20 recursive mkdir would never return)', '/proc/nonexistent/x', /^tollgate: cannot create the data directory \/proc\/nonexistent\/x: [^\n]+\n$/],
    ['below a file', join(file, 'x'), /^tollgate: cannot create the data directory [^\n]*a-file\/x: not a directory[^\n]*\n$/],
    ['a file', file, /^tollgate: the data directory [^\n]*a-file is not a directory\n$/],
  ];
  for (const [name, dataDir, line] of cases) {
    // `keys create`: the one issuer command that makes a store where there is none.
    const r = await runCli(['keys', 'create', '--mode', 'credit', '--balance', '1', '--config', configFile, '--data', dataDir], {}, 15_000);
    t.equal(r.code, 1, `${name}: exit 1 (null would mean it hung and was killed)`);
    t.equal(r.stdout, '', `${name}: nothing on stdout`);
    t.match(r.stderr, line, `${name}: one line naming the directory`);
  }
  t.equal(readFileSync(file, 'utf8'), 'not a directory', 'the file is untouched');
});
