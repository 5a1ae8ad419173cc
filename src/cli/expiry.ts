import { UsageError } from './common.js';

const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/**
 * An ISO-8601 date or date-time → epoch ms: the last instant at which the key still works (it is
 * expired once the clock is past it). A bare date means the end of that day, UTC: 23:59:59.999,
 * so the date shown back is the one given. A date-time without an offset is taken as UTC.
 */
export function parseExpiry(text: string): number {
  const m = ISO.exec(text.trim());
  if (!m) throw new UsageError(`--expires needs an ISO-8601 date or date-time (e.g. 2027-01-31 or 2027-01-31T18:00:00Z), got '${text}'`);
  let ms: number;
  if (m[4] === undefined) {
    ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]) + 1) - 1;
    const check = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
    if (check.getUTCMonth() !== Number(m[2]) - 1 || check.getUTCDate() !== Number(m[3])) ms = NaN;
  } else {
    ms = Date.parse(m[8] === undefined ? `${text.trim()}Z` : text.trim());
  }
  if (!Number.isFinite(ms)) throw new UsageError(`--expires: '${text}' is not a real date`);
  return ms;
}

export function warnIfPast(expiresAt: number | null): void {
  if (expiresAt !== null && expiresAt < Date.now()) {
    process.stderr.write(`warning: the expiry ${new Date(expiresAt).toISOString()} is in the past; the key is expired\n`);
  }
}
