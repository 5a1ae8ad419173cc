import type { Database } from 'lmdb';
import { passesMaxAmount } from '../../domain/rules.js';
import type { Account, AuditEntry, KeyRecord, NewKey } from '../../domain/types.js';
import { PendingAudit } from '../audit.js';
import { newId } from '../common.js';
import { accountToRow, auditKeyId, auditToRow, keyToRow, rowToAccount, rowToAudit, rowToKey, type AuditRow, type KeyRow } from '../rows.js';
import { LmdbEnvironment } from './open.js';

/** Keys kept decoded at most (a few hundred bytes each); past it the map starts again. */
const MAX_DECODED_KEYS = 10_000;

/**
 * lmdb-js's reads below `get`: the stored bytes (in a buffer the next read reuses) and the
 * database's own decoder for them.
 */
interface RawReads<T> {
  getBinaryFast(key: string): Buffer | undefined;
  decoder: { decode(bytes: Buffer): T };
}

/**
 * What `tollgate keys|models|audit` and the admin API change and read (IssuerStore). An issuer
 * change (CLI) is one synchronous transaction, on disk when it returns.
 *
 * The audit trail is its own sub-database, opened on first use: [at, entry id] → AuditRow.
 * An issuer change made through `audited()` writes its entry inside the same transaction as
 * the change itself, so a change is never without its entry, nor an entry without its change.
 */
export class LmdbIssuer extends LmdbEnvironment {
  /**
   * An issuer change (CLI): one synchronous transaction, on disk when it returns (the CLI opens
   * without noSync), under LMDB's write lock like the server's group commits, rather than on
   * lmdb-js's asynchronous write thread.
   */
  protected async writeNow<T>(change: () => T): Promise<T> {
    return this.root.transactionSync(() => this.auditedResult(change()));
  }

  /**
   * Keys read on the request path, decoded: hash → the row's bytes and its record (frozen, as
   * every caller shares it). A record is reused only while its stored bytes are the same, so a
   * change by any process is read at once; what is saved is decoding the row on every request.
   */
  private readonly decodedKeys = new Map<string, { bytes: Buffer; record: KeyRecord }>();

  /** Synchronous reads (about a microsecond): the request path and the transactions use these. */
  protected keyRecord(hash: string): KeyRecord | undefined {
    const keys = this.keys as unknown as RawReads<KeyRow>;
    const bytes = keys.getBinaryFast(hash);
    if (bytes === undefined) return undefined;
    // `bytes` is lmdb-js's shared read buffer: its `length` is set to the value's size.
    const size = bytes.length;
    const decoded = this.decodedKeys.get(hash);
    if (decoded !== undefined && decoded.bytes.length === size && decoded.bytes.compare(bytes, 0, size) === 0) return decoded.record;
    const record = Object.freeze(rowToKey(keys.decoder.decode(bytes)));
    if (this.decodedKeys.size >= MAX_DECODED_KEYS) this.decodedKeys.clear();
    const copy = Uint8Array.prototype.slice.call(bytes, 0, size);
    this.decodedKeys.set(hash, { bytes: Buffer.from(copy.buffer, 0, size), record });
    return record;
  }

  protected keyRecordById(id: string): KeyRecord | undefined {
    const hash = this.keyIds.get(id);
    return hash === undefined ? undefined : this.keyRecord(hash);
  }

  protected accountOf(id: string): Account | undefined {
    const row = this.accounts.get(id);
    return row === undefined ? undefined : rowToAccount(row);
  }

  keyByHash(hash: string): Promise<KeyRecord | undefined> {
    return Promise.resolve(this.keyRecord(hash));
  }

  keyById(id: string): Promise<KeyRecord | undefined> {
    return Promise.resolve(this.keyRecordById(id));
  }

