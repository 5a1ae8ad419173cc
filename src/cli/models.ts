import { IssuerError } from '../issuer/errors.js';
import { configFrom, openStore, parse, table, UsageError } from './common.js';
import { adminUrlFrom, localIssuer, remoteIssuer, type ListedModel } from './issuer-client.js';
import { MODELS_USAGE } from './usage-text.js';

export async function modelsCommand(sub: string | undefined, args: string[]): Promise<void> {
  if (sub === 'help') {
    process.stdout.write(`${MODELS_USAGE}\n`);
    return;
  }
  if (sub !== 'list' && sub !== 'enable' && sub !== 'disable') {
    throw new UsageError(sub === undefined ? 'models needs a subcommand (list, enable, disable; try: tollgate models help)' : `unknown models subcommand '${sub}' (try: tollgate models help)`);
  }
  const parsed = parse(args, { ...(sub === 'list' ? { json: { type: 'boolean' } } : {}), 'admin-url': { type: 'string' } }, sub === 'list' ? 0 : 1);
  const adminUrl = adminUrlFrom(parsed.values);
  const config = adminUrl === undefined ? configFrom(parsed.values) : null;
  const id = parsed.positionals[0];
  if (sub !== 'list') {
    if (id === undefined) throw new UsageError(`models ${sub} needs a MODEL-ID`);
    if (config !== null && !config.modelsByName.has(id)) throw new IssuerError('unknown_model', 'id', () => `unknown model '${id}' (see: tollgate models list)`);
  }
  const issuer = adminUrl !== undefined ? remoteIssuer(adminUrl) : localIssuer(await openStore(parsed.values, config!), config!);
  try {
    if (sub !== 'list') {
      const entry = await issuer.setModel(id!, sub === 'enable');
      process.stdout.write(`${entry}${entry === id ? '' : ` (of which ${id} is an alias)`} is now ${sub === 'enable' ? 'enabled' : 'disabled'}\n`);
      return;
    }
    const models = await issuer.listModels();
    if (parsed.values.json) {
      process.stdout.write(`${JSON.stringify(models)}\n`);
      return;
    }
    process.stdout.write(`${table(
      ['MODEL', 'PROVIDER', 'ENDPOINTS', 'ENABLED', 'INPUT $/M', 'OUTPUT $/M', 'CONTEXT'],
      models.map((m) => [m.id, m.provider, m.endpoints.join(','), m.enabled ? 'yes' : 'no', String(m.price.input), String(m.price.output), m.contextWindow === null ? '-' : String(m.contextWindow)]),
    )}\n`);
    if (models.length > 0) process.stdout.write(`\n${credentialNote(models)}\n`);
  } finally {
    await issuer.close();
  }
}

/**
 * Where each provider's credential comes from: the variable the server reads when it starts. The
 * same locally and through --admin-url (the same output either way); whether the running server
 * has each is the admin API's `usable` and the metric tollgate_upstream_credential_up.
 */
function credentialNote(models: ListedModel[]): string {
  const needs = new Map<string, string>();
  for (const m of models) needs.set(m.provider, m.credentialEnv);
  const list = [...needs].map(([provider, env]) => `${env} (${provider})`).join(', ');
  return `The server reads each provider's credential from its own environment when it starts: ${list}. A provider whose variable is unset there answers model_not_available; the running server's admin API (GET /admin/v1/models, "usable") and its metric tollgate_upstream_credential_up say which it has.`;
}
