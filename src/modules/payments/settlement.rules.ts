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
 *    payments detected no later than lateEnd). Orphaned payments count nowhere.
 * 2. lateEnd = expiresAt + lateWindowS. expired ⇔ now ≥ expiresAt.
 * 3. Tolerance: toleranceBps is clamped to 0…10 000 (anything not a finite number counts as 0, a
 *    fraction is truncated). A deposit is paid ⇔ inWindow × 10 000 ≥ due × (10 000 − toleranceBps):
 *    short by at most toleranceBps / 10 000 of the total still completes the order. Paid deposits are
 *    judged one by one (the first paid deposit, in the order given, is the one reported).
 * 4. Target status:
 *      some deposit paid                               → Success
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
 *    (`transition` is false): e.g. Success never goes back, whatever the receipts say.
 * 5. Overpayment: the paid deposit received more than due (confirmed > due) and the order is not
 *    flagged yet → flag it once, with due, received and excess = received − due.
 * 6. Deposits: now > lateEnd → every deposit closes (not watched any more, its unique code is free);
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
}

export interface Overpayment {
  depositId: string;
  due: bigint;
  received: bigint;
  excess: bigint;
}

export interface SettlementDecision {
  /** The status the rules reach (may equal the current one). */
  target: OrderStatus;
  /** true when `target` differs from the current status and the transition table allows it. */
  transition: boolean;
  /** The deposit that completed the order, if any. */
  paidDepositId: string | null;
  /** Overpayment to flag now (null when none, or already flagged). */
  overpayment: Overpayment | null;
  /** What the order's deposits become: all closed, open/lapsed ones settled, open ones lapsed, or nothing. */
  deposits: 'close' | 'settle' | 'lapse' | 'keep';
  lateEnd: Date;
}

/** End of the late window: payments detected up to this moment can still complete an order. */
export const lateWindowEnd = (expiresAt: Date, lateWindowS: number): Date => new Date(expiresAt.getTime() + lateWindowS * 1000);

const clampBps = (bps: number): bigint => BigInt(Number.isFinite(bps) ? Math.trunc(Math.max(0, Math.min(10_000, bps))) : 0);

export function decideSettlement(input: SettlementInput): SettlementDecision {
  const { status, expiresAt, deposits, now } = input;
  const lateEnd = lateWindowEnd(expiresAt, input.lateWindowS);
  const bps = clampBps(input.toleranceBps);
  const paid = deposits.find((d) => d.inWindow * 10_000n >= d.due * (10_000n - bps));
  const anyConfirmed = deposits.some((d) => d.confirmed > 0n);
  const anyPending = deposits.some((d) => d.pending > 0n);
  const expired = now.getTime() >= expiresAt.getTime();

  let target: OrderStatus = status;
  if (paid) target = 'Success';
  else if (status === 'Created' || status === 'Processing') {
    if (anyPending) target = 'Processing';
    // Processing = a payment detected and the order not final: a confirmed partial payment keeps it
    // there (waiting for a top-up or expiry). Only losing every receipt (a reorg) goes back to Created.
    else if (!expired) target = anyConfirmed ? 'Processing' : 'Created';
    else target = anyConfirmed ? 'Underpaid' : 'Expired';
  } else if (status === 'Expired' && anyConfirmed && now.getTime() <= lateEnd.getTime()) target = 'Underpaid';

  const overpayment =
    paid && paid.confirmed > paid.due && !input.overpaid ? { depositId: paid.id, due: paid.due, received: paid.confirmed, excess: paid.confirmed - paid.due } : null;

  return {
    target,
    transition: target !== status && canTransition(status, target),
    paidDepositId: paid?.id ?? null,
    overpayment,
    deposits: now.getTime() > lateEnd.getTime() ? 'close' : target === 'Success' ? 'settle' : expired ? 'lapse' : 'keep',
    lateEnd,
  };
}
