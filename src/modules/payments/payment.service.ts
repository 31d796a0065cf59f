import type { EntityManager } from '@mikro-orm/postgresql';
import type { ObservedTransfer } from '../../chains/chain-adapter.js';
import type { Environment, Network } from '../../common/environment.js';

/** A transfer matched to the deposit it paid into. */
export interface MatchedTransfer {
  transfer: ObservedTransfer;
  depositId: string;
  orderId: string;
  tokenId: string;
}

export interface PendingPayment {
  id: string;
  orderId: string;
  blockNumber: bigint;
  blockHash: string;
}

/**
 * Records what watchers observe. Idempotent: the unique (environment, network, tx hash, index) key
 * makes a re-scan a no-op, and a transfer re-included in another block after a reorg updates its
 * block (back to pending) instead of counting twice.
 */
export class PaymentService {
  /** Inserts or refreshes payments; returns the orders whose payments changed. Call inside the cursor's transaction. */
  async record(em: EntityManager, environment: Environment, network: Network, matched: MatchedTransfer[]): Promise<string[]> {
    const touched = new Set<string>();
    for (const m of matched) {
      const t = m.transfer;
      const rows = await em.execute<{ order_id: string; changed: boolean }[]>(
        `insert into payments (id, environment, network, tx_hash, log_index, block_number, block_hash, token_id, deposit_id, order_id, from_address, to_address, amount, late)
         select gen_random_uuid(), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, now() > o.expires_at from orders o where o.id = ?
         on conflict (environment, network, tx_hash, log_index) do update
           set block_number = excluded.block_number, block_hash = excluded.block_hash, status = 'pending', orphaned_at = null, confirmed_at = null
           where payments.block_hash <> excluded.block_hash or payments.status = 'orphaned'
         returning order_id, true as changed`,
        [environment, network, t.txHash, t.index, t.blockNumber.toString(), t.blockHash, m.tokenId, m.depositId, m.orderId, t.from, t.to, t.amount.toString(), m.orderId],
      );
      for (const r of rows) touched.add(r.order_id);
    }
    return [...touched];
  }

  async pending(em: EntityManager, environment: Environment, network: Network): Promise<PendingPayment[]> {
    const rows = await em.execute<{ id: string; order_id: string; block_number: string; block_hash: string }[]>(
      `select id, order_id, block_number, block_hash from payments where environment = ? and network = ? and status = 'pending' order by block_number`,
      [environment, network],
    );
    return rows.map((r) => ({ id: r.id, orderId: r.order_id, blockNumber: BigInt(r.block_number), blockHash: r.block_hash }));
  }

  async markConfirmed(em: EntityManager, ids: string[]): Promise<void> {
    if (ids.length) await em.execute(`update payments set status = 'confirmed', confirmed_at = now() where id in (${ids.map(() => '?').join(',')}) and status = 'pending'`, ids);
  }

  /** Its block was reorganised away: never counted (a re-inclusion elsewhere revives it via `record`). */
  async markOrphaned(em: EntityManager, ids: string[]): Promise<void> {
    if (ids.length) await em.execute(`update payments set status = 'orphaned', orphaned_at = now() where id in (${ids.map(() => '?').join(',')}) and status = 'pending'`, ids);
  }
}
