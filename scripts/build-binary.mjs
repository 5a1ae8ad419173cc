#!/usr/bin/env node
/**
 * `npm run build:binary` → dist/tollgate: tollgate as one executable file for Linux x64, a
 * Node.js single executable application (SEA) that needs nothing installed on the host.
 *
 * 1. The LTS Node.js from the npm registry's `node` package (scripts/lts-node.mjs): the runtime
 *    inside the binary, and the headers to build for it.
 * 2. lmdb-js's binding with the multi-process fix, built for that Node.js (scripts/build-lmdb.mjs
 *    --out .cache/lmdb-abiNNN, offline, from the headers of step 1), and its stamp.
 * 3. esbuild bundles src/cli/main.ts into one CommonJS script (Node 24's SEA runs CommonJS only).
 *    lmdb-js's own call to node-gyp-build is redirected to src/store/embedded-binding.ts, which
 *    loads the binding from the SEA asset; ordered-binary is taken in its CommonJS build (below);
 *    msgpackr-extract (msgpackr's optional addon) is left
 *    out, so msgpackr decodes in JavaScript. Pointing msgpackr-extract's loader at lmdb.node
 *    instead made every `get` return 0 without an error; the build fails if any other native
 *    loader is bundled, rather than shipping one that finds nothing.
 * 4. `node --experimental-sea-config` makes the blob (script, V8 code cache, the binding and its
 *    stamp as assets); postject injects it into a copy of that Node.js, stripped of its symbol
 *    tables when `strip` is there (≈ 18 MB less).
 * 5. The result must answer `--version` in an empty environment before it replaces dist/tollgate.
 *
 * Needs what build-lmdb needs (python3, make, g++; run through npm, which brings node-gyp) and
 * the npm registry for step 1 the first time; everything else is in node_modules.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, chmodSync, existsSync, mkdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import postject from 'postject';
import { ltsNode } from './lts-node.mjs';

const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const work = join(root, '.cache', 'binary');
const output = join(root, 'dist', 'tollgate');
const started = Date.now();

function fail(message) {
  console.error(`build-binary: ${message}`);
  process.exit(1);
}

function step(message) {
  console.log(`build-binary: ${message} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
}

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { stdio: 'inherit', ...options });
  if (result.status !== 0) fail(`${command} ${args.join(' ')} failed (exit ${result.status ?? result.signal})`);
  return result;
}

// 1. The runtime.
const node = ltsNode();
step(`Node.js ${node.version} (ABI ${node.modules}) from the npm package node@${node.version.slice(1)}`);

// 2. The binding, for that runtime.
const bindingDir = join(root, '.cache', `lmdb-abi${node.modules}`);
run(process.execPath, [join(root, 'scripts', 'build-lmdb.mjs'), '--node', node.execPath, '--nodedir', node.nodedir, '--out', bindingDir]);
const binding = join(bindingDir, 'build', 'Release', 'lmdb.node');
const stamp = join(bindingDir, 'build', 'Release', 'tollgate-lmdb-fix.json');
step(`LMDB binding ${relative(root, binding)}`);

// 3. The bundle.
rmSync(work, { recursive: true, force: true });
mkdirSync(work, { recursive: true });
const lmdbDir = realpathSync(join(root, 'node_modules', 'lmdb'));
const inside = (file, dir) => file === dir || file.startsWith(dir + sep);
const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const nativeLoaders = {
  name: 'native-loaders',
  setup(b) {
    b.onResolve({ filter: /^node-gyp-build-optional-packages$/ }, (args) => {
      if (inside(realpathSync(args.importer), lmdbDir)) return { path: join(root, 'src', 'store', 'embedded-binding.ts') };
      return undefined;
    });
    // ordered-binary (lmdb-js's key encoding) builds its string reader with a direct eval that
    // names the module's `position`; bundled as ESM, that variable is renamed and every key read
    // loops ("Invalid array length"). Its CommonJS build keeps its own scope, and the names in it.
    b.onResolve({ filter: /^ordered-binary$/ }, (args) => ({ path: createRequire(args.importer).resolve('ordered-binary') }));
    b.onResolve({ filter: /^msgpackr-extract$/ }, () => ({ path: 'msgpackr-extract', namespace: 'left-out' }));
    b.onLoad({ filter: /.*/, namespace: 'left-out' }, () => ({
      contents: 'throw new Error("msgpackr-extract is not in the single binary: msgpackr decodes in JavaScript");',
      loader: 'js',
    }));
  },
};
const bundle = join(work, 'tollgate.cjs');
const result = await build({
  entryPoints: [join(root, 'src', 'cli', 'main.ts')],
  outfile: bundle,
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node24',
  // One file: every module shares the bundle's URL, which in a SEA is the executable's.
  banner: { js: 'var __tollgate_bundle_url = require("node:url").pathToFileURL(__filename).href;' },
  define: { 'import.meta.url': '__tollgate_bundle_url', TOLLGATE_BUNDLED_VERSION: JSON.stringify(version) },
  plugins: [nativeLoaders],
  metafile: true,
  logLevel: 'warning',
});
const loaders = Object.keys(result.metafile.inputs).filter((input) => /node-gyp-build|\.node$/.test(input));
if (loaders.length > 0) fail(`a native loader other than lmdb-js's would be bundled: ${loaders.join(', ')}`);
if (!Object.keys(result.metafile.inputs).some((input) => input.endsWith(join('src', 'store', 'embedded-binding.ts')))) {
  fail("lmdb-js's call to node-gyp-build was not redirected to src/store/embedded-binding.ts");
}
step(`bundle ${relative(root, bundle)}, ${(statSync(bundle).size / 1024 / 1024).toFixed(1)} MB`);

