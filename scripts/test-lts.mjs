#!/usr/bin/env node
/**
 * `npm run test:lts [-- tap arguments]`: the test suite once more, on the LTS Node.js that the
 * single binary embeds (scripts/lts-node.mjs), so the code the binary carries is the code that
 * was tested on its runtime. tap runs under that Node.js, and so does everything the tests start
 * (they spawn `process.execPath`).
 *
 * The LMDB binding in node_modules is built for the machine's Node.js, whose ABI differs; this
 * builds the fixed binding for the LTS one beside it (.cache/lmdb-abiNNN, kept while it matches)
 * and points lmdb-js at it with LMDB_PREBUILD, which the store accepts because the stamp there
 * names that binding (src/store/binding.ts).
 */
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ltsNode } from './lts-node.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const node = ltsNode();
const bindingDir = join(root, '.cache', `lmdb-abi${node.modules}`);

const build = spawnSync(process.execPath, [join(root, 'scripts', 'build-lmdb.mjs'), '--node', node.execPath, '--nodedir', node.nodedir, '--out', bindingDir], { stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);

console.log(`test-lts: tap on Node.js ${node.version} (${node.execPath}), LMDB_PREBUILD=${bindingDir}`);
// The single binary's smoke test runs once, in `npm test`: it runs the binary's own Node.js
// whichever runs tap.
const exclude = '--exclude=test/binary-smoke.test.ts';
const tap = spawnSync(node.execPath, [join(root, 'node_modules', 'tap', 'dist', 'esm', 'run.mjs'), exclude, ...process.argv.slice(2)], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, LMDB_PREBUILD: bindingDir },
});
process.exit(tap.status ?? 1);
