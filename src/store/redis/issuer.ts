import { MAX_ACCOUNT_AMOUNT } from '../../domain/rules.js';
import type { Account, AuditEntry, KeyRecord, NewKey } from '../../domain/types.js';
import { PendingAudit } from '../audit.js';
import { newId } from '../common.js';
import { RedisConnection } from './connection.js';
import { accountName, auditName, IDS, keyName, MODEL_AUDIT, slotOf, SWITCHES } from './names.js';

/** What `tollgate keys|models|audit` and the admin API change and read (IssuerStore). */
export class RedisIssuer extends RedisConnection {
  protected readonly pendingAudit = new PendingAudit();

  protected auditSeq = 0;

  async keyByHash(hash: string): Promise<KeyRecord | undefined> {
    const raw = await this.client.get(keyName(hash));
    return raw === null ? undefined : (JSON.parse(raw) as KeyRecord);
  }

  async keyById(id: string): Promise<KeyRecord | undefined> {
    const hash = await this.client.hget(IDS, id);
    return hash === null ? undefined : this.keyByHash(hash);
  }

  async allKeys(): Promise<KeyRecord[]> {
    const hashes = Object.values(await this.client.hgetall(IDS));
    const keys = (await Promise.all(hashes.map((h) => this.keyByHash(h)))).filter((k): k is KeyRecord => k !== undefined);
    return keys.sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
  }

  async account(id: string): Promise<Account | undefined> {
    const a = await this.client.hgetall(accountName(id));
    if (a.m === undefined) return undefined;
    return { mode: a.m === '0' ? 'credit' : 'token', balanceNano: Number(a.bal), budgetTokens: Number(a.bud), usedTokens: Number(a.used), held: Number(a.held ?? 0) };
  }

  fitsAccount(account: string, hash: string): boolean {
    return slotOf(account) === slotOf(hash);
  }

  async createKey(fields: NewKey, now = Date.now()): Promise<KeyRecord> {
    const record: KeyRecord = {
      id: newId('key'), hash: fields.hash, prefix: fields.prefix, name: fields.name, mode: fields.mode, models: fields.models, rpm: fields.rpm,
      concurrency: fields.concurrency, expiresAt: fields.expiresAt, status: 'active', createdAt: now,
      // In the slot of the key's hash, so a call's every check runs on one shard.
      account: accountIdInSlot(slotOf(fields.hash)), rotatedFrom: null,
    };
    const audit = this.takeAudit(record);
    // The index first: an index entry whose key was never written is skipped; a key without one would be lost.
    await this.client.hset(IDS, record.id, record.hash);
    const created = await this.s.tgCreate(keyName(record.hash), accountName(record.account), auditName(record.hash), JSON.stringify(record), audit, fields.mode === 'credit' ? '0' : '1', String(fields.amount));
    if (created !== 1) {
      await this.client.hdel(IDS, record.id);
      throw new Error('a key with this secret already exists');
    }
    return record;
  }

  async rotateKey(oldId: string, hash: string, prefix: string, now = Date.now()): Promise<KeyRecord | undefined> {
    const old = await this.keyById(oldId);
    if (!old) {
      this.takeAudit(undefined);
      return undefined;
    }
    const record: KeyRecord = { ...old, id: newId('key'), hash, prefix, status: 'active', createdAt: now, rotatedFrom: old.id };
    const audit = this.takeAudit(record);
    await this.client.hset(IDS, record.id, hash);
    const created = await this.s.tgCreate(keyName(hash), accountName(record.account), auditName(hash), JSON.stringify(record), audit, '', '0');
    if (created !== 1) throw new Error('a key with this secret already exists');
    return record;
  }

  async updateKey(id: string, change: (key: KeyRecord) => KeyRecord): Promise<KeyRecord | undefined> {
    const make = this.pendingAudit.take();
    const hash = await this.client.hget(IDS, id);
    if (hash === null) return undefined;
    for (;;) {
      const raw = await this.client.get(keyName(hash));
      if (raw === null) return undefined;
      const next = change(JSON.parse(raw) as KeyRecord);
      const audit = this.auditJson(make?.(next));
      if ((await this.s.tgUpdate(keyName(hash), auditName(hash), raw, JSON.stringify(next), audit)) === 1) return next;
      // Another change came first: apply this one to the record as it is now.
    }
  }

  /** Adds to an account in one script, which refuses (writing nothing, not even the entry) a sum past MAX_ACCOUNT_AMOUNT. */
  async topUp(accountId: string, amount: number): Promise<{ added: boolean; account: Account } | undefined> {
    const e = this.pendingAudit.take()?.(undefined);
    // The entry goes to the audit trail of the key it names (in the account's slot).
    const hash = e?.keyId ? await this.client.hget(IDS, e.keyId) : null;
    const auditList = hash === null ? auditName(accountId) : auditName(hash);
    const done = await this.s.tgTopup(accountName(accountId), auditList, String(amount), this.auditJson(e), String(MAX_ACCOUNT_AMOUNT));
    const account = done === 0 ? undefined : await this.account(accountId);
    return account === undefined ? undefined : { added: done === 1, account };
  }

  async modelSwitch(id: string): Promise<boolean | undefined> {
    const v = await this.client.hget(SWITCHES, id);
    return v === null ? undefined : v === '1';
  }

  async setModelSwitch(id: string, enabled: boolean): Promise<boolean> {
    await this.s.tgSwitch(SWITCHES, MODEL_AUDIT, id, enabled ? '1' : '0', this.takeAudit(true));
    return true;
  }

  audited<T>(entry: (result: T) => AuditEntry | undefined, change: () => Promise<T>): Promise<T> {
    return this.pendingAudit.around(entry, change);
  }

  /** The pending audit entry for this change's result, as the JSON its script stores ('' for none). */
  protected takeAudit(result: unknown): string {
    return this.auditJson(this.pendingAudit.take()?.(result));
  }

  protected auditJson(e: AuditEntry | undefined): string {
    if (e === undefined) return '';
    return JSON.stringify({ ...e, seq: `${String(e.at).padStart(15, '0')}.${process.pid.toString(36)}.${(this.auditSeq++).toString(36).padStart(6, '0')}` });
  }

  async auditTrail(keyId?: string, limit = 10_000): Promise<AuditEntry[]> {
    let lists: string[];
    if (keyId !== undefined) {
      const hash = await this.client.hget(IDS, keyId);
      lists = hash === null ? [] : [auditName(hash)];
    } else {
      const hashes = Object.values(await this.client.hgetall(IDS));
      lists = [MODEL_AUDIT, ...hashes.map(auditName)];
    }
    const entries = (await Promise.all(lists.map((l) => this.client.lrange(l, 0, -1)))).flat().map((j) => JSON.parse(j) as AuditEntry & { seq: string });
    entries.sort((a, b) => (a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0));
    return entries.slice(0, limit).map(({ seq: _seq, ...e }) => e);
  }

  /** Durability is Redis's own (appendonly, appendfsync: see the README); nothing to flush here. */
  flushToDisk(): Promise<void> {
    return Promise.resolve();
  }
}


/** A fresh account id in `slot` (≈ 16,384 random draws of a few µs each, once per key created). */
export function accountIdInSlot(slot: number): string {
  for (;;) {
    const id = newId('acct');
    if (slotOf(id) === slot) return id;
  }
}
