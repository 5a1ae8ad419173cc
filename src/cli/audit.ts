import { configFrom, openStore, parse, table } from './common.js';
import { adminUrlFrom, localIssuer, remoteIssuer } from './issuer-client.js';
import { AUDIT_USAGE } from './usage-text.js';

/** `tollgate audit [--key KEY-REF] [--json]`: who changed what, oldest first. */
export async function auditCommand(args: string[]): Promise<void> {
  const { values } = parse(args, { key: { type: 'string' }, json: { type: 'boolean' }, 'admin-url': { type: 'string' } }, 0);
  if (values.help) {
    process.stdout.write(`${AUDIT_USAGE}\n`);
    return;
  }
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
      entries.map((e) => [String(e.at), String(e.action), (e.keyId as string | null) ?? '-', e.address === null ? String(e.actor) : `${String(e.actor)} ${String(e.address)}`, JSON.stringify(e.detail)]),
    )}\n`);
  } finally {
    await issuer.close();
  }
}
