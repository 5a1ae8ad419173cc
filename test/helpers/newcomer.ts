/** The command line as a newcomer types it: in a directory of theirs, with nothing set up. */
import { spawn } from 'node:child_process';
import { CLI, type CliResult } from './harness.js';

/** The environment of a machine with no provider account: no credential, no tollgate variable. */
export function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(OPENAI_|ANTHROPIC_|TOLLGATE_)/.test(name)));
  return { ...env, ...extra };
}

/**
 * `tollgate ARGS` run in `cwd` as typed in a shell there; resolves to its output. With
 * `readerGone`, the reader of its stdout has left before it writes (as `| head -n 1` does
 * once it has its line): every write meets a closed pipe.
 */
export function tollgateIn(cwd: string, args: string[], env: NodeJS.ProcessEnv = {}, readerGone = false): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd, env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    if (readerGone) child.stdout!.destroy();
    else child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
