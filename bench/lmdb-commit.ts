/**
 * What one commit costs in each durability mode tollgate can use, on this machine's disk, with
 * its pages copied out by pwrite (the server's setting) or written into the memory map (WRITEMAP,
 * tried and not taken: bench/README.md, History):
 * a transaction shaped like a group commit of one request (account read-modify-write, one usage
 * row, one day-total read-modify-write), synchronous or awaited, with and without noSync.
 *
 *   node --import tsx bench/lmdb-commit.ts
 */
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open } from 'lmdb';

const N = Number(process.env.BENCH_COMMITS || 5000);

/** How the rows are laid out: three named databases as in src/store/lmdb/open.ts, all in one, or the usage row alone. */
type Shape = 'three' | 'one' | 'usage-only';

/** A settlement's usage row, as the store writes one. */
function putUsageRow(usage: { put(key: unknown, value: unknown): unknown }, i: number): void {
  usage.put(['key', Date.now(), `req_${i}`], [Date.now(), `req_${i}`, 'chat', 'gpt-4o-mini', 0, 200, 11, 7, 0, 0, 0, 5850, 18, null, 0, 0]);
}

async function measure(label: string, options: Record<string, unknown>, syncAfter = false, shape: Shape = 'three'): Promise<void> {
  const path = join(tmpdir(), `tollgate-lmdb-commit-${process.pid}-${Math.random().toString(36).slice(2)}`);
  const root = open({ path, maxDbs: 8, ...options });
  const accounts = root.openDB({ name: 'a' });
  const usage = shape === 'one' ? accounts : root.openDB({ name: 'u' });
  const daily = shape === 'one' ? accounts : root.openDB({ name: 'd' });
  accounts.putSync('acct', [0, 1e12, 0, 0]);
  const body = (i: number): void => {
    if (shape !== 'usage-only') {
      const a = accounts.get('acct') as number[];
      a[1]! -= 5850;
      accounts.put('acct', a);
    }
    putUsageRow(usage, i);
    if (shape === 'usage-only') return;
    const d = (daily.get(['day', 'key', '2026-11-22', 'gpt-4o-mini']) as number[] | undefined) ?? [0, 0, 0];
    daily.put(['day', 'key', '2026-11-22', 'gpt-4o-mini'], [d[0]! + 1, d[1]! + 5850, d[2]! + 18]);
  };
  const envSync = (): Promise<void> => new Promise((resolve) => (root as unknown as { sync(cb: () => void): void }).sync(resolve));
  let t0 = process.hrtime.bigint();
  const m = syncAfter ? Math.ceil(N / 5) : N;
  // With syncAfter: the time the event loop is blocked (the synchronous transaction) is kept
  // apart from the time until the asynchronous flush reports back (when answers are released).
  let blocked = 0n;
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < m; i++) {
    const b0 = process.hrtime.bigint();
    root.transactionSync(() => body(i));
    blocked += process.hrtime.bigint() - b0;
    if (syncAfter) await envSync();
  }
  const sync = Number(process.hrtime.bigint() - t0) / m / 1000;
  const cpu = process.cpuUsage(cpu0);
  const cpuText = `CPU ${((cpu.user + cpu.system) / m).toFixed(1).padStart(6)} µs (kernel ${(cpu.system / m).toFixed(1).padStart(5)})`;
  if (syncAfter) {
    console.log(`${label.padEnd(60)} event loop blocked ${(Number(blocked) / m / 1000).toFixed(1).padStart(7)} µs   until flushed ${sync.toFixed(1).padStart(7)} µs   ${cpuText}`);
    await root.close();
    rmSync(path, { recursive: true, force: true });
    return;
  }
  const n = Math.ceil(N / 5);
  t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await root.transaction(() => body(N + i));
  const awaited = Number(process.hrtime.bigint() - t0) / n / 1000;
  console.log(`${label.padEnd(60)} transactionSync ${sync.toFixed(1).padStart(7)} µs, ${cpuText}   awaited transaction ${awaited.toFixed(1).padStart(7)} µs`);
  await root.close();
  rmSync(path, { recursive: true, force: true });
}

