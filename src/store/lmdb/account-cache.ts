import type { Database } from 'lmdb';
import type { AccountRow } from '../rows.js';

/**
 * The accounts touched by one transaction: each read once and written back once, however many
 * holds, releases and charges of the group fall on it.
 */
export class AccountCache {
  private readonly rows = new Map<string, AccountRow | undefined>();
  constructor(private readonly db: Database<AccountRow, string>) {}

  get(id: string): AccountRow | undefined {
    if (this.rows.has(id)) return this.rows.get(id);
    const row = this.db.get(id);
    this.rows.set(id, row);
    return row;
  }

  writeBack(): void {
    for (const [id, row] of this.rows) if (row !== undefined) this.db.put(id, row);
  }
}
