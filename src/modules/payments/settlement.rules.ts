/**
 * The settlement decision as a pure function: an order, its deposits' receipts, the merchant's
 * tolerance, the clock and the late window in; the order's next status, the overpayment to flag and
 * what becomes of its deposits out. SettlementService reads the rows, calls `decideSettlement` and
 * writes what it says; nothing else decides an order's status from its payments.
 *
 * Rules:
 *
 * 1. Amounts are integer base units per deposit: `due` (the deposit's total), `confirmed` (sum of its
 *    confirmed payments), `pending` (sum of payments waiting for finality) and `inWindow` (confirmed
 *    payments detected no later than lateEnd). Orphaned payments count nowhere. A deposit's amounts
 *    are only ever compared with its own `due`: units of different deposits (6- and 18-decimal
 *    tokens, different rates) are never added or compared directly.
 * 2. lateEnd = expiresAt + lateWindowS. expired ⇔ now ≥ expiresAt.
 * 3. Tolerance: toleranceBps is clamped to 0…10 000 (anything not a finite number counts as 0, a
 *    fraction is truncated). A deposit is paid ⇔ inWindow × 10 000 ≥ due × (10 000 − toleranceBps):
 *    short by at most toleranceBps / 10 000 of the total still completes the order. Each deposit is
 *    judged alone (two half payments in two tokens do not complete an order).
 * 4. The completing payment of a paid deposit: its in-window confirmed payments in chain order
 *    (`payments`, as given); the first one at which their running sum makes the deposit paid. The
 *    deposit that completed the order: of the paid deposits, the one whose completing payment was
 *    confirmed first (then detected first, then the order given). The decision names both
 *    (`paidDepositId`, `paidPaymentId`); the Success transition and its webhook carry them.
 * 5. Target status:
 *      some deposit paid                               → Success
 *      else, from Success, a confirmed payment was lost to a reorg deeper than the confirmation
 *        depth (`reorgLoss`)                           → Underpaid (the money that completed it is gone)
 *      else, from Created or Processing:
 *        something pending                             → Processing
 *        not expired, something confirmed              → Processing
 *        not expired, nothing received                 → Created
 *        expired, something confirmed                  → Underpaid
 *        expired, nothing confirmed                    → Expired
 *      else, from Expired, something confirmed, now ≤ lateEnd → Underpaid
 *      else                                            → unchanged (Underpaid and Success stay)
 *    `Processing` means "a payment was detected and the order is not final yet" (pending, or confirmed
 *    short of the total): a confirmed partial payment never moves an order back to `Created`; only a
 *    reorg that orphans every receipt does.
 *    A target the order transition table does not allow from the current status is not taken
 *    (`transition` is false).
 * 6. Overpayment is judged across all of the order's deposits by value, not by units: each deposit's
 *    confirmed receipts as a fraction of its own due (its due is the order's value at that deposit's
 *    locked rate), summed exactly (common denominator, integers only). Some deposit paid and
 *    Σ confirmedᵢ / dueᵢ > 1, and the order not flagged yet → flag it once, naming the paid deposit
 *    (its due and confirmed), every deposit that received something, and the excess:
 *      excess    = ⌊(Σ confirmedᵢ / dueᵢ − 1) × due of the paid deposit⌋   (its token's base units)
 *      excessIdr = ⌊(Σ confirmedᵢ / dueᵢ − 1) × dueIdr of the paid deposit⌋ (IDR at its locked rate)
 *    One deposit alone: excess = confirmed − due. Paying a second deposit in full doubles the value.
 * 7. Deposits: now > lateEnd → every deposit closes (not watched any more, its unique code is free);
 *    else if the target is Success → open and lapsed deposits become settled (code released, still
 *    watched until lateEnd, so an extra transfer is recorded as an overpayment, not lost);
 *    else if expired → open deposits lapse (code released at once, so an expired order never holds
 *    one of its merchant's 999 codes through the late window; still watched, a late payment is
 *    found by its address); else unchanged.
 */
import { canTransition, type OrderStatus } from '../orders/order.transitions.js';

export interface DepositReceipts {
  id: string;
  due: bigint;
  confirmed: bigint;
  pending: bigint;
  /** Confirmed units detected no later than the end of the late window. */
  inWindow: bigint;
  /** IDR value of `due` at the deposit's locked rate (reports the overpayment in IDR); 0 when unknown. */
  dueIdr?: bigint;
  /** Its confirmed payments detected no later than lateEnd, in chain order (finds the completing payment). */
  payments?: ReceiptPayment[];
}

export interface ReceiptPayment {
  id: string;
  amount: bigint;
  confirmedAt: Date | null;
  detectedAt: Date;
}

export interface SettlementInput {
  status: OrderStatus;
  expiresAt: Date;
  /** Already flagged as overpaid (the flag and its event are written once). */
  overpaid: boolean;
  deposits: DepositReceipts[];
  toleranceBps: number;
  now: Date;
  lateWindowS: number;
  /** A payment of this order that had been confirmed was later reorganised away (it is not confirmed now). */
  reorgLoss?: boolean;
}