  allKeys(): Promise<KeyRecord[]> {
    const list: KeyRecord[] = [];
    for (const { value } of this.keys.getRange()) list.push(rowToKey(value));
    return Promise.resolve(list.sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id)));
  }

  account(id: string): Promise<Account | undefined> {
    return Promise.resolve(this.accountOf(id));
  }

  /** One environment holds every account: any key may draw on any of them. */
  fitsAccount(): boolean {
    return true;
  }

  /** Creates a key with a fresh account holding `amount`. */
  createKey(fields: NewKey, now = Date.now()): Promise<KeyRecord> {
    const record: KeyRecord = {
      id: newId('key'),
      hash: fields.hash,
      prefix: fields.prefix,
      name: fields.name,
      mode: fields.mode,
      models: fields.models,
      rpm: fields.rpm,
      concurrency: fields.concurrency,
      expiresAt: fields.expiresAt,
      status: 'active',
      createdAt: now,
      account: newId('acct'),
      rotatedFrom: null,
    };
    const account: Account = fields.mode === 'credit'
      ? { mode: 'credit', balanceNano: fields.amount, budgetTokens: 0, usedTokens: 0, held: 0 }
      : { mode: 'token', balanceNano: 0, budgetTokens: fields.amount, usedTokens: 0, held: 0 };
    return this.writeNow(() => {
      if (this.keys.get(record.hash) !== undefined) throw new Error('a key with this secret already exists');
      this.accounts.put(record.account, accountToRow(account));
      this.keys.put(record.hash, keyToRow(record));
      this.keyIds.put(record.id, record.hash);
      return record;
    });
  }

  /** A new key with its own id and the same settings, drawing on the same account. */
  rotateKey(oldId: string, hash: string, prefix: string, now = Date.now()): Promise<KeyRecord | undefined> {
    return this.writeNow(() => {
      const old = this.keyRecordById(oldId);
      if (!old) return undefined;
      const record: KeyRecord = { ...old, id: newId('key'), hash, prefix, status: 'active', createdAt: now, rotatedFrom: old.id };
      this.keys.put(hash, keyToRow(record));
      this.keyIds.put(record.id, hash);
      return record;
    });
  }

  /** Applies `change` to a key atomically; resolves to the new record (undefined if no such key). */
  updateKey(id: string, change: (key: KeyRecord) => KeyRecord): Promise<KeyRecord | undefined> {
    return this.writeNow(() => {
      const key = this.keyRecordById(id);
      if (!key) return undefined;
      const next = change(key);
      this.keys.put(key.hash, keyToRow(next));
      return next;
    });
  }

  /** Adds nUSD (credit) or tokens (token) to an account, unless the sum would pass MAX_ACCOUNT_AMOUNT. */
  topUp(accountId: string, amount: number): Promise<{ added: boolean; account: Account } | undefined> {
    return this.writeNow(() => {
      const acct = this.accountOf(accountId);
      if (!acct) return undefined;
      if (passesMaxAmount(acct.mode === 'credit' ? acct.balanceNano : acct.budgetTokens, amount)) {
        // Nothing changes, so nothing is audited: the pending entry is dropped.
        this.pendingAudit.take();
        return { added: false, account: acct };
      }
      const next = acct.mode === 'credit'
        ? { ...acct, balanceNano: acct.balanceNano + amount }
        : { ...acct, budgetTokens: acct.budgetTokens + amount };
      this.accounts.put(accountId, accountToRow(next));
      return { added: true, account: next };
    });
  }

  modelSwitch(id: string): Promise<boolean | undefined> {
    return Promise.resolve(this.modelSwitches.get(id));
  }

  setModelSwitch(id: string, enabled: boolean): Promise<boolean> {
    return this.writeNow(() => {
      void this.modelSwitches.put(id, enabled);
      return true;
    });
  }

  protected auditDb: Database<AuditRow, [number, string]> | null = null;

  protected readonly pendingAudit = new PendingAudit();

  protected auditSeq = 0;

  protected get audit(): Database<AuditRow, [number, string]> {
    return (this.auditDb ??= this.root.openDB({ name: 'audit' }));
  }

  /** Runs an issuer change (one of the methods above) and records `entry(result)` with it. */
  audited<T>(entry: (result: T) => AuditEntry | undefined, change: () => Promise<T>): Promise<T> {
    return this.pendingAudit.around(entry, change);
  }

  /** Inside writeNow's transaction: the pending audit entry for this change's result. */
  protected auditedResult<T>(result: T): T {
    const e = this.pendingAudit.take()?.(result);
    if (e !== undefined) {
      this.audit.put([e.at, `${process.pid.toString(36)}.${(this.auditSeq++).toString(36)}`], auditToRow(e));
    }
    return result;
  }

  /** Audit entries, oldest first; only those of `keyId` when given. */
  auditTrail(keyId?: string, limit = 10_000): Promise<AuditEntry[]> {
    const list: AuditEntry[] = [];
    for (const { value: r } of this.audit.getRange()) {
      if (keyId !== undefined && auditKeyId(r) !== keyId) continue;
      list.push(rowToAudit(r));
      if (list.length === limit) break;
    }
    return Promise.resolve(list);
  }
}


