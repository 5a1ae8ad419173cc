import { existsSync } from 'node:fs';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { join, resolve } from 'node:path';
import { ConfigError, loadConfig, redisUrlProblem } from '../config/load.js';
import type { Config } from '../config/types.js';
import { openStore as openBackend, type StorePlan } from '../store/store.js';
import type { GatewayStore } from '../domain/interfaces.js';
import { CONTROL_CHARACTERS } from '../issuer/input.js';

/** Bad usage: exit code 2 with this one line on stderr. */
export class UsageError extends Error {}

export type Options = NonNullable<ParseArgsConfig['options']>;

/** Flags every command takes (`--help` is answered before any command runs: main.ts). */
export const COMMON_OPTIONS: Options = {
  config: { type: 'string' },
  data: { type: 'string' },
  redis: { type: 'string' },
};

export interface Parsed {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
}

export function parse(args: string[], options: Options, positionals: number): Parsed {
  const all = { ...COMMON_OPTIONS, ...options };
  let parsed;
  try {
    parsed = parseArgs({ args: negativeValuesJoined(args, all), options: all, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message.split('\n')[0]!.replace(/\. To specify a positional.*$/, ''));
  }
  if (parsed.positionals.length > positionals) throw new UsageError(`unexpected argument '${parsed.positionals[positionals]}'`);
  return { values: parsed.values as Parsed['values'], positionals: parsed.positionals };
}

/**
 * `--balance -1` as `--balance=-1`: parseArgs would take `-1` for an option and report the flag
 * as "ambiguous"; joined, the flag's own check says what is wrong with the value.
 */
function negativeValuesJoined(args: string[], options: Options): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const next = args[i + 1];
    if (arg.startsWith('--') && options[arg.slice(2)]?.type === 'string' && next !== undefined && /^-\d/.test(next)) {
      out.push(`${arg}=${next}`);
      i++;
    } else out.push(arg);
  }
  return out;
}

/** The configuration: --config, else TOLLGATE_CONFIG, else ./tollgate.config.json, else built-in defaults. */
export function configFrom(values: Parsed['values']): Config {
  const file = (values.config as string | undefined) ?? (process.env.TOLLGATE_CONFIG || undefined);
  try {
    return loadConfig(file);
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(err.message);
    throw err;
  }
}

/** The data directory: --data, else TOLLGATE_DATA_DIR, else the config's dataDir. */
export function dataDirFrom(values: Parsed['values'], config: Config): string {
  const dir = (values.data as string | undefined) ?? (process.env.TOLLGATE_DATA_DIR || undefined);
  return dir === undefined ? config.dataDir : resolve(dir);
}

/**
 * Which store a command opens: Redis when --redis, else TOLLGATE_REDIS_URL, else the config's
 * storage.backend "redis" names a URL (flag over variable over file); else LMDB in the data
 * directory.
 */
export function storePlanFrom(values: Parsed['values'], config: Config): StorePlan {
  const flag = values.redis as string | undefined;
  const variable = process.env.TOLLGATE_REDIS_URL || undefined;
  const url = flag ?? variable ?? (config.storage.backend === 'redis' ? config.storage.redisUrl! : undefined);
  if (url === undefined) return { backend: 'lmdb', dataDir: dataDirFrom(values, config) };
  const problem = redisUrlProblem(url);
  if (problem !== null) throw new UsageError(`${flag !== undefined ? '--redis' : variable !== undefined ? 'TOLLGATE_REDIS_URL' : 'storage.redisUrl'} ${problem}`);
  return { backend: 'redis', url };
}

/**
 * The store of an issuer command (LMDB opened with fsync on every commit: the CLI's changes are
 * on disk when it returns). Only `keys create` passes `create` (as `serve` makes its own): every
 * other command run where there is no store says so and creates nothing (storeMustExist).
 */
export function openStore(values: Parsed['values'], config: Config, create = false): Promise<GatewayStore> {
  const plan = storePlanFrom(values, config);
  if (!create) storeMustExist(plan);
  return openBackend(plan);
}

/**
 * Refuses an LMDB data directory that holds no store (no `data.mdb`): the command was most
 * likely run from the wrong directory or with the wrong --data, and opening the environment
 * would create an empty store there (the directory, data.mdb and lock.mdb) and answer from it.
 * A Redis server is always named explicitly (flag, variable or config) and opening it writes
 * nothing, so any Redis that answers is taken as the store, empty or not.
 */
export function storeMustExist(plan: StorePlan): void {
  if (plan.backend === 'lmdb' && !existsSync(join(plan.dataDir, 'data.mdb'))) {
    throw new Error(`no store in ${plan.dataDir}: point at yours with --data DIR, TOLLGATE_DATA_DIR or "dataDir" in the config (or at Redis with --redis URL); only \`tollgate serve\` and \`tollgate keys create\` start a new one`);
  }
}

/** A whole number within bounds, from a flag's text. */
export function wholeNumber(text: string | boolean | undefined, flag: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof text !== 'string' || !/^\d+$/.test(text)) throw new UsageError(`${flag} needs a whole number`);
  const n = Number(text);
  if (n < min || n > max) throw new UsageError(`${flag} must be from ${min} to ${max}`);
  return n;
}

/** The usual escapes; any other such character is written `\xNN` or `\uNNNN`. */
const ESCAPES: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * Text as one line of inert characters: each control character (C0, DEL, C1), line or paragraph
 * separator and text-direction control written as an escape (`\n`, `\x1b`, `\u2028`, `\u202e`).
 * New names cannot hold them, but one stored earlier, or an audit entry recording it, must not
 * break a line or move the cursor and so print a row of its own making.
 */
export function printable(text: string): string {
  return text.replace(new RegExp(CONTROL_CHARACTERS.source, 'g'), (c) => {
    const code = c.charCodeAt(0);
    return ESCAPES[c] ?? (code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`);
  });
}

/** Prints rows as aligned columns, every cell printable (one line each). */
export function table(header: string[], rows: string[][]): string {
  const cells = rows.map((r) => r.map(printable));
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((r) => (r[i] ?? '').length)));
  const line = (row: string[]): string => row.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(header), ...cells.map(line)].join('\n');
}
