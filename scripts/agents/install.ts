/**
 * The agents and frameworks the run tries, at pinned versions, installed once into the
 * project's cache (`.cache/agents`, git-ignored) with npm and reused while their versions match.
 * They are not devDependencies: `npm ci` stays lean and `npm test` never downloads them.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Pinned: the newest releases on npm when this run was written (2026-11-25). */
export const PINNED: Readonly<Record<string, string>> = {
  '@anthropic-ai/claude-code': '2.1.331',
  '@openai/codex': '0.169.0',
  ai: '7.0.173',
  '@ai-sdk/openai': '4.0.118',
  '@ai-sdk/anthropic': '4.0.105',
  '@langchain/core': '1.4.0',
  '@langchain/openai': '1.6.0',
  '@langchain/anthropic': '1.5.11',
};

export interface Installed {
  /** The cache directory (holds package.json and node_modules). */
  dir: string;
  claude: string;
  codex: string;
  /** Whether this run installed them (false: reused). */
  installed: boolean;
}

function installedVersion(dir: string, name: string): string | null {
  const manifest = join(dir, 'node_modules', name, 'package.json');
  if (!existsSync(manifest)) return null;
  return (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version;
}

/** Installs what is missing or at another version; returns the agents' executables. */
export function installPinned(dir: string, log: (line: string) => void): Installed {
  mkdirSync(dir, { recursive: true });
  const stale = Object.entries(PINNED).filter(([name, version]) => installedVersion(dir, name) !== version);
  if (stale.length > 0) {
    log(`installing ${stale.map(([n, v]) => `${n}@${v}`).join(', ')} into ${dir}`);
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ private: true, description: 'Agents and frameworks tried by npm run agents', dependencies: PINNED }, null, 2) + '\n');
    // Claude Code's postinstall puts its native binary in place: install scripts must run.
    const npm = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--foreground-scripts'], { cwd: dir, stdio: ['ignore', 'inherit', 'inherit'] });
    if (npm.status !== 0) throw new Error(`npm install in ${dir} failed (exit ${npm.status})`);
    for (const [name, version] of Object.entries(PINNED)) {
      const got = installedVersion(dir, name);
      if (got !== version) throw new Error(`${name}: installed ${got ?? 'nothing'}, pinned ${version}`);
    }
  }
  const claude = join(dir, 'node_modules', '.bin', 'claude');
  const codex = join(dir, 'node_modules', '.bin', 'codex');
  for (const [bin, expect] of [[claude, PINNED['@anthropic-ai/claude-code']!], [codex, PINNED['@openai/codex']!]] as const) {
    const v = spawnSync(bin, ['--version'], { encoding: 'utf8' });
    if (v.status !== 0 || !v.stdout.includes(expect)) throw new Error(`${bin} --version: exit ${v.status}, ${JSON.stringify(v.stdout + v.stderr)} (expected ${expect})`);
  }
  return { dir, claude, codex, installed: stale.length > 0 };
}
