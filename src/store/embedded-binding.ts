import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { getAsset } from 'node:sea';

/**
 * How the single binary (scripts/build-binary.mjs) loads lmdb-js's native binding: the bundler
 * puts this module in place of the `node-gyp-build-optional-packages` that lmdb-js (and only
 * lmdb-js) calls to find its binding. The binding built with the multi-process fix for the
 * embedded Node.js is a SEA asset; a shared object can only be loaded from a file, so it is
 * written once to a cache directory, named by its SHA-256, and loaded with `process.dlopen`.
 * A file already there is used only when its bytes hash to that name.
 *
 * Never /tmp: it is often mounted `noexec`, where dlopen fails. The directories tried, in
 * order: $XDG_CACHE_HOME/tollgate, ~/.cache/tollgate (the home directory from the user database
 * when HOME is unset, as under `env -i`), then .tollgate-cache beside the executable.
 */
export const BINDING_ASSET = 'lmdb.node';
export const STAMP_ASSET = 'tollgate-lmdb-fix.json';

export interface LoadedBinding {
  /** The file that was loaded. */
  path: string;
  /** SHA-256 of that file's bytes, checked before it was loaded. */
  sha256: string;
}

let loaded: LoadedBinding | undefined;

/** The embedded binding this process loaded, if it did (only in the single binary). */
export function loadedEmbeddedBinding(): LoadedBinding | undefined {
  return loaded;
}

const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** node-gyp-build's signature: lmdb-js passes its package directory, which the binary has not. */
export default function loadEmbeddedLmdbBinding(_packageDir?: string): unknown {
  const bytes = new Uint8Array(getAsset(BINDING_ASSET));
  const hash = sha256(bytes);
  const failures: string[] = [];
  for (const dir of cacheDirectories()) {
    const path = join(dir, `lmdb-${hash}.node`);
    try {
      if (!existsSync(path) || sha256(readFileSync(path)) !== hash) writeOnce(path, bytes);
      const module = { exports: {} };
      process.dlopen(module, path);
      loaded = { path, sha256: hash };
      return module.exports;
    } catch (err) {
      failures.push(`${dir}: ${(err as Error).message.split('\n')[0]}`);
    }
  }
  throw new Error(`the LMDB binding could not be written and loaded in any cache directory (${failures.join('; ')}); set XDG_CACHE_HOME to a writable directory that allows executables`);
}

function cacheDirectories(): string[] {
  const dirs: string[] = [];
  const xdg = process.env.XDG_CACHE_HOME;
  if (xdg && isAbsolute(xdg)) dirs.push(join(xdg, 'tollgate'));
  try {
    dirs.push(join(homedir(), '.cache', 'tollgate'));
  } catch {
    // No home directory for this user.
  }
  dirs.push(join(dirname(process.execPath), '.tollgate-cache'));
  return [...new Set(dirs)];
}

/** Written under a name of its own, then renamed: processes starting together never load half a file. */
function writeOnce(path: string, bytes: Uint8Array): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const partial = `${path}.${process.pid}.partial`;
  try {
    writeFileSync(partial, bytes, { mode: 0o755 });
    renameSync(partial, path);
  } finally {
    rmSync(partial, { force: true });
  }
}
