import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { getAsset, isSea } from 'node:sea';
import { loadedEmbeddedBinding, STAMP_ASSET } from './embedded-binding.js';

/**
 * The store runs only on lmdb-js's binding as scripts/build-lmdb.mjs builds it, with LMDB's fix
 * ITS#9496: with lmdb-js's prebuilt binaries, a process that opens the environment while another
 * commits can make that commit be lost (a `tollgate keys …` command next to `tollgate serve`,
 * a replaced cluster worker). The build leaves a stamp beside the binding (the fix, the Node.js
 * ABI, the binding's SHA-256); this checks it before anything is opened, so a store that could
 * lose writes is never used silently.
 *
 * Where the binding is:
 * - from a checkout, node_modules/lmdb/build/Release, for the Node.js that ran `npm ci`;
 * - with LMDB_PREBUILD=DIR (node-gyp-build's switch), DIR/build/Release: how another Node.js
 *   runs from the same checkout (`npm run test:lts`); accepted only with a matching stamp there;
 * - in the single binary, an embedded asset (./embedded-binding.ts), checked against the stamp
 *   embedded beside it.
 */
export class LmdbBindingError extends Error {}

const BUILD = join('build', 'Release');
const STAMP = 'tollgate-lmdb-fix.json';
const REBUILD = 'run `npm run build:lmdb` (or `npm ci`)';

interface Stamp { fix?: string; nodeModules?: string; bindingSha256?: string }

let checked = false;

export function assertFixedLmdbBinding(): void {
  if (checked) return;
  if (isSea()) assertEmbeddedBinding();
  else assertInstalledBinding();
  checked = true;
}

function assertInstalledBinding(): void {
  const packageDir = lmdbPackageDir();
  // node-gyp-build's two switches, either of which makes lmdb-js load another binding.
  const { PREBUILDS_ONLY, LMDB_PREBUILD } = process.env;
  if (PREBUILDS_ONLY) throw new LmdbBindingError('PREBUILDS_ONLY is set, so lmdb-js loaded a binding other than the one built with the multi-process fix; unset it');
  const dir = LMDB_PREBUILD ? resolve(LMDB_PREBUILD) : packageDir;
  const stampPath = join(dir, BUILD, STAMP);
  const bindingPath = join(dir, BUILD, 'lmdb.node');
  if (!existsSync(stampPath) || !existsSync(bindingPath)) {
    if (dir !== packageDir) throw new LmdbBindingError(`LMDB_PREBUILD is set to ${dir}, which holds no binding built with the multi-process fix, so lmdb-js loaded another one; unset it, or build one there with scripts/build-lmdb.mjs --out`);
    throw new LmdbBindingError(`the LMDB binding was not built with the multi-process fix (no ${stampPath}); ${REBUILD}`);
  }
  const stamp = JSON.parse(readFileSync(stampPath, 'utf8')) as Stamp;
  assertStampFits(stamp, dir === packageDir ? REBUILD : `rebuild it with scripts/build-lmdb.mjs --out ${dir}`);
  if (sha256(readFileSync(bindingPath)) !== stamp.bindingSha256) {
    throw new LmdbBindingError(`${bindingPath} is not the binding its stamp names (SHA-256 differs); ${REBUILD}`);
  }
}

/** In the single binary: the binding loaded must be the embedded one, and the stamp built with it must name it. */
function assertEmbeddedBinding(): void {
  const loaded = loadedEmbeddedBinding();
  if (!loaded) throw new LmdbBindingError('this executable did not load its embedded LMDB binding; rebuild it with `npm run build:binary`');
  const stamp = JSON.parse(getAsset(STAMP_ASSET, 'utf8')) as Stamp;
  assertStampFits(stamp, 'rebuild it with `npm run build:binary`');
  if (loaded.sha256 !== stamp.bindingSha256) {
    throw new LmdbBindingError(`the LMDB binding loaded (${loaded.path}) is not the one built with the multi-process fix (SHA-256 differs); rebuild it with \`npm run build:binary\``);
  }
}

function assertStampFits(stamp: Stamp, remedy: string): void {
  if (stamp.fix !== 'ITS#9496' || !stamp.bindingSha256) {
    throw new LmdbBindingError(`the LMDB binding's stamp does not name the multi-process fix and the binding's SHA-256; ${remedy}`);
  }
  if (stamp.nodeModules !== process.versions.modules) {
    throw new LmdbBindingError(`the LMDB binding was built for another Node.js (module version ${stamp.nodeModules}, this is ${process.versions.modules}); ${remedy}`);
  }
}

const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** node_modules/lmdb, wherever module resolution finds it. */
function lmdbPackageDir(): string {
  let dir = dirname(createRequire(import.meta.url).resolve('lmdb'));
  while (!existsSync(join(dir, 'package.json')) || !existsSync(join(dir, 'binding.gyp'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new LmdbBindingError(`lmdb's package directory was not found; ${REBUILD}`);
    dir = parent;
  }
  return dir;
}
