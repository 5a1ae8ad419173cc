import type { Database, RootDatabase } from 'lmdb';
import type { AccountRow, DailyRow, RateRow } from '../rows.js';
import { AccountCache } from './account-cache.js';

/** Past this many rows in one table, all are forgotten at the next transaction: a bound on memory. */
const MAX_ROWS = 4096;

/**
 * The ledger's transactions (group commits, retries, the orphan sweep), and the rows that every
 * call's transactions write — accounts, rate windows, day totals — or read — models' switches — as
 * the last of them left them.
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
 *
 * LMDB does not number a transaction that writes nothing: the next one, of any process, takes its
 * id. So a transaction counts as committed under its own id only when it is known to have written
 * (every hold and settlement writes its account; a group of nothing but the heartbeat says so);
 * otherwise the rows stand for the state before it, the last id's, which is exactly what they
 * hold, and a transaction of another process taking the unused id is seen as one that came
 * between. A transaction that wrote without saying so only costs the next one its reads.
 */
export class CommittedRows {
  readonly accounts = new Map<string, AccountRow>();
  private readonly windows = new Map<string, RateRow>();
  /** By key id, day and model, joined with '\n'. */
  private readonly days = new Map<string, DailyRow>();
  /** Models' run-time switches as read (undefined: none set); only issuer changes write them. */
  private readonly switches = new Map<string, boolean | undefined>();
  /** The id of the last transaction whose state the rows hold; -2 when they are forgotten. */
  private committedIn = -2;
  /** The running transaction wrote one of the rows (so LMDB numbers it). */
  private wrote = false;

  constructor(
    private readonly root: RootDatabase,
    private readonly accountsDb: Database<AccountRow, string>,
    private readonly switchesDb: Database<boolean, string>,
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
        if (id !== this.committedIn + 1 || this.accounts.size > MAX_ROWS || this.windows.size > MAX_ROWS || this.days.size > MAX_ROWS || this.switches.size > MAX_ROWS) this.forget();
        this.wrote = false;
        const accounts = new AccountCache(this.accountsDb, this.accounts);
        body(accounts);
        if (accounts.writeBack()) this.wrote = true;
      });
      this.committedIn = this.wrote ? id : id - 1;
    } catch (err) {
      this.forget();
      throw err;
    }
  }

  /** A key's rate window as the last transaction left it, if kept; inside `transact` only. */
  window(keyId: string): RateRow | undefined {
    return this.windows.get(keyId);
  }

  /** A key's rate window, written in the running transaction. */
  wroteWindow(keyId: string, row: RateRow): void {
    this.windows.set(keyId, row);
    this.wrote = true;
  }

  /** A day's totals (id: key id, day and model, joined with '\n') as the last transaction left them, if kept. */
  day(id: string): DailyRow | undefined {
    return this.days.get(id);
  }

  /** A day's totals, written in the running transaction. */
  wroteDay(id: string, row: DailyRow): void {
    this.days.set(id, row);
    this.wrote = true;
  }

  /** A row not kept here was written in the running transaction (LMDB numbers it all the same). */
  wroteOther(): void {
    this.wrote = true;
  }

  /** A model's run-time switch (step 10); inside `transact` only. */
  switchOf(model: string): boolean | undefined {
    if (this.switches.has(model)) return this.switches.get(model);
    const on = this.switchesDb.get(model);
    this.switches.set(model, on);
    return on;
  }

  private forget(): void {
    this.switches.clear();
    this.accounts.clear();
    this.windows.clear();
    this.days.clear();
    this.committedIn = -2;
  }
}
