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
 * 4. Native coin at a deposit pays for itself or is held (`native_dust`): where the deposit pays its
 *    transfer's fee (EVM, TRON) it sends its balance less that fee, and only when what arrives is
 *    more than the fee and the fee at most `dustPercent` % of it; where the tank pays (SOLANA fee
 *    payer) it sends its whole balance, under the same percentage. Same units on both sides: no price.
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

export interface NativeDustInput {
  /** Native base units at the deposit. */
  balance: bigint;
  /** Native units the transfer of it costs. */
  fee: bigint;
  /** The deposit pays the fee out of the balance (else the tank pays it: fee payer). */
  depositPays: boolean;
  dustPercent: number;
}

export type NativeDustVerdict = 'sweep' | 'empty' | 'native_dust';

/** What a native sweep sends to the settlement wallet: the balance, less the fee where the deposit pays it (0: nothing worth sending). */
export function nativeSweepAmount(balance: bigint, fee: bigint, depositPays: boolean): bigint {
  const amount = depositPays ? balance - fee : balance;
  return amount > 0n ? amount : 0n;
}

export function nativeDustVerdict(i: NativeDustInput): NativeDustVerdict {
  if (i.balance <= 0n) return 'empty';
  const amount = nativeSweepAmount(i.balance, i.fee, i.depositPays);
  if (amount <= i.fee) return 'native_dust';
  const bps = BigInt(Math.round(i.dustPercent * 100));
  return i.fee * 10_000n > bps * amount ? 'native_dust' : 'sweep';
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
