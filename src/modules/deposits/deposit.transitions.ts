/**
 * Deposit states and the only moves between them. Status writes (settlement) take their
 * `where status in (…)` guard from this table, so a write the table does not list matches no row.
 *
 * open    → settled   its order reached Success: the unique code returns to the pool, the address
 *                     stays watched until the late window ends (an extra transfer is an overpayment)
 * open    → closed    the order's late window is over without Success: nothing is watched any more
 * settled → closed    the late window after Success is over
 * closed is final: a closed deposit's unique code may already belong to another order.
 */
export const DEPOSIT_STATUSES = ['open', 'settled', 'closed'] as const;
export type DepositStatus = (typeof DEPOSIT_STATUSES)[number];

export const DEPOSIT_TRANSITIONS: Record<DepositStatus, readonly DepositStatus[]> = {
  open: ['settled', 'closed'],
  settled: ['closed'],
  closed: [],
};

export const canDepositTransition = (from: DepositStatus, to: DepositStatus): boolean => DEPOSIT_TRANSITIONS[from].includes(to);

/** Statuses a deposit may move to `to` from: the guard of a status write. */
export const depositSourcesOf = (to: DepositStatus): DepositStatus[] => DEPOSIT_STATUSES.filter((from) => canDepositTransition(from, to));

/** Statuses whose address the watchers still observe. */
export const WATCHED_DEPOSIT_STATUSES: readonly DepositStatus[] = ['open', 'settled'];
