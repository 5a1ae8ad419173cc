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
 * its prebuilt binaries, and a stamp beside it (with the binding's SHA-256) that the store checks
 * before it opens anything (src/store/binding.ts). Needs what node-gyp needs: python3, make, a
 * C++ compiler and Node's headers (the local ones when `npm_config_nodedir` is unset and they are
 * installed).
 *
 * For another Node.js (the LTS one of scripts/lts-node.mjs, whose ABI differs):
 *   node scripts/build-lmdb.mjs --node PATH --nodedir DIR --out OUT
 * builds from a copy of the fixed source into OUT/build/Release/lmdb.node, leaving the machine's
 * binding alone. That Node.js loads it with LMDB_PREBUILD=OUT (node-gyp-build's own switch,
 * which the store accepts only for a directory whose stamp matches its binding); the single
 * binary embeds it (scripts/build-binary.mjs). A build whose stamp still matches the source,
 * the Node.js and the binding is kept, not redone.
 *
 * Only lmdb 3.5.6's own mdb.c with the fix and nothing else is built (its SHA-256 is pinned): a
 * copy changed by hand or by an earlier build of other changes is refused, with how to get the
 * package's own back. `--lmdb DIR` builds from that copy of lmdb's package instead of the
 * installed one.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const LMDB_VERSION = '3.5.6';
const SOURCE = 'dependencies/lmdb/libraries/liblmdb/mdb.c';
/** The fix, as the stamp names it (src/store/binding.ts checks the name). */
const FIX = 'ITS#9496';
// The end of mdb_env_open2(), before and after the fix.
const UNFIXED = '\tenv->me_maxpg = env->me_mapsize / env->me_psize;\n\n\tif (env->me_txns)\n\t\tenv->me_txns->mti_txnid = meta.mm_txnid;\n';
const FIXED = '\tenv->me_maxpg = env->me_mapsize / env->me_psize;\n\n\tif (prev && env->me_txns)\n\t\tenv->me_txns->mti_txnid = meta.mm_txnid;\n';
/** SHA-256 of lmdb 3.5.6's mdb.c with FIXED in place of UNFIXED, and no other change. */
const FIXED_SOURCE_SHA256 = '0cd3b523172ec1e4974b1e81d5dbeb5156c8b528ad2e3bed4f34e05713103967';
const BINDING = 'build/Release/lmdb.node';
const STAMP = 'build/Release/tollgate-lmdb-fix.json';
// What node-gyp needs from lmdb's package to build the binding.
const BUILD_INPUTS = ['binding.gyp', 'src', 'dependencies'];

const { values: options } = parseArgs({ options: { node: { type: 'string' }, nodedir: { type: 'string' }, out: { type: 'string' }, lmdb: { type: 'string' } } });
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const lmdbDir = options.lmdb ? resolve(options.lmdb) : lmdbPackageDir();
const targetNode = options.node ? resolve(options.node) : process.execPath;
const outDir = options.out ? resolve(options.out) : lmdbDir;
const inPlace = outDir === lmdbDir;

function fail(message) {
  console.error(`build-lmdb: ${message}`);
  process.exit(1);
}

const sha256 = (path) => createHash('sha256').update(readFileSync(path)).digest('hex');

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
const sourceHash = sha256(sourcePath);
if (sourceHash !== FIXED_SOURCE_SHA256) {
  fail(`${sourcePath} is not lmdb ${LMDB_VERSION}'s own source with the ${FIX} fix: it carries other changes (SHA-256 ${sourceHash}). Reinstall lmdb (\`npm ci\`) and run this again.`);
}
const target = spawnSync(targetNode, ['-p', 'JSON.stringify({ node: process.version, modules: process.versions.modules })'], { encoding: 'utf8' });
if (target.status !== 0) fail(`cannot run ${targetNode}`);
const { node: targetVersion, modules: targetModules } = JSON.parse(target.stdout);

if (!inPlace && upToDate()) {
  console.log(`build-lmdb: ${join(outDir, BINDING)} is up to date (lmdb ${LMDB_VERSION} with the ${FIX} fix, Node.js ${targetVersion})`);
  process.exit(0);
}

