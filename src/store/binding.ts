import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';

/**
 * The store runs only on lmdb-js's binding as scripts/build-lmdb.mjs builds it, with LMDB's fix
 * ITS#9496: with lmdb-js's prebuilt binaries, a process that opens the environment while another
 * commits can make that commit be lost (a `tollgate keys …` command next to `tollgate serve`,
 * a replaced cluster worker). The build leaves a stamp beside the binding; this checks it before
 * anything is opened, so a store that could lose writes is never used silently.
 */
export class LmdbBindingError extends Error {}

const STAMP = join('build', 'Release', 'tollgate-lmdb-fix.json');
const REBUILD = 'run `npm run build:lmdb` (or `npm ci`)';

let checked = false;

export function assertFixedLmdbBinding(): void {
  if (checked) return;
  const dir = lmdbPackageDir();
  // node-gyp-build's two switches, either of which makes lmdb-js load another binding.
  const { PREBUILDS_ONLY, LMDB_PREBUILD } = process.env;
  const switched = PREBUILDS_ONLY ? 'PREBUILDS_ONLY' : LMDB_PREBUILD && resolve(LMDB_PREBUILD) !== dir ? 'LMDB_PREBUILD' : null;
  if (switched) throw new LmdbBindingError(`${switched} is set, so lmdb-js loaded a binding other than the one built with the multi-process fix; unset it`);
  const stampPath = join(dir, STAMP);
  if (!existsSync(stampPath) || !existsSync(join(dir, 'build', 'Release', 'lmdb.node'))) {
    throw new LmdbBindingError(`the LMDB binding was not built with the multi-process fix (no ${stampPath}); ${REBUILD}`);
  }
  const stamp = JSON.parse(readFileSync(stampPath, 'utf8')) as { nodeModules?: string };
  if (stamp.nodeModules !== process.versions.modules) {
    throw new LmdbBindingError(`the LMDB binding was built for another Node.js (module version ${stamp.nodeModules}, this is ${process.versions.modules}); ${REBUILD}`);
  }
  checked = true;
}

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
