import { readFileSync } from 'node:fs';

/**
 * Set by the single binary's bundler (scripts/build-binary.mjs), which has no package.json
 * beside it at run time; undefined (never declared at run time) when run from dist/.
 */
declare const TOLLGATE_BUNDLED_VERSION: string | undefined;

/** `tollgate --version`: one line, tollgate's version and the Node.js it runs on. */
export function versionLine(): string {
  const version = typeof TOLLGATE_BUNDLED_VERSION === 'string'
    ? TOLLGATE_BUNDLED_VERSION
    : (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
  return `tollgate ${version} (node ${process.version})`;
}
