import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { open, type Database, type RootDatabase } from 'lmdb';
import type { Account, DailyTotals, KeyMode, KeyRecord, UsageRecord } from './types.js';

const WINDOW_MS = 60_000;

export interface NewKey {
  hash: string;
  prefix: string;
  name: string | null;
  mode: KeyMode;
  models: string[] | null;
  rpm: number | null;
  expiresAt: number | null;
  /** Opening balance (nUSD) for credit keys, budget (tokens) for token keys. */
  amount: number;
}

/** The charge a finished request makes on its key's account. */
export interface Charge { nano: number; tokens: number }

/**
 * The one interface to persistent state: an LMDB environment under the data directory.
 *
 * Reads are synchronous and see the latest committed state as of the current event turn
 * (lmdb-js renews its read transaction every turn), so a change written by `tollgate keys …` in
 * another process is obeyed on the next request without any cache to invalidate.
 * Every read-modify-write runs inside `transaction()`, which holds LMDB's single write lock
 * across processes: exact under cluster workers and concurrent CLI commands.
 */
export class Store {
  private constructor(
    private readonly root: RootDatabase,
    /** sha256(secret) → KeyRecord */
    private readonly keys: Database<KeyRecord, string>,
    /** key id → sha256(secret) */
    private readonly keyIds: Database<string, string>,
    private readonly accounts: Database<Account, string>,
    /** key id → [window start (ms), requests in it] */
    private readonly rate: Database<[number, number], string>,
    /** model id → enabled (run-time override of the config file) */
    private readonly modelSwitches: Database<boolean, string>,
    /** [key id, at, request id] → UsageRecord */
    private readonly usage: Database<UsageRecord, [string, number, string]>,
    /** [key id, 'YYYY-MM-DD'] → DailyTotals */
    private readonly daily: Database<DailyTotals, [string, string]>,
  ) {}

  static open(dataDir: string): Store {
    mkdirSync(dataDir, { recursive: true });
    const root = open({ path: dataDir, maxDbs: 16 });
    return new Store(
      root,
      root.openDB({ name: 'keys' }),
      root.openDB({ name: 'key-ids' }),
      root.openDB({ name: 'accounts' }),
      root.openDB({ name: 'rate' }),
      root.openDB({ name: 'model-switches' }),
      root.openDB({ name: 'usage' }),
      root.openDB({ name: 'daily' }),
    );
  }

  close(): Promise<void> {
    return this.root.close();
  }

  // ── keys ────────────────────────────────────────────────────────────────

  keyByHash(hash: string): KeyRecord | undefined {
    return this.keys.get(hash);
  }

  keyById(id: string): KeyRecord | undefined {
    const hash = this.keyIds.get(id);
    return hash === undefined ? undefined : this.keys.get(hash);
  }

  allKeys(): KeyRecord[] {
    const list: KeyRecord[] = [];
    for (const { value } of this.keys.getRange()) list.push(value);
    return list.sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
  }

