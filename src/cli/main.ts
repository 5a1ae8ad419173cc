#!/usr/bin/env node
import { IssuerError } from '../issuer/errors.js';
import { UsageError } from './common.js';
import { AUDIT_USAGE, KEYS_USAGE, MODELS_USAGE, SERVE_USAGE, STORE_USAGE } from './usage-text.js';

// Each command loads only its own modules: `tollgate keys …` does not load the server.
const USAGE = `tollgate — a metering gateway for hosted language models

${SERVE_USAGE}
${KEYS_USAGE}
${MODELS_USAGE}
${AUDIT_USAGE}
${STORE_USAGE}
tollgate demo
tollgate --version

Every command takes --config FILE and --data DIR (or TOLLGATE_CONFIG, TOLLGATE_DATA_DIR), and
--redis URL (or TOLLGATE_REDIS_URL, or storage.backend "redis" in the config) to use Redis instead.`;

async function main(argv: string[]): Promise<void> {
  const [command, sub, ...rest] = argv;
  switch (command) {
    case 'serve':
      return (await import('./serve.js')).serveCommand(argv.slice(1));
    case 'keys':
      return (await import('./keys.js')).keysCommand(sub, rest);
    case 'models':
      return (await import('./models.js')).modelsCommand(sub, rest);
    case 'audit':
      return (await import('./audit.js')).auditCommand(argv.slice(1));
    case 'store':
      return (await import('./store.js')).storeCommand(sub, rest);
    case 'version':
    case '--version':
    case '-v':
      // From ./version.ts, which also knows the single binary's version (no package.json beside it).
      process.stdout.write(`${(await import('./version.js')).versionLine()}\n`);
      return;
    case 'demo':
      return (await import('./demo.js')).demoCommand(argv.slice(1));
    case undefined:
      throw new UsageError('a command is needed: serve, keys, models or demo (try: tollgate help)');
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(`${USAGE}\n`);
      return;
    default:
      throw new UsageError(`unknown command '${command}' (try: tollgate help)`);
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
