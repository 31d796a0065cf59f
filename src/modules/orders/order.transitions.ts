/**
 * Order states and the only moves between them. This table is the documentation (docs/order-lifecycle.md
 * "Orders", generated from it); OrderStatusService refuses anything not listed.
 *
 * Processing means: a payment was detected (pending, or confirmed short of the total) and the order
 * is not final yet.
 *
 * Created     → Processing  a payment was seen (pending, or confirmed but short of the total)
 * Created     → Success     confirmed receipts reach the total due (within tolerance)
 * Created     → Underpaid   expiry with some confirmed receipts, not enough
 * Created     → Expired     expiry with nothing received
 * Processing  → Success     confirmations (a top-up) reach the total due
 * Processing  → Created     ONLY a reorg: every payment seen was orphaned
 * Processing  → Underpaid / Expired   expiry (as above) once pending payments settle or drop
 * Underpaid   → Success     a top-up inside the late window completes the total
 * Expired     → Success     a full payment arrives inside the late window
 * Expired     → Underpaid   a partial payment arrives inside the late window
 * Success     → Underpaid   a confirmed payment that completed it was reorganised away (a reorg deeper
 *                           than the confirmation depth) and what remains no longer pays it; the order
 *                           is flagged `reorged` and a `payment.reorged` event raised (settlement.rules.ts)
 */
export const ORDER_STATUSES = ['Created', 'Processing', 'Success', 'Underpaid', 'Expired'] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];

export const ORDER_TRANSITIONS: Record<OrderStatus, readonly OrderStatus[]> = {
  Created: ['Processing', 'Success', 'Underpaid', 'Expired'],
  Processing: ['Success', 'Created', 'Underpaid', 'Expired'],
  Underpaid: ['Success'],
  Expired: ['Success', 'Underpaid'],
  Success: ['Underpaid'],
};

export const canTransition = (from: OrderStatus, to: OrderStatus): boolean => ORDER_TRANSITIONS[from].includes(to);

/** Statuses in which an order still accepts quotes and deposits. */
export const OPEN_STATUSES: readonly OrderStatus[] = ['Created', 'Processing'];
