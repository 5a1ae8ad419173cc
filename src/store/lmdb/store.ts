import type { GatewayStore } from '../../domain/interfaces.js';
import { LmdbAdmission } from './admission.js';
import { openEnvironment, type StoreOptions } from './open.js';

export type { FsyncMode, StoreOptions } from './open.js';
export { OWNER_STALE_MS, SWEEP_MS } from './liveness.js';

/**
 * The one interface to persistent state: an LMDB environment under the data directory.
 *
 * Reads are synchronous and see the latest committed state as of the current event turn
 * (lmdb-js renews its read transaction every turn), so a change written by `tollgate keys …` in
 * another process is obeyed on the next request without any cache to invalidate.
 * Every read-modify-write runs inside a synchronous transaction (`transactionSync`), which holds
 * LMDB's single write lock across processes: exact under cluster workers and with issuer
 * commands opening the store while the server commits (tested), given the binding built by
 * scripts/build-lmdb.mjs (./binding.ts says why).
 */
export class Store extends LmdbAdmission implements GatewayStore {
  readonly backend = 'lmdb' as const;

  /**
   * Opens the environment. The server passes its configured fsync mode; everything else (the
   * CLI) uses the default, `commit`, so every issuer change is on disk when the command returns.
   */
  static open(dataDir: string, options: StoreOptions = {}): Store {
    return new Store(options, ...openEnvironment(dataDir, options));
  }


  async close(): Promise<void> {
    if (this.flushScheduled) this.flush();
    await this.retries.close();
    if (this.flushTimer !== null) clearInterval(this.flushTimer);
    this.stopServingCalls();
    await new Promise<void>((resolve) => this.syncToDisk(() => resolve()));
    await this.root.close();
  }
}
