/**
 * Money is held as integers, never floats.
 *
 * Unit: the nano-dollar (1 nUSD = 10^-9 USD). Balances and costs are plain JS integers in nUSD,
 * exact up to Number.MAX_SAFE_INTEGER nUSD (about 9 million USD per key), which no balance passes
 * (MAX_ACCOUNT_AMOUNT, domain/rules.ts).
 *
 * Prices are configured in USD per million tokens. One token at P USD/M costs P * 1000 nUSD, so
 * any price with at most three decimals (0.075, 1.25, 18.75 …) is an exact integer number of nUSD
 * per token, and a charge is `tokens × nUSD-per-token`: integer multiplication, no rounding at all.
 * Prices with more precision are refused when the configuration is loaded. Per-call tool fees are
 * configured in USD per 1,000 calls and exact with up to six decimals.
 *
 * Display: amounts are shown in USD with six decimals (micro-dollars), rounded half away from
 * zero. Only the display rounds; the stored balance and every stored cost stay exact.
 */

export const NANO_PER_USD = 1_000_000_000;

/** USD per million tokens → integer nUSD per token, or undefined when not exact (more than 3 decimals). */
export function pricePerTokenNano(usdPerMillion: number): number | undefined {
  if (typeof usdPerMillion !== 'number' || !Number.isFinite(usdPerMillion) || usdPerMillion < 0) return undefined;
  const scaled = usdPerMillion * 1000;
  const rounded = Math.round(scaled);
  if (Math.abs(scaled - rounded) > 1e-6 || !Number.isSafeInteger(rounded)) return undefined;
  return rounded;
}

/**
 * USD per 1,000 calls (how providers list tool fees) → integer nUSD per call, or undefined when
 * not exact (more than 6 decimals). $10 per 1,000 calls is 10,000,000 nUSD per call.
 */
export function feePerCallNano(usdPerThousand: number): number | undefined {
  if (typeof usdPerThousand !== 'number' || !Number.isFinite(usdPerThousand) || usdPerThousand < 0) return undefined;
  const scaled = usdPerThousand * 1_000_000;
  const rounded = Math.round(scaled);
  if (Math.abs(scaled - rounded) > 1e-3 || !Number.isSafeInteger(rounded)) return undefined;
  return rounded;
}

/**
 * A price multiplier (1.1) → integer thousandths (1100), or undefined when not exact (more than 3
 * decimals), not positive, or above 1000×. Applied with multiplyUp.
 */
export function multiplierPermille(multiplier: number): number | undefined {
  if (typeof multiplier !== 'number' || !Number.isFinite(multiplier) || multiplier <= 0 || multiplier > 1000) return undefined;
  const scaled = multiplier * 1000;
  const rounded = Math.round(scaled);
  return Math.abs(scaled - rounded) > 1e-6 ? undefined : rounded;
}

/**
 * `nano × permille / 1000`, rounded up to the next whole nUSD (a multiplied charge is never
 * rounded in the payer's favour at the operator's expense, and never by more than 1 nUSD), in
 * integer arithmetic, exact whenever the result is a safe integer: the thousands and the
 * remainder are multiplied apart, so no intermediate product is larger than the result.
 */
export function multiplyUp(nano: number, permille: number): number {
  if (permille === 1000) return nano;
  const thousands = Math.floor(nano / 1000);
  const rest = nano - thousands * 1000;
  return thousands * permille + Math.ceil((rest * permille) / 1000);
}

/**
 * Parses a decimal USD amount written as text ("5", "0.25", "12.000000001") into nUSD exactly,
 * without going through a float. Returns undefined for anything else (signs, exponents, > 9 decimals).
 */
export function parseUsd(text: string): number | undefined {
  const m = /^(\d+)(?:\.(\d{1,9}))?$/.exec(text.trim());
  if (!m) return undefined;
  const whole = Number(m[1]);
  const frac = Number((m[2] ?? '').padEnd(9, '0'));
  const nano = whole * NANO_PER_USD + frac;
  return Number.isSafeInteger(nano) ? nano : undefined;
}

/** nUSD → "1.234568" (six decimals, half away from zero). */
export function formatUsd(nano: number): string {
  const negative = nano < 0;
  const abs = Math.abs(nano);
  let whole = Math.floor(abs / NANO_PER_USD);
  let micro = Math.floor(((abs % NANO_PER_USD) + 500) / 1000);
  if (micro === 1_000_000) { whole += 1; micro = 0; }
  const text = `${whole}.${String(micro).padStart(6, '0')}`;
  return negative && (whole > 0 || micro > 0) ? `-${text}` : text;
}

/**
 * nUSD → USD exactly, without trailing zeros: "7199.254740991", "5", "0.000000001", "-0.25" (the
 * form parseUsd reads back). For amounts a message must state to the nano-dollar.
 */
export function formatUsdExact(nano: number): string {
  const abs = Math.abs(nano);
  const whole = Math.floor(abs / NANO_PER_USD);
  const frac = String(abs % NANO_PER_USD).padStart(9, '0').replace(/0+$/, '');
  return `${nano < 0 ? '-' : ''}${whole}${frac === '' ? '' : `.${frac}`}`;
}
