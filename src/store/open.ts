import type { StoreOptions } from './lmdb.js';
import type { GatewayStore } from './store.js';

/** Where the state lives: LMDB in a data directory, or a Redis/Valkey server (or Cluster). */
export type StorePlan = { backend: 'lmdb'; dataDir: string } | { backend: 'redis'; url: string };

/**
 * Opens the store a plan names. Each backend is loaded only when used: an LMDB deployment never
 * loads the Redis client, and a Redis one never opens an LMDB environment.
 */
export async function openStore(plan: StorePlan, options: StoreOptions = {}): Promise<GatewayStore> {
  if (plan.backend === 'redis') return (await import('./redis.js')).RedisStore.open(plan.url);
  return (await import('./lmdb.js')).Store.open(plan.dataDir, options);
}
