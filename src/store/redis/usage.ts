import type { DailyTotals, KeyRecord, UsageRecord } from '../../domain/types.js';
import { rowToUsage } from '../rows.js';
import { RedisIssuer } from './issuer.js';
import { dayName, DAY_MS, IDS, member, usageIndex, usageRows } from './names.js';

/** What the usage API, the admin API's usage views and the retention sweep read (UsageStore). */
export class RedisUsage extends RedisIssuer {
  async usageOf(key: KeyRecord, limit: number, before?: [number, string]): Promise<UsageRecord[]> {
    const max = before ? `(${member(before[0], before[1])}` : '+';
    const members = await this.client.zrevrangebylex(usageIndex(key.hash), max, '-', 'LIMIT', 0, limit);
    return this.rows(key.hash, members);
  }

  async usageBetween(key: KeyRecord, from: number, to: number, limit: number): Promise<UsageRecord[]> {
    const members = await this.client.zrangebylex(usageIndex(key.hash), `[${String(from).padStart(15, '0')}`, `(${String(to).padStart(15, '0')}`, 'LIMIT', 0, limit);
    return this.rows(key.hash, members);
  }

  protected async rows(hash: string, members: string[]): Promise<UsageRecord[]> {
    if (members.length === 0) return [];
    const rows = await this.client.hmget(usageRows(hash), ...members);
    return rows.filter((r): r is string => r !== null).map((r) => rowToUsage(JSON.parse(r)));
  }

  async dailyOf(key: KeyRecord, fromDay: string, toDay: string): Promise<Map<string, DailyTotals>> {
    const from = Math.floor(Date.parse(`${fromDay}T00:00:00Z`) / DAY_MS);
    const to = Math.floor(Date.parse(`${toDay}T00:00:00Z`) / DAY_MS);
    const days = new Map<string, DailyTotals>();
    const hashes = await Promise.all(Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => this.client.hgetall(dayName(key.hash, (from + i) * DAY_MS))));
    hashes.forEach((fields, i) => {
      const names = Object.keys(fields);
      if (names.length === 0) return;
      const totals: DailyTotals = { requests: 0, costNano: 0, tokens: 0, byModel: {} };
      for (const name of names) {
        const model = name.slice(2);
        const n = Number(fields[name]);
        const m = (totals.byModel[model] ??= { requests: 0, costNano: 0, tokens: 0 });
        if (name.startsWith('r:')) {
          m.requests = n;
          totals.requests += n;
        } else if (name.startsWith('c:')) {
          m.costNano = n;
          totals.costNano += n;
        } else {
          m.tokens = n;
          totals.tokens += n;
        }
      }
      days.set(new Date((from + i) * DAY_MS).toISOString().slice(0, 10), totals);
    });
    return days;
  }

  async deleteUsageBefore(before: number, limit: number, fromKeyId: string): Promise<{ deleted: number; next: string | null }> {
    const ids = await this.client.hgetall(IDS);
    const order = Object.keys(ids).filter((id) => id >= fromKeyId).sort();
    let deleted = 0;
    for (const id of order) {
      if (deleted >= limit) return { deleted, next: id };
      const hash = ids[id]!;
      const doomed = await this.client.zrangebylex(usageIndex(hash), '-', `(${String(before).padStart(15, '0')}`, 'LIMIT', 0, limit - deleted);
      if (doomed.length > 0) deleted += Number(await this.s.tgForget(usageIndex(hash), usageRows(hash), ...doomed));
      if (deleted >= limit) return { deleted, next: id }; // it may hold more old records
    }
    return { deleted, next: null };
  }
}
