import t from 'tap';
import { formatUsd, formatUsdExact, NANO_PER_USD, parseUsd, pricePerTokenNano } from '../src/money.js';

t.test('prices in USD per million tokens become exact integer nUSD per token', async (t) => {
  t.equal(pricePerTokenNano(0.15), 150);
  t.equal(pricePerTokenNano(0.6), 600);
  t.equal(pricePerTokenNano(0.075), 75);
  t.equal(pricePerTokenNano(18.75), 18750);
  t.equal(pricePerTokenNano(1.1), 1100);
  t.equal(pricePerTokenNano(0), 0);
  t.equal(pricePerTokenNano(3), 3000);
  for (const p of [0.15, 0.075, 18.75, 1.1, 0.3, 2.5]) t.ok(Number.isSafeInteger(pricePerTokenNano(p)), `${p} → integer`);
});

t.test('prices that are not exact in nUSD, negative or not numbers are refused', async (t) => {
  t.equal(pricePerTokenNano(0.0001), undefined, 'four decimals');
  t.equal(pricePerTokenNano(0.1234), undefined, 'four decimals');
  t.equal(pricePerTokenNano(-1), undefined, 'negative');
  t.equal(pricePerTokenNano(-0.15), undefined, 'negative');
  t.equal(pricePerTokenNano(Number.NaN), undefined, 'NaN');
  t.equal(pricePerTokenNano(Number.POSITIVE_INFINITY), undefined, 'infinity');
  t.equal(pricePerTokenNano('0.15' as unknown as number), undefined, 'a string');
});

t.test('USD amounts are parsed exactly from their text, never through a float', async (t) => {
  t.equal(NANO_PER_USD, 1_000_000_000);
  t.equal(parseUsd('0.1'), 100_000_000);
  t.equal(parseUsd('0.2'), 200_000_000);
  t.equal(parseUsd('0.1')! + parseUsd('0.2')!, 300_000_000, '0.1 + 0.2 is exactly 0.3 USD');
  t.not(0.1 + 0.2, 0.3, '(whereas the floats are not)');
  t.equal(parseUsd('5'), 5_000_000_000);
  t.equal(parseUsd('12.50'), 12_500_000_000);
  t.equal(parseUsd('0.000001'), 1000);
  t.equal(parseUsd('12.000000001'), 12_000_000_001, 'nine decimals');
  t.equal(parseUsd('0'), 0);
  for (const bad of ['abc', '-1', '1e3', '', '.5', '1.', '0.0000000001', '+1', '1,5', '0x10', 'Infinity', 'NaN']) {
    t.equal(parseUsd(bad), undefined, `'${bad}' is refused`);
  }
});

t.test('display rounds to six decimals, half away from zero; only the display rounds', async (t) => {
  t.equal(formatUsd(22_200), '0.000022');
  t.equal(formatUsd(500), '0.000001', 'half rounds up');
  t.equal(formatUsd(499), '0.000000');
  t.equal(formatUsd(0), '0.000000');
  t.equal(formatUsd(1_000_000_000), '1.000000');
  t.equal(formatUsd(999_999_500), '1.000000', 'rounding carries into the dollars');
  t.equal(formatUsd(999_999_499), '0.999999');
  t.equal(formatUsd(4_123_456_000), '4.123456');
  t.equal(formatUsd(-22_200), '-0.000022', 'negative');
  t.equal(formatUsd(-500), '-0.000001', 'negative half rounds away from zero');
  t.equal(formatUsd(-499), '0.000000', 'a negative that rounds to zero shows no sign');
  t.equal(formatUsd(-1_500_000_000), '-1.500000');
});

t.test('one million charges of 150 nUSD sum to exactly 0.15 USD', async (t) => {
  const perToken = pricePerTokenNano(0.15)!;
  t.equal(perToken, 150);
  let balance = parseUsd('1')!;
  let spent = 0;
  for (let i = 0; i < 1_000_000; i++) {
    spent += perToken;
    balance -= perToken;
  }
  t.equal(spent, 150_000_000);
  t.equal(balance, 850_000_000);
  t.equal(formatUsd(spent), '0.150000');
  t.equal(formatUsd(balance), '0.850000');
  t.ok(Number.isSafeInteger(spent) && Number.isSafeInteger(balance));
  // The same in floating-point USD drifts: that is why money is integer nUSD.
  let floatSpent = 0;
  for (let i = 0; i < 1_000_000; i++) floatSpent += 0.00000015;
  t.not(floatSpent, 0.15, 'float dollars would not be exact');
});

t.test('formatUsdExact states an amount to the nano-dollar, as parseUsd reads it back', async (t) => {
  const cases: Array<[number, string]> = [
    [0, '0'], [1, '0.000000001'], [5_000_000_000, '5'], [12_500_000_000, '12.5'], [7_199_254_740_991, '7199.254740991'],
    [Number.MAX_SAFE_INTEGER, '9007199.254740991'], [-250_000_000, '-0.25'],
  ];
  for (const [nano, text] of cases) {
    t.equal(formatUsdExact(nano), text, `${nano} nUSD`);
    if (nano >= 0) t.equal(parseUsd(text), nano, `${text} reads back`);
  }
  t.equal(parseUsd('9007199.254740992'), undefined, 'one nano-dollar past the exact range is not an amount parseUsd gives');
});
