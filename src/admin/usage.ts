import type { UsageStore } from '../domain/interfaces.js';
import type { KeyRecord, UsageRecord } from '../domain/types.js';
import { formatUsd } from '../money.js';
import { dailyRows, dayText, requestView, type DayRange } from '../usage/api.js';

export { dailyRows, dayText, type DayRange };

/**
 * Usage reading for the issuer, across keys: one key's records and daily totals over a range
 * of UTC days, and totals per key over a range of days. JSON, or CSV for spreadsheets.
 */

const DAY_MS = 86_400_000;
export const MAX_RECORDS = 10_000;

/** 'YYYY-MM-DD' → epoch ms of that UTC midnight; undefined when it is not a real date. */
export function dayStart(text: string): number | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (m === null) return undefined;
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  return new Date(ms).toISOString().slice(0, 10) === text ? ms : undefined;
}

/** A key's records in the range, oldest first (at most `limit`; `truncated` says more exist). */
export async function recordRows(store: UsageStore, key: KeyRecord, range: DayRange, limit: number): Promise<{ rows: Record<string, unknown>[]; truncated: boolean }> {
  const records = await store.usageBetween(key, range.fromMs, range.toMs + DAY_MS, limit + 1);
  const truncated = records.length > limit;
  if (truncated) records.length = limit;
  return { rows: records.map(operatorView), truncated };
}

/** A record as the operator sees it: the tenant's view, and the name of the provider credential that answered. */
function operatorView(r: UsageRecord): Record<string, unknown> {
  const view = requestView(r);
  view.credential = r.credential;
  return view;
}

/** Totals per key over the range: every key, those without calls at zero. */
export async function totalsPerKey(store: UsageStore, range: DayRange): Promise<Record<string, unknown>[]> {
  return Promise.all((await store.allKeys()).map(async (key) => {
    let requests = 0;
    let costNano = 0;
    let tokens = 0;
    for (const t of (await store.dailyOf(key, range.from, range.to)).values()) {
      requests += t.requests;
      costNano += t.costNano;
      tokens += t.tokens;
    }
    return { id: key.id, prefix: key.prefix, name: key.name, mode: key.mode, requests, costUsd: formatUsd(costNano), costNanoUsd: costNano, tokens };
  }));
}

/** RFC 4180 CSV of flat rows (nested values, like byModel, are left out). */
export function toCsv(columns: readonly string[], rows: Record<string, unknown>[]): string {
  return `${[columns.join(','), ...rows.map((r) => columns.map((c) => csvCell(r[c])).join(','))].join('\r\n')}\r\n`;
}

/**
 * One CSV cell. Text a spreadsheet would run as a formula — beginning with `=`, `+`, `-`, `@`, a
 * tab or a carriage return (OWASP's CSV injection rule) — gets a leading `'`, so key names and
 * model ids, which clients and key holders choose, are shown and never run. Numbers stay numbers,
 * negative ones included, and so does text that is a plain decimal number (an amount).
 */
function csvCell(v: unknown): string {
  if (v === null || v === undefined) return '';
  let s = String(v);
  if (typeof v === 'string' && FORMULA_START.test(s) && !DECIMAL.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

const FORMULA_START = /^[=+\-@\t\r]/;
const DECIMAL = /^[+-]?\d+(\.\d+)?$/;

export const RECORD_COLUMNS = ['at', 'requestId', 'endpoint', 'model', 'stream', 'status', 'inputTokens', 'outputTokens', 'cachedInputTokens', 'cacheWriteTokens', 'reasoningTokens', 'costUsd', 'costNanoUsd', 'tokensCharged', 'error', 'estimated', 'clientGone',
  'estimateReason', 'cacheWrite1hTokens', 'audioInputTokens', 'imageInputTokens', 'audioOutputTokens', 'imageOutputTokens', 'serviceTier', 'speed', 'inferenceGeo', 'longContext', 'worstCase', 'attempts', 'credential'] as const;
export const DAILY_COLUMNS = ['day', 'requests', 'costUsd', 'costNanoUsd', 'tokens'] as const;
export const TOTALS_COLUMNS = ['id', 'prefix', 'name', 'mode', 'requests', 'costUsd', 'costNanoUsd', 'tokens'] as const;
