import { configFrom, openStore, parse, table } from './common.js';
import { adminUrlFrom, localIssuer, remoteIssuer } from './issuer-client.js';

/** `tollgate audit [--key KEY-REF] [--json]`: who changed what, oldest first. */
export async function auditCommand(args: string[]): Promise<void> {
  const { values } = parse(args, { key: { type: 'string' }, json: { type: 'boolean' }, 'admin-url': { type: 'string' } }, 0);
  const adminUrl = adminUrlFrom(values);
  const config = adminUrl === undefined ? configFrom(values) : null;
  const issuer = adminUrl !== undefined ? remoteIssuer(adminUrl) : localIssuer(await openStore(values, config!), config!);
  try {
    const entries = await issuer.audit(values.key as string | undefined);
    if (values.json) {
      process.stdout.write(`${JSON.stringify(entries)}\n`);
      return;
    }
    if (entries.length === 0) {
      process.stdout.write('No changes recorded yet.\n');
      return;
    }
    process.stdout.write(`${table(
      ['AT', 'ACTION', 'KEY', 'BY', 'DETAIL'],
      entries.map((e) => [String(e.at), String(e.action), (e.keyId as string | null) ?? '-', e.address === null ? String(e.actor) : `${String(e.actor)} ${String(e.address)}`, detailText(e.detail)]),
    )}\n`);
  } finally {
    await issuer.close();
  }
}

/** What a setting left empty means in an entry's detail (`--all-models`, `--no-rpm`, `--expires never`…). */
const EMPTY_MEANS: Record<string, string> = { models: 'all', rpm: 'unlimited', concurrency: 'unlimited', expiresAt: 'never' };

/** An entry's detail as `name=value` pairs: `mode=credit balanceUsd=5.000000 models=all rpm=unlimited`. */
function detailText(detail: unknown): string {
  if (typeof detail !== 'object' || detail === null) return '-';
  const value = (name: string, v: unknown): string => {
    if (v === null || v === undefined) return EMPTY_MEANS[name] ?? '-';
    if (Array.isArray(v)) return v.join(',');
    return typeof v === 'object' ? JSON.stringify(v) : String(v);
  };
  const pairs = Object.entries(detail).map(([name, v]) => `${name}=${value(name, v)}`);
  return pairs.length === 0 ? '-' : pairs.join(' ');
}
