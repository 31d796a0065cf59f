/**
 * Pure rules of the sweep engine (the header is the specification; sweep.rules.test.ts checks it).
 *
 * 1. Dust: a balance is not swept while it is below the token's minimum, or while the network fee of
 *    its sweep is more than `dustPercent` % of it. Fees are native units and balances stablecoin
 *    units, so the fee is valued with a configured rough USD price of the native coin
 *    (SWEEP_NATIVE_PRICE_<NETWORK>) and the stablecoin counts as 1 USD. Integer arithmetic only.
 * 2. Funding share: a funding transaction serving n sweeps costs each `fee / n`; the remainder goes to
 *    the first sweep (by id), so the shares add up to the fee exactly.
 * 3. Fee bump: a stuck transaction is replaced at +25 % per attempt over the network fee, capped.
 */

export interface DustInput {
  balance: bigint;
  tokenDecimals: number;
  /** Native units one sweep of this balance costs (transfer, and its top-up where there is one). */
  fee: bigint;
  nativeDecimals: number;
  /** USD per native coin (config). */
  nativePriceUsd: number;
  dustPercent: number;
  /** Per-token minimum in base units (0: none). */
  minAmount: bigint;
}

export type DustVerdict = 'sweep' | 'empty' | 'below_minimum' | 'fee_too_high';

export function dustVerdict(i: DustInput): DustVerdict {
  if (i.balance <= 0n) return 'empty';
  if (i.balance < i.minAmount) return 'below_minimum';
  // fee × price / 10^nd  >  pct/100 × balance / 10^td, scaled to integers (price in micro-USD, pct in basis points)
  const priceMicros = BigInt(Math.round(i.nativePriceUsd * 1e6));
  const bps = BigInt(Math.round(i.dustPercent * 100));
  const feeSide = i.fee * priceMicros * 10n ** BigInt(i.tokenDecimals) * 10_000n;
  const amountSide = bps * i.balance * 10n ** BigInt(i.nativeDecimals) * 1_000_000n;
  return feeSide > amountSide ? 'fee_too_high' : 'sweep';
}

/** This sweep's share of a transaction fee paid for `count` sweeps (`first`: it is the first of them by id). */
export function feeShare(fee: bigint, count: number, first: boolean): bigint {
  if (count <= 0) return 0n;
  const n = BigInt(count);
  return fee / n + (first ? fee % n : 0n);
}

/** Fee multiplier (percent) of replacement number `attempt` (1 = the first replacement). */
export function bumpPercent(attempt: number, maxPercent: number): number {
  return Math.min(maxPercent, 100 + 25 * attempt);
}
