import type { Database } from 'lmdb';
import type { AccountRow } from '../rows.js';

/**
 * The accounts touched by one transaction: each read once and written back once, however many
 * holds, releases and charges of the group fall on it. `committed`: the rows as the last
 * ledger transaction left them (committed-rows.ts), read instead of the store and kept up to date.
 */
export class AccountCache {
  private readonly rows = new Map<string, AccountRow | undefined>();
  constructor(
    private readonly db: Database<AccountRow, string>,
    private readonly committed: Map<string, AccountRow>,
  ) {}

  get(id: string): AccountRow | undefined {
    if (this.rows.has(id)) return this.rows.get(id);
    const row = this.committed.get(id) ?? this.db.get(id);
    this.rows.set(id, row);
    return row;
  }

  /** Writes every account read back; whether there was one. */
  writeBack(): boolean {
    let wrote = false;
    for (const [id, row] of this.rows) {
      if (row === undefined) continue;
      this.db.put(id, row);
      this.committed.set(id, row);
      wrote = true;
    }
    return wrote;
  }
}
