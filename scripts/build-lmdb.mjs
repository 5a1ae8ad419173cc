#!/usr/bin/env node
/**
 * Builds lmdb-js's native binding from the LMDB source it ships, with one upstream LMDB fix that
 * its copy lacks, so that several processes can share the store safely. Runs on `npm ci`
 * (postinstall); run it again by hand with `node scripts/build-lmdb.mjs`.
 *
 * The fix is LMDB's ITS#9496 (LMDB 0.9.29, 2021): "if a process tries to open an env while
 * another process is committing a write txn, it's possible for the committed txn to get
 * lost/overwritten by the new opener." In lmdb-js's copy, mdb_env_open2() stores the meta page's
 * txnid it has just read into the shared lock region (`mti_txnid`) on every open, without the
 * writer lock; when a commit lands between that read and that store, the next write transaction
 * in any process starts from the older snapshot and the commit is lost (later ones can fail with
 * MDB_BAD_TXN). Upstream writes it there only when opening with MDB_PREVSNAPSHOT, which LMDB
 * honours only for the first process to open the environment. `tollgate keys …` commands open the
 * store while `tollgate serve` commits, and a replaced cluster worker does the same, so without
 * this fix they could lose each other's changes (bench/lmdb-multiprocess.ts shows it).
 *
 * The result is node_modules/lmdb/build/Release/lmdb.node, which lmdb-js loads in preference to
 * its prebuilt binaries, and a stamp beside it that the store checks before it opens anything
 * (src/store/binding.ts). Needs what node-gyp needs: python3, make, a C++ compiler and Node's
 * headers (the local ones when `npm_config_nodedir` is unset and they are installed).
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const LMDB_VERSION = '3.5.6';
const SOURCE = 'dependencies/lmdb/libraries/liblmdb/mdb.c';
// The end of mdb_env_open2(), before and after the fix.
const UNFIXED = '\tenv->me_maxpg = env->me_mapsize / env->me_psize;\n\n\tif (env->me_txns)\n\t\tenv->me_txns->mti_txnid = meta.mm_txnid;\n';
const FIXED = '\tenv->me_maxpg = env->me_mapsize / env->me_psize;\n\n\tif (prev && env->me_txns)\n\t\tenv->me_txns->mti_txnid = meta.mm_txnid;\n';
const STAMP = 'build/Release/tollgate-lmdb-fix.json';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const lmdbDir = lmdbPackageDir();

function fail(message) {
  console.error(`build-lmdb: ${message}`);
  process.exit(1);
}

const pkg = JSON.parse(readFileSync(join(lmdbDir, 'package.json'), 'utf8'));
if (pkg.version !== LMDB_VERSION) {
  fail(`lmdb ${pkg.version} is installed; this fix is written against lmdb ${LMDB_VERSION}'s source. Install lmdb ${LMDB_VERSION} (package.json pins it) or port the fix.`);
}

const sourcePath = join(lmdbDir, SOURCE);
const source = readFileSync(sourcePath, 'utf8');
const occurrences = (text) => source.split(text).length - 1;
if (occurrences(FIXED) === 1 && occurrences(UNFIXED) === 0) {
  // Already fixed: an earlier run, or `npm rebuild`.
} else if (occurrences(UNFIXED) === 1) {
  writeFileSync(sourcePath, source.replace(UNFIXED, FIXED));
} else {
  fail(`${SOURCE} does not contain the expected end of mdb_env_open2(); not building.`);
}
const sourceHash = createHash('sha256').update(readFileSync(sourcePath)).digest('hex');

const nodeGyp = process.env.npm_config_node_gyp || resolveNodeGyp();
const args = [nodeGyp, 'rebuild', '--jobs', 'max'];
if (!process.env.npm_config_nodedir) {
  // Offline machines have no header download; use the headers installed beside this node.
  const prefix = dirname(dirname(process.execPath));
  if (existsSync(join(prefix, 'include', 'node', 'common.gypi'))) args.push(`--nodedir=${prefix}`);
}
const started = Date.now();
rmSync(join(lmdbDir, STAMP), { force: true });
const build = spawnSync(process.execPath, args, { cwd: lmdbDir, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
if (build.status !== 0) {
  const output = `${build.stdout ?? ''}${build.stderr ?? ''}`.trim().split('\n');
  console.error(output.slice(-40).join('\n'));
  fail(`node-gyp rebuild failed in ${lmdbDir} (exit ${build.status ?? build.signal}); it needs python3, make, g++ and Node's headers.`);
}

// The binding lmdb-js actually loads must be the one just built, not a prebuilt one.
const check = spawnSync(process.execPath, ['--input-type=module', '-e', `
  await import('lmdb');
  const maps = (await import('node:fs')).readFileSync('/proc/self/maps', 'utf8');
  process.stdout.write(maps.includes(${JSON.stringify(join(realpathSync(lmdbDir), 'build', 'Release', 'lmdb.node'))}) ? 'built' : 'other');
`], { cwd: root, encoding: 'utf8' });
if (process.platform === 'linux' && check.stdout !== 'built') {
  fail(`lmdb-js did not load the binding just built (${check.stdout || check.stderr.trim()})`);
}

writeFileSync(join(lmdbDir, STAMP), `${JSON.stringify({ lmdb: LMDB_VERSION, fix: 'ITS#9496', sourceSha256: sourceHash, nodeModules: process.versions.modules }, null, 2)}\n`);
console.log(`build-lmdb: built lmdb ${LMDB_VERSION}'s binding with the ITS#9496 fix in ${((Date.now() - started) / 1000).toFixed(1)} s`);

/** lmdb's package directory, wherever module resolution finds it (nested or hoisted). */
function lmdbPackageDir() {
  let dir = dirname(createRequire(import.meta.url).resolve('lmdb'));
  while (!existsSync(join(dir, 'binding.gyp'))) {
    if (dirname(dir) === dir) fail('lmdb is not installed');
    dir = dirname(dir);
  }
  return dir;
}

function resolveNodeGyp() {
  try {
    return createRequire(import.meta.url).resolve('node-gyp/bin/node-gyp.js');
  } catch {
    fail('node-gyp not found: run this through npm (`npm ci`, or `npm run build:lmdb`), which brings its own.');
  }
}
