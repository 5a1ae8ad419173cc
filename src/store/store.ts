/**
 * The store's one door, for the wiring (server.ts is handed a store; cli/serve.ts opens it) and
 * the command line: opening a store, its retention sweep, and what `tollgate store migrate`
 * needs. Everything else reaches the store through the interfaces it implements
 * (domain/interfaces.ts) and never imports from here.
 *
 * Each backend is loaded only when used: an LMDB deployment never loads the Redis client, and a
 * Redis one never opens an LMDB environment.
 */
import type { Store as LmdbStore } from './lmdb/store.js';
import type { RedisStore } from './redis/store.js';

export { checkLmdbBinding, openStore, type StorePlan } from './open.js';
export type { FsyncMode, StoreOptions } from './lmdb/store.js';
export type { StoreDump } from './dump.js';
export { RetentionSweeper, type RetentionOptions } from './retention.js';

/** The LMDB store of `dataDir`, as `tollgate store migrate` reads it (its dump). */
export async function openMigrationSource(dataDir: string): Promise<LmdbStore> {
  return (await import('./lmdb/store.js')).Store.open(dataDir);
}

/** The Redis (or Cluster) at `url`, as `tollgate store migrate` writes and checks it. */
export async function openMigrationTarget(url: string): Promise<RedisStore> {
  return (await import('./redis/store.js')).RedisStore.open(url);
}