// Headers: --nodedir, else npm's (for the Node.js running npm), else the ones installed beside
// the target Node.js. Offline machines have no header download.
let nodedir = options.nodedir ? resolve(options.nodedir) : targetNode === process.execPath ? process.env.npm_config_nodedir : undefined;
if (!nodedir) {
  const prefix = dirname(dirname(targetNode));
  if (existsSync(join(prefix, 'include', 'node', 'common.gypi'))) nodedir = prefix;
  else if (targetNode !== process.execPath) fail(`no headers beside ${targetNode}; give --nodedir`);
}
const env = { ...process.env };
delete env.npm_config_nodedir; // --nodedir below says which headers, for this Node.js
if (!inPlace) {
  // binding.gyp asks `node -p "require('node-addon-api').include_dir"` from the build directory.
  env.NODE_PATH = nodeAddonApiParent();
  mkdirSync(outDir, { recursive: true });
  for (const input of [...BUILD_INPUTS, 'build']) rmSync(join(outDir, input), { recursive: true, force: true });
  for (const input of BUILD_INPUTS) cpSync(join(lmdbDir, input), join(outDir, input), { recursive: true });
}

const nodeGyp = process.env.npm_config_node_gyp || resolveNodeGyp();
const args = [nodeGyp, 'rebuild', '--jobs', 'max'];
if (nodedir) args.push(`--nodedir=${nodedir}`);
const started = Date.now();
rmSync(join(outDir, STAMP), { force: true });
const build = spawnSync(targetNode, args, { cwd: outDir, env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
if (build.status !== 0) {
  const output = `${build.stdout ?? ''}${build.stderr ?? ''}`.trim().split('\n');
  console.error(output.slice(-40).join('\n'));
  fail(`node-gyp rebuild failed in ${outDir} (exit ${build.status ?? build.signal}); it needs python3, make, g++ and Node's headers.`);
}

// The binding lmdb-js actually loads (for the target Node.js, with LMDB_PREBUILD for a build
// elsewhere) must be the one just built, not a prebuilt one.
const checkEnv = { ...process.env };
delete checkEnv.PREBUILDS_ONLY;
if (inPlace) delete checkEnv.LMDB_PREBUILD;
else checkEnv.LMDB_PREBUILD = outDir;
const check = spawnSync(targetNode, ['--input-type=module', '-e', `
  await import('lmdb');
  const maps = (await import('node:fs')).readFileSync('/proc/self/maps', 'utf8');
  process.stdout.write(maps.includes(${JSON.stringify(join(realpathSync(outDir), BINDING))}) ? 'built' : 'other');
`], { cwd: root, env: checkEnv, encoding: 'utf8' });
if (process.platform === 'linux' && check.stdout !== 'built') {
  fail(`lmdb-js did not load the binding just built (${check.stdout || check.stderr.trim()})`);
}

const stamp = { lmdb: LMDB_VERSION, fix: FIX, sourceSha256: sourceHash, node: targetVersion, nodeModules: targetModules, bindingSha256: sha256(join(outDir, BINDING)) };
writeFileSync(join(outDir, STAMP), `${JSON.stringify(stamp, null, 2)}\n`);
console.log(`build-lmdb: built lmdb ${LMDB_VERSION}'s binding with the ${FIX} fix for Node.js ${targetVersion} in ${((Date.now() - started) / 1000).toFixed(1)} s${inPlace ? '' : ` (${join(outDir, BINDING)})`}`);

/** The build in outDir is of this source, for this Node.js, and its binding is the one stamped. */
function upToDate() {
  try {
    const stamp = JSON.parse(readFileSync(join(outDir, STAMP), 'utf8'));
    return stamp.sourceSha256 === sourceHash && stamp.node === targetVersion && stamp.bindingSha256 === sha256(join(outDir, BINDING));
  } catch {
    return false;
  }
}

/** lmdb's package directory, wherever module resolution finds it (nested or hoisted). */
function lmdbPackageDir() {
  let dir = dirname(createRequire(import.meta.url).resolve('lmdb'));
  while (!existsSync(join(dir, 'binding.gyp'))) {
    if (dirname(dir) === dir) fail('lmdb is not installed');
    dir = dirname(dir);
  }
  return dir;
}

/** The directory holding node-addon-api: lmdb's own dependency, else this project's (for a copy of lmdb given by --lmdb). */
function nodeAddonApiParent() {
  for (const from of [join(lmdbDir, 'package.json'), fileURLToPath(import.meta.url)]) {
    try {
      return dirname(dirname(createRequire(from).resolve('node-addon-api/package.json')));
    } catch {
      // not found from there
    }
  }
  fail('node-addon-api not found: run this through npm (`npm ci`), which installs it with lmdb.');
}

function resolveNodeGyp() {
  try {
    return createRequire(import.meta.url).resolve('node-gyp/bin/node-gyp.js');
  } catch {
    fail('node-gyp not found: run this through npm (`npm ci`, or `npm run build:lmdb`), which brings its own.');
  }
}
