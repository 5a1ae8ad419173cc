import type { Database, RootDatabase } from 'lmdb';
import type { AccountRow, DailyRow, RateRow } from '../rows.js';
import { AccountCache } from './account-cache.js';

/** Past this many rows in one table, all are forgotten at the next transaction: a bound on memory. */
const MAX_ROWS = 4096;

/**
 * The ledger's transactions (group commits, retries, the orphan sweep), and the rows that every
 * call's transactions read and write — accounts, rate windows, day totals — as the last of them
 * left them.
 *
 * LMDB numbers write transactions in sequence, across every process that opens the store. A
 * transaction whose id directly follows the last one run here starts from exactly the state that
 * one committed: no other transaction, of this process or another, came between. It reads those
 * rows from here instead of from the store (at c=1, where every call's hold and settlement are
 * transactions of their own, ≈ 5 µs less per call: bench/README.md, History, "2026-11-28,
 * fourth"). Any other id, or a transaction that fails (its rows were changed in place and never
 * committed), forgets them; so a change by `tollgate keys …`, the admin API, the retention sweep
 * or another worker is read from the store, as before. Every write this process makes to the
 * store is a synchronous transaction of its own (never lmdb-js's asynchronous batches, which a
 * synchronous transaction may join), so no write of this process goes unseen by the ids either.
 */
export class CommittedRows {
  readonly accounts = new Map<string, AccountRow>();
  readonly windows = new Map<string, RateRow>();
  /** By key id, day and model, joined with '\n'. */
  readonly days = new Map<string, DailyRow>();
  /** The id of the last transaction committed here; -2 when the rows are forgotten. */
  private committedIn = -2;

  constructor(
    private readonly root: RootDatabase,
    private readonly accountsDb: Database<AccountRow, string>,
  ) {}

  /**
   * Runs `body` in one synchronous transaction, with the accounts it touches read once and
   * written back at its end, and every row it reads through this object kept for the next.
   */
  transact(body: (accounts: AccountCache) => void): void {
    let id = -2;
    try {
      this.root.transactionSync(() => {
        id = this.root.getWriteTxnId();
        if (id !== this.committedIn + 1 || this.accounts.size > MAX_ROWS || this.windows.size > MAX_ROWS || this.days.size > MAX_ROWS) this.forget();
        const accounts = new AccountCache(this.accountsDb, this.accounts);
        body(accounts);
        accounts.writeBack();
      });
      this.committedIn = id;
    } catch (err) {
      this.forget();
      throw err;
    }
  }

  private forget(): void {
    this.accounts.clear();
    this.windows.clear();
    this.days.clear();
    this.committedIn = -2;
  }
}
