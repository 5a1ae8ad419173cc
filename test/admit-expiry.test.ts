import t from 'tap';
import { keyRefusal } from '../src/admit/admit.js';
import { parseExpiry } from '../src/cli/expiry.js';
import type { KeyRecord } from '../src/store/types.js';

const key = (expiresAt: number | null): KeyRecord => ({
  id: 'key_0000000000000000', hash: 'h', prefix: 'gw_live_0000', name: null, mode: 'credit', models: null,
  rpm: null, expiresAt, status: 'active', createdAt: 0, account: 'acct_0', rotatedFrom: null,
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
