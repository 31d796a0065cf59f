/**
 * Rate sanity: which market answer may be locked into a quote (one source answering
 * 99,000 IDR/USDT, 6× the market, must never be locked into a quote). Pure rules over scaled rates
 * (IDR per token × 10^8, bigint); RateService (rate-provider.ts) asks the sources and applies them.
 *
 * 1. Reference. The last live rate accepted for the token in this process; before the first one,
 *    the configured fallback rate.
 * 2. Bound. A live answer (already inside the absolute sanity bounds) is accepted when it lies
 *    within maxChange of the reference: |answer − reference| × 10000 ≤ maxChangeBps × reference.
 *    Sources are asked in their configured order; the first accepted answer wins.
 * 3. Cross-check. Answers refused by rule 2 are compared with each other: when at least two
 *    different sources lie within maxChange of the median of those answers, the market itself
 *    moved (or the reference is stale) and the first of them, in source order, is accepted. One
 *    source alone can never move the rate further than maxChange.
 * 4. Fallback. When no live answer is accepted, the fallback rate is used only if there is no
 *    accepted live rate yet or it lies within maxChange of the last one. Otherwise no rate is
 *    trustworthy and quoting is refused (RATE_UNAVAILABLE, 503) rather than quoted wrong.
 *
 * Median of an even count: the mean of the two middle values, rounded down.
 */

export interface ScaledAnswer {
  source: string;
  scaled: bigint;
}

/** Rule 2: `value` within `maxChangeBps` basis points of `reference` (> 0). */
export function withinChange(value: bigint, reference: bigint, maxChangeBps: bigint): boolean {
  const diff = value > reference ? value - reference : reference - value;
  return diff * 10_000n <= maxChangeBps * reference;
}

/** Rule 1. */
export function rateReference(lastAccepted: bigint | null, fallback: bigint): bigint {
  return lastAccepted ?? fallback;
}

export function median(values: readonly bigint[]): bigint {
  if (values.length === 0) throw new Error('median of nothing');
  const sorted = [...values].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2n;
}

/** Rule 3: index (in `answers`) of the answer to accept, or null when fewer than two sources agree. */
export function agreeingAnswer(answers: readonly ScaledAnswer[], maxChangeBps: bigint): number | null {
  if (answers.length < 2) return null;
  const mid = median(answers.map((a) => a.scaled));
  const agreeing = answers.map((a, i) => ({ ...a, i })).filter((a) => withinChange(a.scaled, mid, maxChangeBps));
  if (new Set(agreeing.map((a) => a.source)).size < 2) return null;
  return agreeing[0]!.i;
}

/** Rule 4. */
export function fallbackAllowed(fallback: bigint, lastAccepted: bigint | null, maxChangeBps: bigint): boolean {
  return lastAccepted === null || withinChange(fallback, lastAccepted, maxChangeBps);
}

/** A configured percent ("10", "2.5") as basis points. */
export function percentToBps(percent: number): bigint {
  if (!Number.isFinite(percent) || percent <= 0 || percent > 100) throw new Error(`max change must be in (0, 100] percent, got ${percent}`);
  return BigInt(Math.round(percent * 100));
}
