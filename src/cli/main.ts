#!/usr/bin/env node
import { IssuerError } from '../issuer/errors.js';
import { UsageError } from './common.js';
import { AUDIT_USAGE, DEMO_USAGE, KEYS_USAGE, MODELS_USAGE, SERVE_USAGE, STORE_USAGE } from './usage-text.js';

// Each command loads only its own modules: `tollgate keys …` does not load the server.
const USAGE = `tollgate — a metering gateway for hosted language models

${SERVE_USAGE}
${KEYS_USAGE}
${MODELS_USAGE}
${AUDIT_USAGE}
${STORE_USAGE}
${DEMO_USAGE}
tollgate --version

Every command takes --config FILE and --data DIR (or TOLLGATE_CONFIG, TOLLGATE_DATA_DIR), and
--redis URL (or TOLLGATE_REDIS_URL, or storage.backend "redis" in the config) to use Redis instead;
these and --admin-url go before or after the command. --help (-h) on any command prints its usage.`;

/** What `--help` prints for each command. */
const COMMAND_USAGE: Record<string, string> = {
  serve: SERVE_USAGE, keys: KEYS_USAGE, models: MODELS_USAGE, audit: AUDIT_USAGE, store: STORE_USAGE, demo: DEMO_USAGE,
};

/** Options every command takes, accepted before the command (and a subcommand) as well as after. */
const GLOBAL_OPTIONS = new Set(['--config', '--data', '--redis', '--admin-url']);

/**
 * Splits the global options off the front of `args` (`--config FILE`, `--config=FILE`): they
 * are passed on after the rest, where each command's own parser takes them.
 */
function leadingGlobals(args: string[]): [globals: string[], rest: string[]] {
  let i = 0;
  while (i < args.length && GLOBAL_OPTIONS.has(args[i]!.split('=')[0]!)) i += args[i]!.includes('=') ? 1 : 2;
  return [args.slice(0, i), args.slice(i)];
}

/** `--help` or `-h` among the arguments (before a `--`, after which everything is a value). */
function asksForHelp(args: string[]): boolean {
  const end = args.indexOf('--');
  return (end === -1 ? args : args.slice(0, end)).some((a) => a === '--help' || a === '-h');
}

async function main(argv: string[]): Promise<void> {
  const [before, line] = leadingGlobals(argv);
  const [command, ...afterCommand] = line;
  if (command !== undefined && command in COMMAND_USAGE && asksForHelp(afterCommand)) {
    process.stdout.write(`${COMMAND_USAGE[command]}\n`);
    return;
  }
  if (command !== 'serve') quietWhenTheReaderLeaves();
  // `keys`, `models` and `store` take a subcommand next; global options may come before it too.
  const [between, afterSub] = leadingGlobals(afterCommand);
  const [sub, ...rest] = afterSub;
  const subArgs = [...rest, ...before, ...between];
  const args = [...afterCommand, ...before];
  switch (command) {
    case 'serve':
      return (await import('./serve.js')).serveCommand(args);
    case 'keys':
      return (await import('./keys.js')).keysCommand(sub, subArgs);
    case 'models':
      return (await import('./models.js')).modelsCommand(sub, subArgs);
    case 'audit':
      return (await import('./audit.js')).auditCommand(args);
    case 'store':
      return (await import('./store.js')).storeCommand(sub, subArgs);
    case 'version':
    case '--version':
    case '-v':
      // From ./version.ts, which also knows the single binary's version (no package.json beside it).
      process.stdout.write(`${(await import('./version.js')).versionLine()}\n`);
      return;
    case 'demo':
      return (await import('./demo.js')).demoCommand(args);
    case undefined:
      throw new UsageError('a command is needed: serve, keys, models, audit, store, demo or help (try: tollgate help)');
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(`${USAGE}\n`);
      return;
    default:
      // An option before any command is one that no command takes there (the global ones were split off).
      if (command.startsWith('-')) throw new UsageError(`unknown option '${command.split('=')[0]}' before the command (global options: --config, --data, --redis, --admin-url; try: tollgate help)`);
      throw new UsageError(`unknown command '${command}' (try: tollgate help)`);
  }
}

/**
 * A reader that stops early (`tollgate models list | head -n 1`) closes the pipe: the command
 * ends there, quietly and with exit 0, as command-line tools do, rather than with an unhandled
 * EPIPE. Not for `serve`, whose stdout is the access log and which must not stop serving
 * because a log reader went away.
 */
function quietWhenTheReaderLeaves(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      // process.exit() keeps an exit code already set, else exits 0.
      if (err.code === 'EPIPE') process.exit();
      throw err;
    });
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  if (err instanceof UsageError || err instanceof IssuerError) {
    process.stderr.write(`tollgate: ${err.message}\n`);
    process.exit(2);
  }
  process.stderr.write(`tollgate: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
