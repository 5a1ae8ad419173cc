/**
 * Claude Code and Codex CLI run headless, with no model flag, pointed at a gateway exactly as
 * their docs say: Claude Code through `ANTHROPIC_BASE_URL` (no /v1) and `ANTHROPIC_API_KEY`;
 * Codex through a `model_providers` entry of its config.toml (`base_url`, `env_key`,
 * `wire_api = "responses"`). Each gets a home of its own and an environment holding nothing
 * else, so no setting of the machine's user leaks in.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface AgentRun {
  agent: 'Claude Code' | 'Codex CLI';
  /** The command line, as a user would type it. */
  command: string;
  /** The environment given (the key shown by its prefix only). */
  env: Record<string, string>;
  /** Files written for the agent (Codex's config.toml), by path. */
  files: Record<string, string>;
  exitCode: number | null;
  timedOut: boolean;
  stdout: string;
  stderr: string;
  durationMs: number;
  /** The proof file's content, or null when the agent left none. */
  proof: string | null;
  /** The agent's last message to the user. */
  finalText: string | null;
  /** What the agent itself reports (Claude Code's cost and usage; Codex's commands and tokens). */
  notes: string[];
  /** The cost the agent worked out itself from its own price table (Claude Code), else null. */
  ownCostUsd: number | null;
}

const TIMEOUT_MS = 240_000;

export interface AgentTarget {
  /** The executable. */
  bin: string;
  /** A directory of the run's own: the agent's home and working directory go under it. */
  dir: string;
  /** The gateway's base for this agent's format and surface (see each runner). */
  base: string;
  key: string;
  prompt: string;
  proofFile: string;
}

/** Claude Code's permission rule for this run (default: Bash alone). */
export interface ClaudeCodeTarget extends AgentTarget { allowedTools?: string }

function shellQuote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** The key as logs may show it: its 12-character prefix. */
export function redact(key: string): string {
  return `${key.slice(0, 12)}…`;
}

function run(bin: string, args: string[], cwd: string, env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string; timedOut: boolean; durationMs: number }> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    // Its own process group, so a run that hangs is stopped with everything it started.
    const child = spawn(bin, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch { /* already gone */ }
    }, TIMEOUT_MS);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, timedOut, durationMs: Date.now() - started });
    });
  });
}

function workspace(dir: string): { home: string; work: string } {
  const home = join(dir, 'home');
  const work = join(dir, 'work');
  mkdirSync(home, { recursive: true });
  mkdirSync(work, { recursive: true });
  return { home, work };
}

function proofOf(work: string, file: string): string | null {
  const path = join(work, file);
  return existsSync(path) ? readFileSync(path, 'utf8') : null;
}

/**
 * `claude -p` with Bash allowed (`--allowedTools Bash`: the narrow permission rule; the broad
 * `--dangerously-skip-permissions` refuses to run as root). `base` is the gateway's root for
 * Messages clients: `{base}` (credit) or `{base}/token` (token); Claude Code appends /v1/messages.
 */
export async function runClaudeCode(t: ClaudeCodeTarget): Promise<AgentRun> {
  const { home, work } = workspace(t.dir);
  const args = ['-p', t.prompt, '--allowedTools', t.allowedTools ?? 'Bash', '--output-format', 'json'];
  // DISABLE_AUTOUPDATER keeps the pinned version: it changes nothing the agent sends.
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, ANTHROPIC_BASE_URL: t.base, ANTHROPIC_API_KEY: t.key, DISABLE_AUTOUPDATER: '1' };
  const r = await run(t.bin, args, work, env);
  const notes: string[] = [];
  let finalText: string | null = null;
  let ownCostUsd: number | null = null;
  try {
    const result = JSON.parse(r.stdout.trim().split('\n').at(-1) ?? '');
    finalText = typeof result.result === 'string' ? result.result : null;
    ownCostUsd = typeof result.total_cost_usd === 'number' ? result.total_cost_usd : null;
    notes.push(`its own result: is_error=${result.is_error}, num_turns=${result.num_turns}, total_cost_usd=${result.total_cost_usd} (its built-in prices)`);
    for (const [model, u] of Object.entries<any>(result.modelUsage ?? {})) {
      notes.push(`its own usage for ${model}: input ${u.inputTokens}, output ${u.outputTokens}, cache read ${u.cacheReadInputTokens}, cache write ${u.cacheCreationInputTokens}, costUSD ${u.costUSD}`);
    }
  } catch {
    notes.push('its output was not the JSON result it prints with --output-format json');
  }
  return {
    agent: 'Claude Code', command: `claude ${args.map(shellQuote).join(' ')}`,
    env: { ...env, ANTHROPIC_API_KEY: redact(t.key) }, files: {},
    exitCode: r.code, timedOut: r.timedOut, stdout: r.stdout, stderr: r.stderr, durationMs: r.durationMs,
    proof: proofOf(work, t.proofFile), finalText, notes, ownCostUsd,
  };
}

/** The config.toml that points Codex at the gateway (`base`: `{base}/v1` or `{base}/token/v1`). */
export function codexConfig(base: string): string {
  return [
    'model_provider = "tollgate"',
    '',
    '[model_providers.tollgate]',
    'name = "tollgate"',
    `base_url = "${base}"`,
    'env_key = "TOLLGATE_API_KEY"',
    'wire_api = "responses"',
    '',
  ].join('\n');
}

/**
 * `codex exec` in the workspace-write sandbox (the command may write in its working directory;
 * approvals are never asked in exec mode), outside a git repository (`--skip-git-repo-check`),
 * printing its events as JSON lines.
 */
export async function runCodex(t: AgentTarget): Promise<AgentRun> {
  const { home, work } = workspace(t.dir);
  const codexHome = join(home, '.codex');
  mkdirSync(codexHome, { recursive: true });
  const configPath = join(codexHome, 'config.toml');
  const config = codexConfig(t.base);
  writeFileSync(configPath, config);
  const args = ['exec', '--skip-git-repo-check', '--sandbox', 'workspace-write', '--json', t.prompt];
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, CODEX_HOME: codexHome, TOLLGATE_API_KEY: t.key };
  const r = await run(t.bin, args, work, env);
  const notes: string[] = [];
  let finalText: string | null = null;
  for (const line of r.stdout.split('\n')) {
    let event: any;
    try {
      event = JSON.parse(line);
    } catch {
      continue;
    }
    const item = event.item;
    if (event.type === 'item.completed' && item?.type === 'agent_message') finalText = item.text;
    if (event.type === 'item.completed' && item?.type === 'command_execution') notes.push(`ran: ${item.command} (exit ${item.exit_code})`);
    if (event.type === 'turn.completed') notes.push(`its own usage: ${JSON.stringify(event.usage)}`);
    if (event.type === 'error' || event.type === 'turn.failed') notes.push(`error event: ${JSON.stringify(event)}`);
  }
  return {
    agent: 'Codex CLI', command: `codex ${args.map(shellQuote).join(' ')}`,
    env: { ...env, TOLLGATE_API_KEY: redact(t.key) }, files: { [configPath]: config },
    exitCode: r.code, timedOut: r.timedOut, stdout: r.stdout, stderr: r.stderr, durationMs: r.durationMs,
    proof: proofOf(work, t.proofFile), finalText, notes, ownCostUsd: null,
  };
}
