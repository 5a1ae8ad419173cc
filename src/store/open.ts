import type { GatewayStore } from '../domain/interfaces.js';
import type { StoreOptions } from './lmdb/store.js';

/** Where the state lives: LMDB in a data directory, or a Redis/Valkey server (or Cluster). */
export type StorePlan = { backend: 'lmdb'; dataDir: string } | { backend: 'redis'; url: string };

/**
 * Opens the store a plan names. Each backend is loaded only when used: an LMDB deployment never
 * loads the Redis client, and a Redis one never opens an LMDB environment. `responseRetentionDays`
 * is the TTL of owner records on Redis (on LMDB the retention sweep deletes them).
 */
export async function openStore(plan: StorePlan, options: StoreOptions & { responseRetentionDays?: number } = {}): Promise<GatewayStore> {
  if (plan.backend === 'redis') return (await import('./redis/store.js')).RedisStore.open(plan.url, options);
  return (await import('./lmdb/store.js')).Store.open(plan.dataDir, options);
}

/**
 * Checks the LMDB binding without opening an environment (serve --workers: once in the primary,
 * rather than once per worker). lmdb-js is loaded first: in the single binary, loading it is
 * what loads the embedded binding the check looks for.
 */
export async function checkLmdbBinding(): Promise<void> {
  await import('./lmdb/store.js');
  (await import('./binding.js')).assertFixedLmdbBinding();
}
