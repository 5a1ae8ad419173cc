/**
 * What one commit costs in each durability mode tollgate can use, on this machine's disk:
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
    usage.put(['key', Date.now(), `req_${i}`], [Date.now(), `req_${i}`, 'chat', 'gpt-4o-mini', 0, 200, 11, 7, 0, 0, 0, 5850, 18, null, 0, 0]);
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
  for (let i = 0; i < m; i++) {
    const b0 = process.hrtime.bigint();
    root.transactionSync(() => body(i));
    blocked += process.hrtime.bigint() - b0;
    if (syncAfter) await envSync();
  }
  const sync = Number(process.hrtime.bigint() - t0) / m / 1000;
  if (syncAfter) {
    console.log(`${label.padEnd(56)} event loop blocked ${(Number(blocked) / m / 1000).toFixed(1).padStart(7)} µs   until flushed ${sync.toFixed(1).padStart(7)} µs`);
    await root.close();
    rmSync(path, { recursive: true, force: true });
    return;
  }
  const n = Math.ceil(N / 5);
  t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await root.transaction(() => body(N + i));
  const awaited = Number(process.hrtime.bigint() - t0) / n / 1000;
  console.log(`${label.padEnd(56)} transactionSync ${sync.toFixed(1).padStart(7)} µs   awaited transaction ${awaited.toFixed(1).padStart(7)} µs`);
  await root.close();
  rmSync(path, { recursive: true, force: true });
}

console.log(`lmdb commit cost, ${N} commits each, data in ${tmpdir()}`);
await measure('noSync (storage.fsync "interval")', { noSync: true });
await measure('default sync (fsync in every commit)', {});
await measure('noSync + env sync after each (storage.fsync "commit")', { noSync: true }, true);
await measure('sync + env sync after each ("commit" before: two fsyncs)', { overlappingSync: false }, true);
await measure('noSync, the three rows in one database', { noSync: true }, false, 'one');
await measure('noSync, the usage row alone', { noSync: true }, false, 'usage-only');
