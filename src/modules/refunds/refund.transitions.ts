/**
 * Refund states and the only moves between them. This table is the documentation (docs/refunds.md
 * "States"); RefundStatusService takes its `where status in (…)` guard from it, so a move not listed
 * matches no row.
 *
 * requested → claimed    the destination address is known: the customer claimed it on the claim page,
 *                        or the merchant entered one they verified themselves
 * requested → approved   ONLY when the merchant gave the address at creation and approval came with it
 *                        (an auto-approved gateway-offered refund, or the merchant's own approval)
 * claimed   → approved   the owner or a role allowed to refund approved it, re-authenticated (or the
 *                        auto-approve limit covers a gateway-offered kind)
 * approved  → sending    the transfer is signed and STORED (raw transaction and hash) before broadcast
 * sending   → approved   the stored transfer can never be included (`txState` says dead): sign anew
 * sending   → confirmed  the transfer's block is final at the network's confirmation depth
 * sending   → sending    (no move) a reorg took the block: the stored transfer is broadcast again
 * requested, claimed, approved → cancelled   by the merchant (nothing was signed)
 * any non-final → failed  with a reason (the transfer reverted, the funds are gone, …)
 * confirmed, cancelled and failed are final.
 */
export const REFUND_STATUSES = ['requested', 'claimed', 'approved', 'sending', 'confirmed', 'cancelled', 'failed'] as const;
export type RefundStatus = (typeof REFUND_STATUSES)[number];

export const REFUND_TRANSITIONS: Record<RefundStatus, readonly RefundStatus[]> = {
  requested: ['claimed', 'approved', 'cancelled', 'failed'],
  claimed: ['approved', 'cancelled', 'failed'],
  approved: ['sending', 'cancelled', 'failed'],
  sending: ['confirmed', 'approved', 'failed'],
  confirmed: [],
  cancelled: [],
  failed: [],
};

export const canRefundTransition = (from: RefundStatus, to: RefundStatus): boolean => REFUND_TRANSITIONS[from].includes(to);

/** Statuses a refund may move to `to` from: the guard of a status write. */
export const refundSourcesOf = (to: RefundStatus): RefundStatus[] => REFUND_STATUSES.filter((from) => canRefundTransition(from, to));

/** Statuses whose amount does not count against what may still be refunded. */
export const VOID_REFUND_STATUSES: readonly RefundStatus[] = ['cancelled', 'failed'];

/** Why a refund failed (stable codes in `refunds.failure_reason` and the `refund.failed` webhook). */
export const REFUND_FAILURE_REASONS = ['transfer_reverted', 'insufficient_funds', 'fee_exceeds_amount', 'network_not_supported'] as const;
export type RefundFailureReason = (typeof REFUND_FAILURE_REASONS)[number];

/** Refund kinds: the gateway offers all but `merchant` itself (no judgement needed). */
export const REFUND_KINDS = ['overpayment_excess', 'late_receipt', 'wrong_token', 'partial_payment', 'merchant'] as const;
export type RefundKind = (typeof REFUND_KINDS)[number];

export const FEE_MODES = ['tank', 'deduct'] as const;
export type RefundFeeMode = (typeof FEE_MODES)[number];
