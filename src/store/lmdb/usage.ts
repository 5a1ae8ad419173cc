import type { Account, AuditEntry, DailyTotals, KeyRecord, ResponseCursor, UsageRecord } from '../../domain/types.js';
import { responseRowAt, rowToAccount, rowToAudit, rowToCall, rowToDaily, rowToKey, rowToResponse, rowToUsage } from '../rows.js';
import type { StoreDump } from '../dump.js';
import { LmdbIssuer } from './issuer.js';

/** What the usage API, the admin API's usage views, the retention sweep and `store migrate` read (UsageStore). */
export class LmdbUsage extends LmdbIssuer {
  /** A key's usage records, newest first; `before` is an exclusive [at, requestId] cursor. */
  usageOf(key: KeyRecord, limit: number, before?: [number, string]): Promise<UsageRecord[]> {
    const keyId = key.id;
    const start: [string, number, string] = before ? [keyId, before[0], before[1]] : [keyId, Number.MAX_SAFE_INTEGER, ''];
    const list: UsageRecord[] = [];
    for (const { key, value } of this.usage.getRange({ start, end: [keyId, -1, ''], reverse: true, limit: limit + 1 })) {
      if (before && key[1] === before[0] && key[2] === before[1]) continue;
      list.push(rowToUsage(value));
      if (list.length === limit) break;
    }
    return Promise.resolve(list);
  }

  /** Daily totals of a key from `fromDay` to `toDay` inclusive ('YYYY-MM-DD'), with the split by model. */
  dailyOf(key: KeyRecord, fromDay: string, toDay: string): Promise<Map<string, DailyTotals>> {
    const keyId = key.id;
    const days = new Map<string, DailyTotals>();
    for (const { key, value } of this.daily.getRange({ start: [keyId, fromDay, ''], end: [keyId, `${toDay}~`, ''] })) {
      const [, day, model] = key;
      let totals = days.get(day);
      if (totals === undefined) days.set(day, (totals = { requests: 0, costNano: 0, tokens: 0, byModel: {} }));
      const counts = rowToDaily(value);
      totals.requests += counts.requests;
      totals.costNano += counts.costNano;
      totals.tokens += counts.tokens;
      totals.byModel[model] = counts;
    }
    return Promise.resolve(days);
  }

  /** A key's usage records with `from <= at < to`, oldest first, at most `limit`. */
  usageBetween(key: KeyRecord, from: number, to: number, limit: number): Promise<UsageRecord[]> {
    const keyId = key.id;
    const list: UsageRecord[] = [];
    for (const { value } of this.usage.getRange({ start: [keyId, from, ''], end: [keyId, to, ''], limit })) list.push(rowToUsage(value));
    return Promise.resolve(list);
  }

  /**
   * Retention: deletes up to `limit` usage records older than `before` (epoch ms), visiting
   * keys in id order from `fromKeyId`; returns how many went and the key id to go on from
   * (null once every key was visited). Daily totals are kept. One small synchronous
   * transaction per call, so a sweep interleaves with the request path's group commits
   * (cost per batch: bench/retention.ts).
   */
  deleteUsageBefore(before: number, limit: number, fromKeyId: string): Promise<{ deleted: number; next: string | null }> {
    const doomed: [string, number, string][] = [];
    let next: string | null = null;
    for (const keyId of this.keyIds.getKeys({ start: fromKeyId })) {
      if (doomed.length >= limit) {
        next = keyId;
        break;
      }
      for (const key of this.usage.getKeys({ start: [keyId, -1, ''], end: [keyId, before, ''], limit: limit - doomed.length })) doomed.push(key);
      if (doomed.length >= limit) {
        next = keyId; // it may hold more old records
        break;
      }
    }
    if (doomed.length > 0) {
      this.root.transactionSync(() => {
        for (const key of doomed) this.usage.removeSync(key);
      });
    }
    return Promise.resolve({ deleted: doomed.length, next });
  }

  /**
   * Retention of owner records (storage.responseRetentionDays): visits up to `limit` of them in
   * key order from `from`, and deletes those made before `before` in one small synchronous
   * transaction, as deleteUsageBefore does. Owner records have no index by time: a sweep reads
   * them all, a row of about a microsecond each (cost: bench/response-owners.ts).
   */
  deleteResponsesBefore(before: number, limit: number, from: ResponseCursor | null): Promise<{ deleted: number; next: ResponseCursor | null }> {
    const doomed: [string, string][] = [];
    let next: ResponseCursor | null = null;
    let visited = 0;
    for (const { key, value } of this.responses.getRange(from === null ? {} : { start: [from[0], from[1]] })) {
      if (visited++ === limit) {
        next = key;
        break;
      }
      if (responseRowAt(value) < before) doomed.push(key);
    }
    if (doomed.length > 0) {
      this.root.transactionSync(() => {
        for (const key of doomed) this.responses.removeSync(key);
      });
    }
    return Promise.resolve({ deleted: doomed.length, next });
  }

  /** The calls in flight and their holds, for the usage views. */
  callsInFlight(keyId: string): number {
    return this.calls.getKeysCount({ start: [keyId, ''], end: [keyId, '\uffff'] });
  }

  /**
   * Everything the store holds, for `tollgate store migrate` (./migrate.ts): read in one read
   * transaction's view, so the copy is of one moment (the server should be stopped anyway).
   */
  dump(): StoreDump {
    const keys: KeyRecord[] = [];
    for (const { value } of this.keys.getRange()) keys.push(rowToKey(value));
    const accounts: Array<[string, Account]> = [];
    for (const { key, value } of this.accounts.getRange()) accounts.push([key, rowToAccount(value)]);
    const calls: StoreDump['calls'] = [];
    for (const { key, value } of this.calls.getRange()) calls.push({ keyId: key[0], callId: key[1], ...rowToCall(value) });
    const usage: Array<[string, UsageRecord]> = [];
    for (const { key, value } of this.usage.getRange()) usage.push([key[0], rowToUsage(value)]);
    const daily: StoreDump['daily'] = [];
    for (const { key, value } of this.daily.getRange()) daily.push({ keyId: key[0], day: key[1], model: key[2], ...rowToDaily(value) });
    const switches: Array<[string, boolean]> = [];
    for (const { key, value } of this.modelSwitches.getRange()) switches.push([key, value]);
    const audit: AuditEntry[] = [];
    for (const { value } of this.audit.getRange()) audit.push(rowToAudit(value));
    const responses: StoreDump['responses'] = [];
    for (const { key, value } of this.responses.getRange()) responses.push({ account: key[0], id: key[1], ...rowToResponse(value) });
    return { keys, accounts, calls, usage, daily, switches, audit, responses };
  }
}
