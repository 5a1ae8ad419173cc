import type { StoreOptions } from './lmdb.js';
import type { GatewayStore } from './store.js';

/** Where the state lives: the LMDB environment in a data directory. */
export type StorePlan = { backend: 'lmdb'; dataDir: string };

/** Opens the store a plan names. */
export async function openStore(plan: StorePlan, options: StoreOptions = {}): Promise<GatewayStore> {
  return (await import('./lmdb.js')).Store.open(plan.dataDir, options);
}
