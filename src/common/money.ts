import { formatUnits, parseUnits } from 'ethers';

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
  return parseUnits(value, scale);
}

/** Formats base units as a plain decimal string without trailing zeros ("1.5", "16250"). */
export function formatDecimal(units: bigint, decimals: number): string {
  const s = formatUnits(units, decimals);
  return s.endsWith('.0') ? s.slice(0, -2) : s;
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