// 4. The blob, injected into a copy of the runtime.
const blob = join(work, 'tollgate.blob');
const seaConfig = join(work, 'sea-config.json');
writeFileSync(seaConfig, `${JSON.stringify({
  main: bundle,
  output: blob,
  disableExperimentalSEAWarning: true,
  useCodeCache: true,
  assets: { 'lmdb.node': binding, 'tollgate-lmdb-fix.json': stamp },
}, null, 2)}\n`);
run(node.execPath, ['--experimental-sea-config', seaConfig], { cwd: work, stdio: ['ignore', 'ignore', 'inherit'] });
const executable = join(work, 'tollgate');
copyFileSync(node.execPath, executable);
chmodSync(executable, 0o755);
if (spawnSync('strip', ['--version'], { stdio: 'ignore' }).status === 0) {
  // Only the symbol tables go: addons link against the dynamic symbols, which stay.
  const stripped = spawnSync('strip', ['--strip-all', executable], { encoding: 'utf8' });
  if (stripped.status !== 0) fail(`strip failed: ${stripped.stderr}`);
} else {
  console.log('build-binary: no `strip` here; the executable keeps its symbol tables');
}
// postject (LIEF) warns "Can't find string offset for section name '.note…'" about the Node.js
// binary's many ELF notes, stripped or not; the notes stay as they are and the result runs.
await postject.inject(executable, 'NODE_SEA_BLOB', readFileSync(blob), { sentinelFuse: SEA_FUSE });
step('blob injected');

// 5. It runs with nothing around it, or it does not replace dist/tollgate.
const check = spawnSync(executable, ['--version'], { cwd: work, env: {}, encoding: 'utf8' });
const expected = `tollgate ${version} (node ${node.version})`;
if (check.status !== 0 || check.stdout.trim() !== expected) {
  fail(`${executable} --version answered ${JSON.stringify(check.stdout.trim() || check.stderr.trim())} (exit ${check.status}), not "${expected}"`);
}
mkdirSync(dirname(output), { recursive: true });
renameSync(executable, output);
if (!existsSync(output)) fail(`${output} was not written`);
step(`${relative(root, output)}: ${expected}, ${(statSync(output).size / 1024 / 1024).toFixed(1)} MB`);
