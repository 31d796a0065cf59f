/**
 * The refund decisions as pure functions: RefundService reads the rows, calls these and writes what
 * they say; nothing else decides how much may go back, which kinds the gateway offers, what is
 * approved without a person, or what the customer receives.
 *
 * Rules:
 *
 * 1. What may still be refunded of a source (an order's payments in one deposit, or one unattributed
 *    receipt) = what it received (confirmed, base units of its token) − Σ the amounts of its refunds
 *    that are not cancelled or failed. A refund's amount is a positive integer ≤ that; never more.
 * 2. Kinds the gateway offers itself (no judgement needed), each with its largest amount:
 *      overpayment_excess  a deposit of an order that ended Success received more than its due:
 *                          confirmed − due
 *      partial_payment     an order that ended Underpaid or Expired: the deposit's confirmed amount
 *      late_receipt        an unattributed receipt of reason `late`: its amount
 *      wrong_token         an unattributed receipt of reason `wrong_token`: its amount
 *    `merchant` (a full or partial refund of what a paid order received) is the merchant's decision.
 *    An offered kind's amount is at most its offer less the source's earlier refunds of that kind
 *    (not cancelled or failed), and at most rule 1's.
 * 3. Auto-approval: a gateway-offered kind whose amount ≤ the merchant's limit (token units, × 10^decimals)
 *    is approved without a person once its address is known. No limit (null): never. `merchant`: never.
 * 4. Fee mode `deduct`: the network fee's worth in the token, rounded UP to a base unit, is taken off
 *    the amount sent (`tank`: nothing taken; the gas tank pays). A fee worth the whole amount or more
 *    fails the refund `fee_exceeds_amount` (nothing is sent).
 * 5. Source: the deposit address while it still holds the amount for this refund, beyond what other
 *    open refunds reserve there and with no sweep of it in flight; otherwise the merchant's refund
 *    wallet for the network.
 */
import { VOID_REFUND_STATUSES, type RefundKind, type RefundStatus } from './refund.transitions.js';

/** Rule 1: base units still refundable of a source. */
export function refundable(received: bigint, refunds: { amount: bigint; status: RefundStatus }[]): bigint {
  const taken = refunds.filter((r) => !VOID_REFUND_STATUSES.includes(r.status)).reduce((s, r) => s + r.amount, 0n);
  const left = received - taken;
  return left > 0n ? left : 0n;
}

export type AmountVerdict = 'ok' | 'not_positive' | 'exceeds_received' | 'exceeds_offer';

/**
 * Rules 1 and 2: whether `amount` may be refunded. `offer`: the kind's largest amount (null for
 * `merchant`); `offerLeft`: the offer less earlier refunds of the kind (an amount the offer allows
 * but earlier refunds used up is `exceeds_received`: it was refunded already).
 */
export function checkRefundAmount(amount: bigint, left: bigint, offer: bigint | null, offerLeft: bigint | null = offer): AmountVerdict {
  if (amount <= 0n) return 'not_positive';
  if (amount > left) return 'exceeds_received';
  if (offer !== null && amount > offer) return 'exceeds_offer';
  if (offerLeft !== null && amount > offerLeft) return 'exceeds_received';
  return 'ok';
}

/** Rule 2: an offer less the earlier refunds of its kind that are not cancelled or failed. */
export function offerLeft(offer: bigint, kind: RefundKind, refunds: { amount: bigint; status: RefundStatus; kind: string }[]): bigint {
  const used = refunds.filter((r) => r.kind === kind && !VOID_REFUND_STATUSES.includes(r.status)).reduce((s, r) => s + r.amount, 0n);
  return used >= offer ? 0n : offer - used;
}

/** What the order's state says about one of its deposits (rule 2). */
export interface OfferFacts {
  orderStatus: string;
  due: bigint;
  confirmed: bigint;
}

/** Rule 2 for an order's deposit: the kind the gateway offers and its largest amount, or null. */
export function offerForDeposit(f: OfferFacts): { kind: RefundKind; amount: bigint } | null {
  if (f.confirmed <= 0n) return null;
  if (f.orderStatus === 'Success' && f.confirmed > f.due) return { kind: 'overpayment_excess', amount: f.confirmed - f.due };
  if (f.orderStatus === 'Underpaid' || f.orderStatus === 'Expired') return { kind: 'partial_payment', amount: f.confirmed };
  return null;
}

/** Rule 2 for an unattributed receipt: the kind offered, or null (wrong network, native coin: not offered). */
export function offerForReceipt(reason: string): RefundKind | null {
  if (reason === 'late') return 'late_receipt';
  if (reason === 'wrong_token') return 'wrong_token';
  return null;
}

/** Whether the gateway offers this kind itself (rule 2). */
export const isGatewayOffered = (kind: RefundKind): boolean => kind !== 'merchant';

/** Rule 3: auto-approval. `limit` is a decimal string of token units (`"25.5"`) or null. */
export function autoApproves(kind: RefundKind, amount: bigint, decimals: number, limit: string | null): boolean {
  if (!isGatewayOffered(kind) || limit === null) return false;
  return amount <= toUnits(limit, decimals);
}

/** A non-negative decimal string (`"12.5"`) in base units of `decimals` (extra digits truncated). */
export function toUnits(value: string, decimals: number): bigint {
  const m = /^(\d+)(?:\.(\d+))?$/.exec(value.trim());
  if (!m) throw new Error(`not a decimal amount: ${value}`);
  const frac = (m[2] ?? '').slice(0, decimals).padEnd(decimals, '0');
  return BigInt(m[1]!) * 10n ** BigInt(decimals) + BigInt(frac || '0');
}

/** Rule 4: the fee's worth in token base units, rounded up (stablecoins: 1 token unit = 1 USD). */
export function feeInToken(feeNative: bigint, nativeDecimals: number, nativePriceUsd: number, tokenDecimals: number): bigint {
  if (feeNative <= 0n) return 0n;
  // the price as a fraction with 6 decimal places: exact integer math from there
  const priceMicros = BigInt(Math.round(nativePriceUsd * 1e6));
  const num = feeNative * priceMicros * 10n ** BigInt(tokenDecimals);
  const den = 10n ** BigInt(nativeDecimals) * 1_000_000n;
  return (num + den - 1n) / den;
}

/** Rule 4: what the customer receives, and what was deducted; null when the fee takes it all. */
export function amountToSend(amount: bigint, mode: 'tank' | 'deduct', feeTokenUnits: bigint): { send: bigint; deducted: bigint } | null {
  if (mode === 'tank') return { send: amount, deducted: 0n };
  if (feeTokenUnits >= amount) return null;
  return { send: amount - feeTokenUnits, deducted: feeTokenUnits };
}

/** Rule 5: where a refund is paid from. */
export function refundSource(f: { depositHolds: bigint; reservedByOthers: bigint; amount: bigint; sweepInFlight: boolean }): 'deposit' | 'refund_wallet' {
  if (f.sweepInFlight) return 'refund_wallet';
  return f.depositHolds - f.reservedByOthers >= f.amount ? 'deposit' : 'refund_wallet';
}
