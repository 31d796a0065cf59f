/** Token amounts in the browser: decimal strings ↔ base units (bigint), exactly. */

/** `"12.5"` with 6 decimals → 12500000n; null when it is not a non-negative decimal with at most `decimals` places. */
export function toUnits(text: string, decimals: number): bigint | null {
  const m = /^(\d+)(?:[.,](\d*))?$/.exec(text.trim());
  if (!m) return null;
  const frac = m[2] ?? '';
  if (frac.length > decimals) return null;
  return BigInt(m[1]!) * 10n ** BigInt(decimals) + BigInt((frac + '0'.repeat(decimals)).slice(0, decimals) || '0');
}

/** 12500000n with 6 decimals → `"12.5"`. */
export function fromUnits(units: bigint, decimals: number): string {
  const neg = units < 0n;
  const s = (neg ? -units : units).toString().padStart(decimals + 1, '0');
  const int = s.slice(0, s.length - decimals);
  const frac = decimals ? s.slice(s.length - decimals).replace(/0+$/, '') : '';
  return `${neg ? '-' : ''}${int}${frac ? `.${frac}` : ''}`;
}

/** The decimals of a token, from one amount given both ways (a deposit's totalAmount and totalAmountBaseUnits). */
export function decimalsOf(decimal: string, units: string): number | null {
  for (let d = 0; d <= 36; d++) if (toUnits(decimal, d) === BigInt(units)) return d;
  return null;
}
