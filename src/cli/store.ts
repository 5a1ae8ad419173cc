import { redisUrlProblem } from '../config/load.js';
import { openMigrationSource, openMigrationTarget, type StoreDump } from '../store/store.js';
import { configFrom, dataDirFrom, parse, storeMustExist, UsageError } from './common.js';
import { STORE_USAGE } from './usage-text.js';

/**
 * `tollgate store migrate --to URL [--force]`: the LMDB store of --data (or TOLLGATE_DATA_DIR,
 * or the config's dataDir) copied into Redis, then read back and compared: the number of keys,
 * accounts, usage records and calls in flight per key, day totals, model switches, audit
 * entries and owner records of stored responses (each with what is left of the config's
 * storage.responseRetentionDays as its TTL), and every account's balance, budget, use and holds. Exit 0 when all match, 1 when
 * anything differs (each difference on stderr), 2 on bad usage or a non-empty target.
 */
export async function storeCommand(sub: string | undefined, args: string[]): Promise<void> {
  const { values } = parse(args, { to: { type: 'string' }, force: { type: 'boolean' } }, 0);
  if (sub === 'help') {
    process.stdout.write(`${STORE_USAGE}\n`);
    return;
  }
  if (sub === undefined) throw new UsageError('store needs a subcommand (migrate; try: tollgate store help)');
  if (sub !== 'migrate') throw new UsageError(`unknown store subcommand '${sub}' (try: tollgate store migrate --to redis://…)`);
  const to = values.to as string | undefined;
  if (to === undefined) throw new UsageError('store migrate needs --to redis://host:port');
  const problem = redisUrlProblem(to);
  if (problem !== null) throw new UsageError(`--to ${problem}`);
  // The source is the LMDB store of --data: --redis would name a second Redis, not a source.
  if (values.redis !== undefined) throw new UsageError('store migrate copies the LMDB store of --data into --to; it takes no --redis');
  const config = configFrom(values);
  const dataDir = dataDirFrom(values, config);
  storeMustExist({ backend: 'lmdb', dataDir });
  const source = await openMigrationSource(dataDir);
  let target: Awaited<ReturnType<typeof openMigrationTarget>> | null = null;
  try {
    // A server still serving the store would go on writing calls the copy does not have, and its
    // calls in flight would be copied as holds to settle as interrupted.
    const serving = source.servingProcesses();
    if (serving > 0) throw new Error(`${dataDir} is being served (${serving === 1 ? 'a tollgate serve process' : `${serving} tollgate serve processes`} with a heartbeat in it); stop serve first, then migrate`);
    target = await openMigrationTarget(to);
    if (!(await target.isEmpty())) {
      if (!values.force) throw new UsageError('the target already holds tollgate data; --force replaces it');
      await target.clear();
    }
    const dump = source.dump();
    const { renamed, responses } = await target.load(dump, config.storage.responseRetentionDays);
    const problems = await verify(dump, target, renamed);
    if ((await target.responseCount()) !== responses) problems.push(`owner records of stored responses differ in number (${responses} copied)`);
    const expired = dump.responses.length - responses;
    const counts = `${dump.keys.length} keys, ${dump.accounts.length} accounts, ${dump.calls.length} calls in flight, ${dump.usage.length} usage records, ${dump.daily.length} day totals, ${dump.switches.length} model switches, ${dump.audit.length} audit entries, ${responses} response owners${expired > 0 ? ` (${expired} past storage.responseRetentionDays left behind)` : ''}`;
    if (problems.length > 0) {
      for (const p of problems) process.stderr.write(`tollgate: after copying: ${p}\n`);
      throw new Error(`the copy does not match the source (${problems.length} differences)`);
    }
    process.stdout.write(`copied ${counts}\nverified: counts and balances match${renamed.size > 0 ? ` (${renamed.size} accounts have new ids in their keys' Cluster slots)` : ''}\n`);
  } finally {
    await target?.close();
    await source.close();
  }
}

async function verify(dump: StoreDump, target: Awaited<ReturnType<typeof openMigrationTarget>>, renamed: Map<string, string>): Promise<string[]> {
  const problems: string[] = [];
  const keys = await target.allKeys();
  if (keys.length !== dump.keys.length) problems.push(`${keys.length} keys, not ${dump.keys.length}`);
  const usagePerKey = new Map<string, number>();
  for (const [keyId] of dump.usage) usagePerKey.set(keyId, (usagePerKey.get(keyId) ?? 0) + 1);
  const callsPerKey = new Map<string, number>();
  for (const c of dump.calls) callsPerKey.set(c.keyId, (callsPerKey.get(c.keyId) ?? 0) + 1);
  const dailyPerKey = new Map<string, number>();
  const daysPerKey = new Map<string, [string, string]>();
  for (const d of dump.daily) {
    dailyPerKey.set(d.keyId, (dailyPerKey.get(d.keyId) ?? 0) + d.requests);
    const span = daysPerKey.get(d.keyId);
    daysPerKey.set(d.keyId, span === undefined ? [d.day, d.day] : [d.day < span[0] ? d.day : span[0], d.day > span[1] ? d.day : span[1]]);
  }
  for (const key of dump.keys) {
    const copy = await target.keyById(key.id);
    if (copy === undefined || copy.hash !== key.hash || copy.status !== key.status || copy.mode !== key.mode) {
      problems.push(`key ${key.id} missing or different`);
      continue;
    }
    const { usage, calls } = await target.countsOf(copy);
    if (usage !== (usagePerKey.get(key.id) ?? 0)) problems.push(`key ${key.id}: ${usage} usage records, not ${usagePerKey.get(key.id) ?? 0}`);
    if (calls !== (callsPerKey.get(key.id) ?? 0)) problems.push(`key ${key.id}: ${calls} calls in flight, not ${callsPerKey.get(key.id) ?? 0}`);
    let requests = 0;
    const span = daysPerKey.get(key.id);
    if (span !== undefined) for (const t of (await target.dailyOf(copy, span[0], span[1])).values()) requests += t.requests;
    if (requests !== (dailyPerKey.get(key.id) ?? 0)) problems.push(`key ${key.id}: day totals count ${requests} requests, not ${dailyPerKey.get(key.id) ?? 0}`);
  }
  for (const [id, a] of dump.accounts) {
    const copy = await target.account(renamed.get(id) ?? id);
    if (copy === undefined) problems.push(`account ${id} missing`);
    else if (copy.mode !== a.mode || copy.balanceNano !== a.balanceNano || copy.budgetTokens !== a.budgetTokens || copy.usedTokens !== a.usedTokens || copy.held !== a.held) {
      problems.push(`account ${id}: ${JSON.stringify(copy)}, not ${JSON.stringify(a)}`);
    }
  }
  if ((await target.switchCount()) !== dump.switches.length) problems.push('model switches differ');
  if ((await target.auditTrail(undefined, Number.MAX_SAFE_INTEGER)).length !== dump.audit.length) problems.push('audit entries differ in number');
  return problems;
}
