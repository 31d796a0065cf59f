/**
 * Deposit states and the only moves between them. Status writes (settlement) take their
 * `where status in (…)` guard from this table, so a write the table does not list matches no row.
 *
 * open    → settled   its order reached Success: the unique code returns to the pool, the address
 *                     stays watched until the late window ends (an extra transfer is an overpayment)
 * open    → lapsed    its order expired unpaid: the unique code returns to the pool at once (another
 *                     order of the merchant may take it), the address stays watched until the late
 *                     window ends, so a late payment is still found by its address
 * open    → closed    the order's late window is over without Success: nothing is watched any more
 * lapsed  → settled   a late payment completed the order inside the late window
 * lapsed  → closed    the late window is over
 * settled → closed    the late window after Success is over
 * closed is final. Only `open` holds a unique code: a lapsed, settled or closed deposit's code may
 * already belong to another order (of the same merchant, token and network).
 */
export const DEPOSIT_STATUSES = ['open', 'lapsed', 'settled', 'closed'] as const;
export type DepositStatus = (typeof DEPOSIT_STATUSES)[number];

export const DEPOSIT_TRANSITIONS: Record<DepositStatus, readonly DepositStatus[]> = {
  open: ['lapsed', 'settled', 'closed'],
  lapsed: ['settled', 'closed'],
  settled: ['closed'],
  closed: [],
};

export const canDepositTransition = (from: DepositStatus, to: DepositStatus): boolean => DEPOSIT_TRANSITIONS[from].includes(to);

/** Statuses a deposit may move to `to` from: the guard of a status write. */
export const depositSourcesOf = (to: DepositStatus): DepositStatus[] => DEPOSIT_STATUSES.filter((from) => canDepositTransition(from, to));

/** Statuses whose address the watchers still observe. */
export const WATCHED_DEPOSIT_STATUSES: readonly DepositStatus[] = ['open', 'lapsed', 'settled'];

/** The one status that holds a unique code (its pool is the open deposits of one wallet, network and token). */
export const CODE_HOLDING_DEPOSIT_STATUS: DepositStatus = 'open';
