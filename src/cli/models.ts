import { configFrom, openStore, parse, table, UsageError } from './common.js';
import { MODELS_USAGE } from './usage-text.js';

export async function modelsCommand(sub: string | undefined, args: string[]): Promise<void> {
  if (sub !== 'list' && sub !== 'enable' && sub !== 'disable') {
    throw new UsageError(sub === undefined ? 'models needs a subcommand (list, enable, disable)' : `unknown models subcommand '${sub}'`);
  }
  const parsed = parse(args, sub === 'list' ? { json: { type: 'boolean' } } : {}, sub === 'list' ? 0 : 1);
  if (parsed.values.help) {
    process.stdout.write(`${MODELS_USAGE}\n`);
    return;
  }
  const config = configFrom(parsed.values);
  const id = parsed.positionals[0];
  if (sub !== 'list') {
    if (id === undefined) throw new UsageError(`models ${sub} needs a MODEL-ID`);
    if (!config.models.has(id)) throw new UsageError(`unknown model '${id}' (see: tollgate models list)`);
  }
  const store = openStore(parsed.values, config);
  try {
    if (sub !== 'list') {
      await store.setModelSwitch(id!, sub === 'enable');
      process.stdout.write(`${id} is now ${sub === 'enable' ? 'enabled' : 'disabled'}\n`);
      return;
    }
    const models = [...config.models.values()].map((m) => ({
      id: m.id,
      provider: m.provider.name,
      endpoints: [...m.endpoints],
      enabled: store.modelSwitch(m.id) ?? m.enabledByDefault,
      price: m.rawPrice,
      contextWindow: m.contextWindow,
      capabilities: m.capabilities,
    }));
    if (parsed.values.json) {
      process.stdout.write(`${JSON.stringify(models)}\n`);
      return;
    }
    process.stdout.write(`${table(
      ['MODEL', 'PROVIDER', 'ENDPOINTS', 'ENABLED', 'INPUT $/M', 'OUTPUT $/M', 'CONTEXT'],
      models.map((m) => [m.id, m.provider, m.endpoints.join(','), m.enabled ? 'yes' : 'no', String(m.price.input), String(m.price.output), m.contextWindow === null ? '-' : String(m.contextWindow)]),
    )}\n`);
  } finally {
    await store.close();
  }
}