  account(id: string): Account | undefined {
    return this.accounts.get(id);
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
      expiresAt: fields.expiresAt,
      status: 'active',
      createdAt: now,
      account: newId('acct'),
      rotatedFrom: null,
    };
    const account: Account = fields.mode === 'credit'
      ? { mode: 'credit', balanceNano: fields.amount, budgetTokens: 0, usedTokens: 0 }
      : { mode: 'token', balanceNano: 0, budgetTokens: fields.amount, usedTokens: 0 };
    return this.root.transaction(() => {
      if (this.keys.get(record.hash) !== undefined) throw new Error('a key with this secret already exists');
      this.accounts.put(record.account, account);
      this.keys.put(record.hash, record);
      this.keyIds.put(record.id, record.hash);
      return record;
    });
  }

  /** A new key with its own id and the same settings, drawing on the same account. */
  rotateKey(oldId: string, hash: string, prefix: string, now = Date.now()): Promise<KeyRecord | undefined> {
    return this.root.transaction(() => {
      const old = this.keyById(oldId);
      if (!old) return undefined;
      const record: KeyRecord = { ...old, id: newId('key'), hash, prefix, status: 'active', createdAt: now, rotatedFrom: old.id };
      this.keys.put(hash, record);
      this.keyIds.put(record.id, hash);
      return record;
    });
  }

  /** Applies `change` to a key atomically; resolves to the new record (undefined if no such key). */
  updateKey(id: string, change: (key: KeyRecord) => KeyRecord): Promise<KeyRecord | undefined> {
    return this.root.transaction(() => {
      const key = this.keyById(id);
      if (!key) return undefined;
      const next = change(key);
      this.keys.put(key.hash, next);
      return next;
    });
  }

  /** Adds nUSD (credit) or tokens (token) to an account. */
  topUp(accountId: string, amount: number): Promise<Account | undefined> {
    return this.root.transaction(() => {
      const acct = this.accounts.get(accountId);
      if (!acct) return undefined;
      const next = acct.mode === 'credit'
        ? { ...acct, balanceNano: acct.balanceNano + amount }
        : { ...acct, budgetTokens: acct.budgetTokens + amount };
      this.accounts.put(accountId, next);
      return next;
    });
  }

  // ── rate limit ──────────────────────────────────────────────────────────

  /**
   * Counts one request in the key's fixed 60-second window (which starts with the first
   * request after the previous one ended). Resolves to 0 when admitted, else to the seconds
   * left in the window (for `retry-after`).
   *
   * It resolves as soon as the transaction callback has run under LMDB's write lock, not
   * after the commit: the decision is already exact across processes then, and a crash can
   * only lose a count, which errs towards admitting. Waiting for the commit would add a
   * commit's latency (≈ 77–330 µs measured, architecture.md) to every rate-limited request.
   */
  admit(keyId: string, rpm: number, now: number): Promise<number> {
    return new Promise((resolve, reject) => {
      this.root.transaction(() => {
        const window = this.rate.get(keyId);
        if (window === undefined || now >= window[0] + WINDOW_MS) {
          this.rate.put(keyId, [now, 1]);
          resolve(0);
        } else if (window[1] < rpm) {
          this.rate.put(keyId, [window[0], window[1] + 1]);
          resolve(0);
        } else {
          resolve(Math.max(1, Math.ceil((window[0] + WINDOW_MS - now) / 1000)));
        }
      }).catch(reject);
    });
  }

  // ── models ──────────────────────────────────────────────────────────────

  modelSwitch(id: string): boolean | undefined {
    return this.modelSwitches.get(id);
  }

  setModelSwitch(id: string, enabled: boolean): Promise<boolean> {
    return this.modelSwitches.put(id, enabled);
  }

  // ── usage ───────────────────────────────────────────────────────────────

  /**
   * Charges the account and stores the usage record and the day's totals in one transaction.
   * Resolves once committed, so the caller can hold back the response's last byte until then.
   */
  record(key: KeyRecord, usage: UsageRecord, charge: Charge): Promise<void> {
    return this.root.transaction(() => {
      if (charge.nano !== 0 || charge.tokens !== 0) {
        const acct = this.accounts.get(key.account);
        if (acct) {
          this.accounts.put(key.account, acct.mode === 'credit'
            ? { ...acct, balanceNano: acct.balanceNano - charge.nano }
            : { ...acct, usedTokens: acct.usedTokens + charge.tokens });
        }
      }
      this.usage.put([key.id, usage.at, usage.requestId], usage);
      const day = new Date(usage.at).toISOString().slice(0, 10);
      const dayKey: [string, string] = [key.id, day];
      const totals = this.daily.get(dayKey) ?? { requests: 0, costNano: 0, tokens: 0, byModel: {} };
      const perModel = totals.byModel[usage.model] ?? { requests: 0, costNano: 0, tokens: 0 };
      // Tokens are counted for both kinds of key (what was used); cost is what was charged.
      totals.requests += 1;
      totals.costNano += charge.nano;
      totals.tokens += usage.tokensCharged;
      perModel.requests += 1;
      perModel.costNano += charge.nano;
      perModel.tokens += usage.tokensCharged;
      totals.byModel[usage.model] = perModel;
      this.daily.put(dayKey, totals);
    }) as Promise<void>;
  }

  /** A key's usage records, newest first; `before` is an exclusive [at, requestId] cursor. */
  usageOf(keyId: string, limit: number, before?: [number, string]): UsageRecord[] {
    const start: [string, number, string] = before ? [keyId, before[0], before[1]] : [keyId, Number.MAX_SAFE_INTEGER, ''];
    const list: UsageRecord[] = [];
    for (const { key, value } of this.usage.getRange({ start, end: [keyId, -1, ''], reverse: true, limit: limit + 1 })) {
      if (before && key[1] === before[0] && key[2] === before[1]) continue;
      list.push(value);
      if (list.length === limit) break;
    }
    return list;
  }

  /** Daily totals of a key from `fromDay` to `toDay` inclusive ('YYYY-MM-DD'). */
  dailyOf(keyId: string, fromDay: string, toDay: string): Map<string, DailyTotals> {
    const days = new Map<string, DailyTotals>();
    for (const { key, value } of this.daily.getRange({ start: [keyId, fromDay], end: [keyId, `${toDay}~`] })) days.set(key[1], value);
    return days;
  }
}

function newId(kind: string): string {
  return `${kind}_${randomBytes(8).toString('hex')}`;
}
