import { IssuerError } from '../issuer/errors.js';

const DAY_MS = 86_400_000;
const EXAMPLES = 'e.g. 2027-01-31, 2027-01-31T18:00:00Z, 2027-01-31T18:00+05:30';

/**
 * An ISO-8601 date or date-time → epoch ms: the last instant at which the key still works (it is
 * expired once the clock is past it).
 *
 * Dates: calendar (`2027-01-31`, `20270131`), ordinal (`2027-031`, `2027031`) and week
 * (`2027-W05-7`, `2027W057`) dates, and the reduced forms `2027-01` (a month) and `2027-W05` (a
 * week). A date alone means the end of that day (month, week), UTC: its last millisecond, so the
 * date shown back is the one given.
 *
 * Date-times: the date, `T` (or a space), then `hh`, `hh:mm` or `hh:mm:ss` (or `hhmm`,
 * `hhmmss`), the last part with an optional decimal fraction (`.` or `,`), `24:00` for the end of
 * the day, and an offset `Z`, `±hh`, `±hh:mm` or `±hhmm`; without one, UTC.
 *
 * Every field is range-checked: an impossible date or time is refused, never rolled over.
 */
export function parseExpiry(text: string): number {
  const input = text.trim();
  const sep = input.search(/[T ]/);
  const datePart = sep === -1 ? input : input.slice(0, sep);
  const date = parseDate(datePart, text);
  if (sep === -1) return date.start + date.days * DAY_MS - 1;
  if (date.days !== 1) throw bad(text, 'a time needs a full date (year, month and day), not a month or a week');
  return date.start + parseTimeOfDay(input.slice(sep + 1), text);
}

// ── dates ───────────────────────────────────────────────────────────────────

/** The UTC start of the date (epoch ms) and how many days it spans (1, a week, a month). */
function parseDate(s: string, text: string): { start: number; days: number } {
  let m: RegExpExecArray | null;
  if ((m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s)) || (m = /^(\d{4})(\d{2})(\d{2})$/.exec(s))) {
    return { start: calendarDay(Number(m[1]), Number(m[2]), Number(m[3]), text), days: 1 };
  }
  if ((m = /^(\d{4})-(\d{2})$/.exec(s))) {
    const [year, month] = [Number(m[1]), Number(m[2])];
    if (month < 1 || month > 12) throw bad(text, `there is no month ${m[2]}`);
    return { start: Date.UTC(year, month - 1, 1), days: daysInMonth(year, month) };
  }
  if ((m = /^(\d{4})-?W(\d{2})(?:-?([1-7]))?$/.exec(s))) {
    const [year, week] = [Number(m[1]), Number(m[2])];
    if (week < 1 || week > isoWeeksIn(year)) throw bad(text, `${year} has no ISO week ${m[2]}`);
    const monday = isoWeekOneMonday(year) + (week - 1) * 7 * DAY_MS;
    return m[3] === undefined ? { start: monday, days: 7 } : { start: monday + (Number(m[3]) - 1) * DAY_MS, days: 1 };
  }
  if ((m = /^(\d{4})-?(\d{3})$/.exec(s))) {
    const [year, ordinal] = [Number(m[1]), Number(m[2])];
    if (ordinal < 1 || ordinal > (isLeap(year) ? 366 : 365)) throw bad(text, `${year} has no day ${m[2]}`);
    return { start: Date.UTC(year, 0, 1) + (ordinal - 1) * DAY_MS, days: 1 };
  }
  throw bad(text);
}

function calendarDay(year: number, month: number, day: number, text: string): number {
  if (month < 1 || month > 12) throw bad(text, `there is no month ${String(month).padStart(2, '0')}`);
  if (day < 1 || day > daysInMonth(year, month)) throw bad(text, `${year}-${String(month).padStart(2, '0')} has no day ${String(day).padStart(2, '0')}`);
  return Date.UTC(year, month - 1, day);
}

function isLeap(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** Monday of ISO week 1: the week that holds 4 January. */
function isoWeekOneMonday(year: number): number {
  const jan4 = Date.UTC(year, 0, 4);
  const weekday = (new Date(jan4).getUTCDay() + 6) % 7; // Monday 0 … Sunday 6
  return jan4 - weekday * DAY_MS;
}

/** 53 when the year starts on a Thursday, or is a leap year starting on a Wednesday; else 52. */
function isoWeeksIn(year: number): number {
  const jan1 = new Date(Date.UTC(year, 0, 1)).getUTCDay();
  return jan1 === 4 || (isLeap(year) && jan1 === 3) ? 53 : 52;
}

// ── times ───────────────────────────────────────────────────────────────────

/** Milliseconds from the date's UTC midnight to the instant the time and offset name. */
function parseTimeOfDay(s: string, text: string): number {
  const m = /^(\d{2})(?::?(\d{2})(?::?(\d{2}))?)?(?:[.,](\d+))?(Z|[+-]\d{2}(?::?\d{2})?)?$/.exec(s);
  if (m === null) throw bad(text);
  const [hh, mm, ss] = [Number(m[1]), m[2] === undefined ? 0 : Number(m[2]), m[3] === undefined ? 0 : Number(m[3])];
  const fraction = m[4] === undefined ? 0 : Number(`0.${m[4]}`);
  if (hh > 24 || (hh === 24 && (mm !== 0 || ss !== 0 || fraction !== 0))) throw bad(text, 'the hour must be 00–23 (or 24:00 for the end of the day)');
  if (mm > 59) throw bad(text, 'the minutes must be 00–59');
  if (ss > 59) throw bad(text, 'the seconds must be 00–59');
  // The fraction belongs to the last part given (hours, minutes or seconds).
  const unit = m[3] !== undefined ? 1000 : m[2] !== undefined ? 60_000 : 3_600_000;
  const local = hh * 3_600_000 + mm * 60_000 + ss * 1000 + Math.round(fraction * unit);
  return local - offsetMs(m[5], text);
}

function offsetMs(offset: string | undefined, text: string): number {
  if (offset === undefined || offset === 'Z') return 0;
  const m = /^([+-])(\d{2}):?(\d{2})?$/.exec(offset)!;
  const [h, min] = [Number(m[2]), m[3] === undefined ? 0 : Number(m[3])];
  if (h > 23 || min > 59) throw bad(text, `the offset ${offset} is out of range`);
  return (m[1] === '-' ? -1 : 1) * (h * 3_600_000 + min * 60_000);
}

/** Named `--expires` on the command line and `expires` in the admin API. */
function bad(text: string, why?: string): IssuerError {
  return new IssuerError('invalid_field', 'expires', (n) => why === undefined
    ? `${n('expires')} needs an ISO-8601 date or date-time (${EXAMPLES}), got '${text}'`
    : `${n('expires')}: '${text}' is not a real date or time: ${why}`);
}
