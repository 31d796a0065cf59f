/**
 * Money is integer base units (`bigint`) everywhere; decimal strings only at the edges.
 * IDR has no decimals. Rates are decimal strings (IDR per whole token) held as scaled integers.
 */
export const RATE_SCALE = 8; // decimals kept for a rate; 1e-8 IDR precision is far below any token unit

/** Ceil division for non-negative bigints: what the customer owes rounds up. */
export function divCeil(a: bigint, b: bigint): bigint {
  if (b <= 0n) throw new Error('divCeil: divisor must be positive');
  if (a < 0n) throw new Error('divCeil: dividend must be non-negative');
  return (a + b - 1n) / b;
}

export function pow10(n: number): bigint {
  return 10n ** BigInt(n);
}

/** Parses a decimal string (e.g. a rate "16250.5") into an integer scaled by 10^scale; throws on junk. */
export function parseDecimal(value: string, scale: number): bigint {
  // Digits with an optional sign and point ("1.5", "-2", ".5", "1."); excess fraction digits must be zeros.
  const m = /^(-?)(\d*)\.?(\d*)$/.exec(value);
  if (!m || m[2]!.length + m[3]!.length === 0) throw new RangeError(`not a decimal number: ${JSON.stringify(value)}`);
  const fraction = m[3]!.padEnd(scale, '0');
  if (/[^0]/.test(fraction.slice(scale))) throw new RangeError(`${value} has more than ${scale} decimals`);
  const units = BigInt((m[2] || '0') + fraction.slice(0, scale));
  return m[1] ? -units : units;
}

/** Formats base units as a plain decimal string without trailing zeros ("1.5", "16250"). */
export function formatDecimal(units: bigint, decimals: number): string {
  const sign = units < 0n ? '-' : '';
  const digits = (units < 0n ? -units : units).toString().padStart(decimals + 1, '0');
  const whole = digits.slice(0, digits.length - decimals);
  const fraction = digits.slice(digits.length - decimals).replace(/0+$/, '');
  return `${sign}${whole}${fraction ? `.${fraction}` : ''}`;
}

/**
 * Converts an IDR amount into token base units at `rateScaled` (IDR per whole token × 10^RATE_SCALE),
 * rounding up: units = ceil(idr × 10^decimals × 10^RATE_SCALE / rateScaled).
 */
export function idrToTokenUnitsCeil(idr: bigint, rateScaled: bigint, decimals: number): bigint {
  return divCeil(idr * pow10(decimals) * pow10(RATE_SCALE), rateScaled);
}

/** Token base units → IDR, rounded down (a value we show, never what anybody owes). */
export function tokenUnitsToIdrFloor(units: bigint, rateScaled: bigint, decimals: number): bigint {
  return (units * rateScaled) / (pow10(decimals) * pow10(RATE_SCALE));
}

/**
 * Customers see at most this many decimals of a crypto amount: wallets and humans cope with
 * "9.230770" far better than with an 18-decimal figure, and the unique code lives in decimals 4–6.
 */
export const QUOTE_DECIMALS = 6;

// Plain, non-negative decimal: no sign, exponent, whitespace, hex or bare "." — the only form we accept at the edges.
const PLAIN_DECIMAL = /^(0|[1-9]\d*)(\.\d+)?$/;

/** True for "16250", "0.5", "16300.12"; false for "-1", "1e5", ".5", "1.", " 1", "01". Optional cap on fraction digits. */
export function isPlainDecimal(value: string, maxDecimals?: number): boolean {
  if (!PLAIN_DECIMAL.test(value)) return false;
  if (maxDecimals === undefined) return true;
  const dot = value.indexOf('.');
  return dot === -1 || value.length - dot - 1 <= maxDecimals;
}

/**
 * Cuts a plain decimal string to `maxDecimals` fraction digits (truncation, not rounding) and drops
 * trailing zeros. Used to normalise third-party rates before they are scaled; throws on non-plain input.
 */
export function truncateDecimal(value: string, maxDecimals: number): string {
  if (!isPlainDecimal(value)) throw new Error(`truncateDecimal: not a plain decimal: ${JSON.stringify(value)}`);
  const [int, frac = ''] = value.split('.');
  const cut = frac.slice(0, maxDecimals).replace(/0+$/, '');
  return cut ? `${int}.${cut}` : (int as string);
}

/** Base units per quote step: 10^(decimals − min(decimals, QUOTE_DECIMALS)); 1 for tokens with ≤ 6 decimals. */
export function quoteStep(decimals: number): bigint {
  return pow10(decimals - Math.min(decimals, QUOTE_DECIMALS));
}

/** Smallest multiple of `step` that is ≥ `units` (non-negative units, positive step). */
export function roundUpToMultiple(units: bigint, step: bigint): bigint {
  return divCeil(units, step) * step;
}
