/**
 * LMDB stores for tests that drive the store in process: a serving store on a data directory of
 * its own, and more serving stores on the same directory as other serving processes would open it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Store } from '../../src/store/lmdb/store.js';

/** Opened as `tollgate serve` opens it: commits unsynced, flushed every second. */
const SERVING = { fsync: 'interval', fsyncIntervalMs: 1000 } as const;

/** A serving store on a new data directory (named after `name`), closed and removed when `t` ends. */
export async function servingStore(t: Tap.Test, name: string): Promise<{ dir: string; store: Store }> {
  const dir = mkdtempSync(join(tmpdir(), `tollgate-${name}-`));
  const store = Store.open(dir, SERVING);
  t.teardown(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  await store.serveCalls();
  return { dir, store };
}

/** Another serving process's store on `dir`, closed when `t` ends. */
export async function servingBeside(t: Tap.Test, dir: string): Promise<Store> {
  const store = Store.open(dir, SERVING);
  t.teardown(() => store.close());
  await store.serveCalls();
  return store;
}
