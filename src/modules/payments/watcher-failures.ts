import type { EntityManager } from '@mikro-orm/postgresql';
import type { ObservedTransfer } from '../../chains/chain-adapter.js';
import type { Environment, Network } from '../../common/environment.js';

/** A matched transfer that could not be recorded: set aside in `watcher_failures`, never retried inline. */
export interface RecordFailure {
  transfer: ObservedTransfer;
  depositId: string;
  error: string;
}

/**
 * Writes one observed transfer (a payment or an unattributed receipt) under its own savepoint of the
 * watcher's cursor transaction: a row the database refuses is rolled back alone and set aside in
 * `watcher_failures` (the `label` prefixes its error), so one bad transfer cannot roll back the batch
 * and its cursor (which froze the whole network). Returns what `write` returned, or the failure.
 */
export async function writeOrSetAside<T>(
  em: EntityManager,
  environment: Environment,
  network: Network,
  m: { transfer: ObservedTransfer; depositId: string; orderId: string },
  label: string | null,
  write: () => Promise<T>,
): Promise<{ ok: true; value: T } | { ok: false; failure: RecordFailure }> {
  const t = m.transfer;
  await em.execute('savepoint record_transfer');
  try {
    const value = await write();
    await em.execute('release savepoint record_transfer');
    return { ok: true, value };
  } catch (err) {
    await em.execute('rollback to savepoint record_transfer');
    const error = err instanceof Error ? err.message : String(err);
    await em.execute(
      `insert into watcher_failures (environment, network, tx_hash, log_index, block_number, block_hash, token_address, from_address, to_address, amount, deposit_id, order_id, error)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       on conflict (environment, network, tx_hash, log_index) do update
         set attempts = watcher_failures.attempts + 1, error = excluded.error, block_number = excluded.block_number, block_hash = excluded.block_hash, updated_at = now()`,
      [
        environment,
        network,
        t.txHash,
        t.index,
        t.blockNumber.toString(),
        t.blockHash,
        t.token,
        t.from,
        t.to,
        t.amount.toString(),
        m.depositId,
        m.orderId,
        label ? `${label}: ${error}` : error,
      ],
    );
    return { ok: false, failure: { transfer: t, depositId: m.depositId, error } };
  }
}
