/**
 * Payment states and the only moves between them. PaymentService derives the `where status in (…)`
 * guard of every status write from this table, so a write the table does not list matches no row.
 *
 * pending   → confirmed   deep enough under the network's finality rule, block hash unchanged
 * pending   → orphaned    its block was reorganised away before it counted
 * pending   → pending     re-scanned in another block (a reorg re-included it): block and hash change
 * orphaned  → pending     re-included in another block after it was orphaned
 * confirmed → pending     re-scanned in another block: a reorg deeper than the confirmation depth
 *                         moved it, so it waits for confirmations again rather than keep a stale block
 * confirmed → orphaned    the re-check of confirmed blocks (REORG_RECHECK_WINDOW_S) found its block
 *                         replaced: a reorg deeper than the confirmation depth dropped it. Both moves out
 *                         of confirmed stamp `reorged_at`; settlement raises `payment.reorged` for it
 */
export const PAYMENT_STATUSES = ['pending', 'confirmed', 'orphaned'] as const;
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];

export const PAYMENT_TRANSITIONS: Record<PaymentStatus, readonly PaymentStatus[]> = {
  pending: ['confirmed', 'orphaned', 'pending'],
  confirmed: ['pending', 'orphaned'],
  orphaned: ['pending'],
};

export const canPaymentTransition = (from: PaymentStatus, to: PaymentStatus): boolean => PAYMENT_TRANSITIONS[from].includes(to);

/** Statuses a payment may move to `to` from: the guard of a status write. */
export const paymentSourcesOf = (to: PaymentStatus): PaymentStatus[] => PAYMENT_STATUSES.filter((from) => canPaymentTransition(from, to));