console.log(`lmdb commit cost, ${N} commits each, data in ${tmpdir()}`);
// The server writes its pages with pwrite; WRITEMAP (pages written in the memory map) was tried
// and not taken (bench/README.md, History). The first pair warms up.
await measure('noSync, WRITEMAP', { noSync: true, useWritemap: true });
await measure('noSync, pwrite (storage.fsync "interval")', { noSync: true });
await measure('noSync, WRITEMAP', { noSync: true, useWritemap: true });
await measure('noSync, pwrite', { noSync: true });
await measure('noSync + env sync after each, WRITEMAP', { noSync: true, useWritemap: true }, true);
await measure('default sync (fsync in every commit)', {});
await measure('noSync + env sync after each, pwrite (storage.fsync "commit")', { noSync: true }, true);
await measure('sync + env sync after each ("commit" before: two fsyncs)', { overlappingSync: false }, true);
await measure('noSync, the three rows in one database', { noSync: true }, false, 'one');
await measure('noSync, the usage row alone', { noSync: true }, false, 'usage-only');

/**
 * A call's two commits as the server makes them at c=1, where each is a group of its own: the
 * hold (rate window, account, entry in flight) and the settlement (account, entry ended, usage
 * row, day total). CPU per call, user and kernel, WRITEMAP and pwrite alternated.
 */
function callCommits(writemap: boolean, calls: number): { user: number; system: number } {
  const path = join(tmpdir(), `tollgate-lmdb-commit-${process.pid}-${Math.random().toString(36).slice(2)}`);
  const root = open({ path, maxDbs: 16, noSync: true, overlappingSync: false, useWritemap: writemap });
  const [inFlight, accounts, rate, usage, daily] = ['calls', 'accounts', 'rate', 'usage', 'daily'].map((name) => root.openDB({ name })) as Array<ReturnType<typeof root.openDB>>;
  accounts!.putSync('acct', [0, 1e12, 0, 0]);
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < calls; i++) {
    root.transactionSync(() => {
      const w = (rate!.get('key') as number[] | undefined) ?? [Date.now(), 0];
      rate!.put('key', [w[0], w[1]! + 1]);
      const a = accounts!.get('acct') as number[];
      a[2]! += 5000;
      accounts!.put('acct', a);
      inFlight!.put(['key', `call_${i}`], ['acct', 'owner', 5000, Date.now()]);
    });
    root.transactionSync(() => {
      const a = accounts!.get('acct') as number[];
      a[1]! -= 5850;
      a[2]! -= 5000;
      accounts!.put('acct', a);
      inFlight!.remove(['key', `call_${i}`]);
      putUsageRow(usage!, i);
      const d = (daily!.get(['key', '2026-11-22', 'gpt-4o-mini']) as number[] | undefined) ?? [0, 0, 0];
      daily!.put(['key', '2026-11-22', 'gpt-4o-mini'], [d[0]! + 1, d[1]! + 5850, d[2]! + 18]);
    });
  }
  const cpu = process.cpuUsage(cpu0);
  root.close();
  rmSync(path, { recursive: true, force: true });
  return { user: cpu.user / calls, system: cpu.system / calls };
}

console.log(`\na call's two commits (hold, settlement), ${N * 4} calls per run, alternated`);
for (let round = 0; round < 4; round++) {
  for (const writemap of [false, true]) {
    const { user, system } = callCommits(writemap, N * 4);
    console.log(`${(writemap ? 'WRITEMAP' : 'pwrite').padEnd(10)} CPU ${(user + system).toFixed(1).padStart(6)} µs per call (user ${user.toFixed(1).padStart(5)}, kernel ${system.toFixed(1).padStart(5)})`);
  }
}
