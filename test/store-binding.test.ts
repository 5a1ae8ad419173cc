/**
 * The store runs on the LMDB binding scripts/build-lmdb.mjs builds (LMDB's ITS#9496 fix, without
 * which a process opening the store while another commits can make that commit be lost): the
 * install built it and lmdb-js loads it, and a process that would load lmdb-js's prebuilt
 * binding instead refuses to open the store, with one line saying how to fix it, and writes
 * nothing. A binding built elsewhere (for another Node.js, `npm run test:lts`) is used through
 * LMDB_PREBUILD only when the stamp beside it names it by its SHA-256. The build itself takes only
 * lmdb's own source with the fix: an mdb.c changed otherwise is refused before anything is built.
 */
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { appendFileSync, copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { defaultConfig, runCli } from './helpers/harness.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const lmdbDir = realpathSync(fileURLToPath(new URL('../node_modules/lmdb/', import.meta.url)));
/** Where this run's binding is: node_modules/lmdb, or LMDB_PREBUILD's directory (`npm run test:lts`). */
const bindingDir = process.env.LMDB_PREBUILD ? realpathSync(process.env.LMDB_PREBUILD) : lmdbDir;
/** LMDB's source inside lmdb's package. */
const MDB_C = 'dependencies/lmdb/libraries/liblmdb/mdb.c';
const sha256 = (path: string): string => createHash('sha256').update(readFileSync(path)).digest('hex');

t.test('the install built the fixed binding and lmdb-js loads it', async (t) => {
  const source = readFileSync(join(bindingDir, MDB_C), 'utf8');
  t.match(source, '\tif (prev && env->me_txns)\n\t\tenv->me_txns->mti_txnid = meta.mm_txnid;', 'mdb_env_open2 carries the fix');
  const stamp = JSON.parse(readFileSync(join(bindingDir, 'build/Release/tollgate-lmdb-fix.json'), 'utf8'));
  t.equal(stamp.nodeModules, process.versions.modules, 'built for this Node.js');
  t.equal(stamp.bindingSha256, sha256(join(bindingDir, 'build/Release/lmdb.node')), 'the stamp names the binding by its SHA-256');
  await import('lmdb');
  const maps = readFileSync('/proc/self/maps', 'utf8');
  t.ok(maps.includes(join(bindingDir, 'build/Release/lmdb.node')), 'the binding loaded is the one built from source');
});

t.test('build-lmdb builds only lmdb\'s own source with the fix: an mdb.c changed otherwise is refused, and nothing is built', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-build-lmdb-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // A copy of the installed package (its source already fixed), with one more change to mdb.c.
  const pkg = join(dir, 'lmdb');
  for (const part of ['package.json', 'binding.gyp', 'src', 'dependencies']) cpSync(join(lmdbDir, part), join(pkg, part), { recursive: true });
  appendFileSync(join(pkg, MDB_C), '/* a change of its own */\n');
  const out = join(dir, 'out');
  const r = spawnSync(process.execPath, [join(root, 'scripts/build-lmdb.mjs'), '--lmdb', pkg, '--out', out], { encoding: 'utf8' });
  t.equal(r.status, 1, 'exit 1');
  t.match(r.stderr, /is not lmdb 3\.5\.6's own source with the ITS#9496 fix: it carries other changes \(SHA-256 [0-9a-f]{64}\)\. Reinstall lmdb \(`npm ci`\)/);
  t.notOk(existsSync(join(out, 'build/Release/lmdb.node')), 'nothing built');
});

t.test('with the prebuilt binding, the CLI refuses to open the store', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-binding-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const configFile = join(dir, 'tollgate.config.json');
  writeFileSync(configFile, JSON.stringify(defaultConfig('http://127.0.0.1:9')));
  const dataDir = join(dir, 'data');
  const r = await runCli(['keys', 'create', '--mode', 'credit', '--balance', '1', '--config', configFile, '--data', dataDir], { PREBUILDS_ONLY: '1' });
  t.equal(r.code, 1, 'exit 1');
  t.equal(r.stdout, '', 'no key printed');
  t.equal(r.stderr.trim().split('\n').length, 1, 'one line');
  t.match(r.stderr, /^tollgate: PREBUILDS_ONLY is set, so lmdb-js loaded a binding other than the one built with the multi-process fix; unset it$/m);
  t.notOk(existsSync(dataDir), 'nothing written');

  const serve = await runCli(['serve', '--workers', '2', '--port', '0', '--config', configFile, '--data', dataDir], { PREBUILDS_ONLY: '1' }, 30_000);
  t.equal(serve.code, 1, 'serve --workers 2: exit 1, before any worker starts');
  t.equal(serve.stdout, '', 'never listening');
  t.match(serve.stderr, /^tollgate: PREBUILDS_ONLY is set[^\n]*\n$/, 'one line');
  t.notOk(existsSync(dataDir), 'nothing written');

  // A directory without a build of its own: lmdb-js falls back to its prebuilt package.
  const elsewhere = await runCli(['keys', 'create', '--mode', 'credit', '--balance', '1', '--config', configFile, '--data', dataDir], { LMDB_PREBUILD: join(lmdbDir, 'dependencies') });
  t.equal(elsewhere.code, 1, 'LMDB_PREBUILD pointing elsewhere: exit 1');
  t.match(elsewhere.stderr, /LMDB_PREBUILD is set/);
  t.notOk(existsSync(dataDir), 'nothing written');
});

t.test('LMDB_PREBUILD: a directory whose stamp names its binding is used; one whose binding differs is refused', async (t) => {
  // Under the checkout, not /tmp: the binding is loaded from there, and /tmp may be noexec.
  mkdirSync(join(root, '.cache'), { recursive: true });
  const copy = mkdtempSync(join(root, '.cache', 'binding-test-'));
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-binding-'));
  t.teardown(() => {
    rmSync(copy, { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
  });
  mkdirSync(join(copy, 'build', 'Release'), { recursive: true });
  for (const file of ['lmdb.node', 'tollgate-lmdb-fix.json']) copyFileSync(join(bindingDir, 'build', 'Release', file), join(copy, 'build', 'Release', file));
  const configFile = join(dir, 'tollgate.config.json');
  writeFileSync(configFile, JSON.stringify(defaultConfig('http://127.0.0.1:9')));
  const dataDir = join(dir, 'data');
  const common = ['--config', configFile, '--data', dataDir];

  const used = await runCli(['keys', 'create', '--mode', 'credit', '--balance', '1', ...common], { LMDB_PREBUILD: copy });
  t.equal(used.code, 0, `a stamped copy is used: ${used.stderr}`);

  const stampPath = join(copy, 'build', 'Release', 'tollgate-lmdb-fix.json');
  const stamp = JSON.parse(readFileSync(stampPath, 'utf8'));
  writeFileSync(stampPath, JSON.stringify({ ...stamp, bindingSha256: '0'.repeat(64) }));
  const refused = await runCli(['keys', 'list', ...common], { LMDB_PREBUILD: copy });
  t.equal(refused.code, 1, 'a binding its stamp does not name: exit 1');
  t.match(refused.stderr, /^tollgate: \S+lmdb\.node is not the binding its stamp names \(SHA-256 differs\)[^\n]*\n$/, 'one line saying why');
  t.equal(refused.stdout, '');
});