export interface Overpayment {
  /** The deposit that completed the order. */
  depositId: string;
  /** Its due and confirmed units. */
  due: bigint;
  received: bigint;
  /** The excess in the paid deposit's base units (rule 6). */
  excess: bigint;
  /** The excess in IDR at the paid deposit's locked rate (0 when its IDR value is unknown). */
  excessIdr: bigint;
  /** Every deposit that received something: its due and confirmed units. */
  deposits: { depositId: string; due: bigint; received: bigint }[];
}

export interface SettlementDecision {
  /** The status the rules reach (may equal the current one). */
  target: OrderStatus;
  /** true when `target` differs from the current status and the transition table allows it. */
  transition: boolean;
  /** The deposit that completed the order, if any. */
  paidDepositId: string | null;
  /** The payment that completed it (null when none, or when the deposit's payments were not given). */
  paidPaymentId: string | null;
  /** Overpayment to flag now (null when none, or already flagged). */
  overpayment: Overpayment | null;
  /** What the order's deposits become: all closed, open/lapsed ones settled, open ones lapsed, or nothing. */
  deposits: 'close' | 'settle' | 'lapse' | 'keep';
  lateEnd: Date;
}

/** End of the late window: payments detected up to this moment can still complete an order. */
export const lateWindowEnd = (expiresAt: Date, lateWindowS: number): Date => new Date(expiresAt.getTime() + lateWindowS * 1000);

const clampBps = (bps: number): bigint => BigInt(Number.isFinite(bps) ? Math.trunc(Math.max(0, Math.min(10_000, bps))) : 0);

/** The payment at which a deposit's running in-window sum first makes it paid (rule 4). */
function completingPayment(d: DepositReceipts, bps: bigint): ReceiptPayment | null {
  let sum = 0n;
  for (const p of d.payments ?? []) {
    sum += p.amount;
    if (sum * 10_000n >= d.due * (10_000n - bps)) return p;
  }
  return null;
}

const time = (d: Date | null | undefined): number => (d ? d.getTime() : Number.POSITIVE_INFINITY);

/** Σ confirmedᵢ / dueᵢ as an exact fraction num / den (deposits with no due are left out). */
function valueFraction(deposits: DepositReceipts[]): { num: bigint; den: bigint } {
  const counted = deposits.filter((d) => d.due > 0n);
  const den = counted.reduce((acc, d) => acc * d.due, 1n);
  const num = counted.reduce((acc, d) => acc + (d.confirmed * den) / d.due, 0n); // den / dueᵢ is exact
  return { num, den };
}

export function decideSettlement(input: SettlementInput): SettlementDecision {
  const { status, expiresAt, deposits, now } = input;
  const lateEnd = lateWindowEnd(expiresAt, input.lateWindowS);
  const bps = clampBps(input.toleranceBps);
  const isPaid = (d: DepositReceipts) => d.inWindow * 10_000n >= d.due * (10_000n - bps);
  const candidates = deposits
    .map((d, i) => ({ d, i, by: completingPayment(d, bps) }))
    .filter((c) => isPaid(c.d))
    .sort((a, b) => time(a.by?.confirmedAt) - time(b.by?.confirmedAt) || time(a.by?.detectedAt) - time(b.by?.detectedAt) || a.i - b.i);
  const paid = candidates[0];
  const anyConfirmed = deposits.some((d) => d.confirmed > 0n);
  const anyPending = deposits.some((d) => d.pending > 0n);
  const expired = now.getTime() >= expiresAt.getTime();

  let target: OrderStatus = status;
  if (paid) target = 'Success';
  else if (status === 'Success' && input.reorgLoss) target = 'Underpaid';
  else if (status === 'Created' || status === 'Processing') {
    if (anyPending) target = 'Processing';
    // Processing = a payment detected and the order not final: a confirmed partial payment keeps it
    // there (waiting for a top-up or expiry). Only losing every receipt (a reorg) goes back to Created.
    else if (!expired) target = anyConfirmed ? 'Processing' : 'Created';
    else target = anyConfirmed ? 'Underpaid' : 'Expired';
  } else if (status === 'Expired' && anyConfirmed && now.getTime() <= lateEnd.getTime()) target = 'Underpaid';

  let overpayment: Overpayment | null = null;
  if (paid && !input.overpaid) {
    const { num, den } = valueFraction(deposits);
    if (num > den) {
      const p = paid.d;
      overpayment = {
        depositId: p.id,
        due: p.due,
        received: p.confirmed,
        excess: ((num - den) * p.due) / den,
        excessIdr: ((num - den) * (p.dueIdr ?? 0n)) / den,
        deposits: deposits.filter((d) => d.confirmed > 0n).map((d) => ({ depositId: d.id, due: d.due, received: d.confirmed })),
      };
    }
  }

  return {
    target,
    transition: target !== status && canTransition(status, target),
    paidDepositId: paid?.d.id ?? null,
    paidPaymentId: paid?.by?.id ?? null,
    overpayment,
    deposits: now.getTime() > lateEnd.getTime() ? 'close' : target === 'Success' ? 'settle' : expired ? 'lapse' : 'keep',
    lateEnd,
  };
}
