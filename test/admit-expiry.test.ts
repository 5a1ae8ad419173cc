import t from 'tap';
import { keyRefusal } from '../src/domain/rules.js';
import { parseExpiry } from '../src/issuer/expiry.js';
import type { KeyRecord } from '../src/domain/types.js';

const key = (expiresAt: number | null): KeyRecord => ({
  id: 'key_0000000000000000', hash: 'h', prefix: 'gw_live_0000', name: null, mode: 'credit', models: null,
  rpm: null, concurrency: null, expiresAt, status: 'active', createdAt: 0, account: 'acct_0', rotatedFrom: null,
});

t.test('a key works up to and including its expiry instant, and is expired one millisecond later', async (t) => {
  const at = Date.UTC(2031, 4, 17, 10, 30);
  t.equal(keyRefusal(key(at), 'credit', at - 1), null);
  t.equal(keyRefusal(key(at), 'credit', at), null, 'the expiry instant itself still works');
  t.equal(keyRefusal(key(at), 'credit', at + 1), 'key_expired');
  t.equal(keyRefusal(key(null), 'credit', Number.MAX_SAFE_INTEGER), null, 'no expiry: never expired');
});

t.test('a bare date works through the last millisecond of that day, UTC', async (t) => {
  const end = parseExpiry('2031-05-17');
  t.equal(new Date(end).toISOString(), '2031-05-17T23:59:59.999Z');
  t.equal(keyRefusal(key(end), 'credit', Date.UTC(2031, 4, 17, 23, 59, 59, 999)), null);
  t.equal(keyRefusal(key(end), 'credit', Date.UTC(2031, 4, 18)), 'key_expired', 'expired from the next midnight');
  t.throws(() => parseExpiry('2031-02-29'), /not a real date/, 'a day that does not exist is refused');
});

t.test('--expires reads every ISO-8601 form of a date or date-time', async (t) => {
  const iso = (s: string): string => new Date(parseExpiry(s)).toISOString();
  const cases: Array<[string, string]> = [
    ['2027-01-31', '2027-01-31T23:59:59.999Z'],
    ['20270131', '2027-01-31T23:59:59.999Z'],
    ['2027-031', '2027-01-31T23:59:59.999Z'],
    ['2027031', '2027-01-31T23:59:59.999Z'],
    ['2027-W05-7', '2027-02-07T23:59:59.999Z'],
    ['2027W057', '2027-02-07T23:59:59.999Z'],
    ['2026-W53-4', '2026-12-31T23:59:59.999Z'],
    ['2027-W05', '2027-02-07T23:59:59.999Z'],
    ['2027-02', '2027-02-28T23:59:59.999Z'],
    ['2028-02', '2028-02-29T23:59:59.999Z'],
    ['2027-01-31T18:00:00Z', '2027-01-31T18:00:00.000Z'],
    ['2027-01-31T18:00:00', '2027-01-31T18:00:00.000Z'],
    ['2027-01-31 18:00', '2027-01-31T18:00:00.000Z'],
    ['2027-01-31T18', '2027-01-31T18:00:00.000Z'],
    ['2027-01-31T18+05', '2027-01-31T13:00:00.000Z'],
    ['2027-01-31T18:00+05:30', '2027-01-31T12:30:00.000Z'],
    ['2027-01-31T18:00:00-0800', '2027-02-01T02:00:00.000Z'],
    ['20270131T180000Z', '2027-01-31T18:00:00.000Z'],
    ['2027-01-31T18:00:00,5Z', '2027-01-31T18:00:00.500Z'],
    ['2027-01-31T18:00:00.123456789Z', '2027-01-31T18:00:00.123Z'],
    ['2027-01-31T18.5Z', '2027-01-31T18:30:00.000Z'],
    ['2027-01-31T24:00Z', '2027-02-01T00:00:00.000Z'],
  ];
  for (const [given, expected] of cases) t.equal(iso(given), expected, given);
});

t.test('--expires refuses impossible dates and times instead of rolling them over', async (t) => {
  for (const given of ['2027-02-30T10:00:00Z', '2027-02-29', '2027-13-01', '2027-00-10', '2027-366', '2027-W53-1', '2027-W00',
    '2027-01-31T25:00Z', '2027-01-31T24:30Z', '2027-01-31T18:60Z', '2027-01-31T18:00:60Z', '2027-01-31T18:00+24:00',
    '2027-02-T10:00']) {
    t.throws(() => parseExpiry(given), /not a real date or time|needs an ISO-8601/, given);
  }
  for (const given of ['tomorrow', '31/01/2027', '2027', '2027-1-31', '+2027-01-31', '2027-01-31T', '2027-01-31T18:00:00Zjunk', '2027-W05T10:00']) {
    t.throws(() => parseExpiry(given), /--expires/, given);
  }
});
