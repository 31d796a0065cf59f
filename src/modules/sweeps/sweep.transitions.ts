/**
 * Sweep states and the only moves between them. This table is the documentation (docs/sweeps.md
 * "States", generated from it); SweepStatusService takes its `where status in (…)` guard from it, so a
 * move not listed matches no row.
 *
 * planned  → funding    the gas tank's top-up for this deposit is signed and stored (before broadcast)
 * planned  → funded     no top-up needed: the gas tank pays the fee itself (`fee-payer`), or the
 *                       deposit already holds the gas for one transfer, or the tank sweeps a batch itself
 * funding  → funded     the top-up is included on chain (successfully)
 * funding  → planned    the top-up died (expired, or reverted): plan it again; nothing left the deposit
 * funded   → sending    the transfer is signed with the amount read from chain and stored before broadcast
 * funded   → planned    the deposit's gas no longer covers the transfer (the fee rose): top it up again
 * sending  → sent       the transfer is included in a block (not yet deep enough)
 * sending  → funded     the transfer died before inclusion (TRON/SOLANA expiry certain): sign anew
 * sent     → confirmed  the transfer's block is final at the network's confirmation depth
 * sent     → sending    ONLY a reorg: the block holding the transfer was replaced
 * any non-final → failed  with a reason (the transfer reverted, the settlement wallet vanished, …)
 * confirmed and failed are final.
 */
export const SWEEP_STATUSES = ['planned', 'funding', 'funded', 'sending', 'sent', 'confirmed', 'failed'] as const;
export type SweepStatus = (typeof SWEEP_STATUSES)[number];

export const SWEEP_TRANSITIONS: Record<SweepStatus, readonly SweepStatus[]> = {
  planned: ['funding', 'funded', 'failed'],
  funding: ['funded', 'planned', 'failed'],
  funded: ['sending', 'planned', 'failed'],
  sending: ['sent', 'funded', 'failed'],
  sent: ['confirmed', 'sending', 'failed'],
  confirmed: [],
  failed: [],
};

export const canSweepTransition = (from: SweepStatus, to: SweepStatus): boolean => SWEEP_TRANSITIONS[from].includes(to);

/** Statuses a sweep may move to `to` from: the guard of a status write. */
export const sweepSourcesOf = (to: SweepStatus): SweepStatus[] => SWEEP_STATUSES.filter((from) => canSweepTransition(from, to));

/** Final statuses: a sweep in one of them is no longer open (the partial unique index `sweeps_open_unique`). */
export const FINAL_SWEEP_STATUSES: readonly SweepStatus[] = ['confirmed', 'failed'];

/** Why a sweep failed (stable codes in `sweeps.failure_reason` and the `sweep.failed` webhook). */
export const SWEEP_FAILURE_REASONS = ['transfer_reverted', 'settlement_wallet_removed', 'nothing_to_sweep'] as const;
export type SweepFailureReason = (typeof SWEEP_FAILURE_REASONS)[number];
