import type { EntityManager } from '@mikro-orm/postgresql';
import type { ObservedTransfer } from '../../chains/chain-adapter.js';
import { nativeAsset } from '../../chains/registry.js';
import type { Environment, Network } from '../../common/environment.js';
import { PAYMENT_UNATTRIBUTED } from '../events/event.catalogue.js';
import { recordOrderEvent } from '../events/order-event.writer.js';
import type { PendingPayment } from './payment.service.js';
import { paymentSourcesOf, type PaymentStatus } from './payment.transitions.js';
import type { ReceiptReason } from './unattributed-receipt.entity.js';
import { writeOrSetAside, type RecordFailure } from './watcher-failures.js';

/** A transfer into a deposit address that is not that deposit's payment, with the reason. */
export interface UnattributedTransfer {
  transfer: ObservedTransfer;
  depositId: string;
  orderId: string;
  /** Registry id of the token that arrived (a token of the network the transfer happened on); null for the native coin. */
  tokenId: string | null;
  reason: ReceiptReason;
}

const sourcesSql = (to: PaymentStatus) =>
  paymentSourcesOf(to)
    .map((s) => `'${s}'`)
    .join(',');

/**
 * Records receipts that never count toward an order (RECEIPT_REASONS: late, wrong token or network, native coin) and reports each once it
 * is confirmed (`payment.unattributed` event → `transaction.unattributed` webhook). Same idempotency and
 * reorg rules as PaymentService: unique per (environment, network, tx hash, index), re-inclusion in
 * another block moves it back to pending. A transfer already recorded as a payment (re-scanned after
 * its deposit closed, e.g. after a reorg rewind) is never recorded here too: nothing counts twice.
 */
export class UnattributedReceiptService {
  /** Inside the watcher's cursor transaction; one savepoint per row, a refused row goes to `watcher_failures`. */
  async record(
    em: EntityManager,
    environment: Environment,
    network: Network,
    items: UnattributedTransfer[],
  ): Promise<{ recorded: number; failed: RecordFailure[] }> {
    if (!items.length) return { recorded: 0, failed: [] };
    if (!em.isInTransaction()) return em.transactional((tx) => this.record(tx, environment, network, items));
    let recorded = 0;
    const failed: RecordFailure[] = [];
    for (const m of items) {
      const t = m.transfer;
      const r = await writeOrSetAside(em, environment, network, m, `unattributed (${m.reason})`, () =>
        em.execute<{ id: string }[]>(
          `insert into unattributed_receipts (environment, network, tx_hash, log_index, block_number, block_hash, token_id, deposit_id, order_id, from_address, to_address, amount, reason)
           select ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
           where not exists (select 1 from payments p where p.environment = ? and p.network = ? and p.tx_hash = ? and p.log_index = ?)
           on conflict (environment, network, tx_hash, log_index) do update
             set block_number = excluded.block_number, block_hash = excluded.block_hash, status = 'pending', orphaned_at = null, confirmed_at = null
             where (unattributed_receipts.block_hash <> excluded.block_hash or unattributed_receipts.status = 'orphaned') and unattributed_receipts.status in (${sourcesSql('pending')})
           returning id`,
          [
            environment,
            network,
            t.txHash,
            t.index,
            t.blockNumber.toString(),
            t.blockHash,
            m.tokenId,
            m.depositId,
            m.orderId,
            t.from,
            t.to,
            t.amount.toString(),
            m.reason,
            environment,
            network,
            t.txHash,
            t.index,
          ],
        ),
      );
      if (r.ok) recorded += r.value.length;
      else failed.push(r.failure);
    }
    return { recorded, failed };
  }

  /** Pending receipts; with `since`, only those detected on the chain the watcher follows now (see `PaymentService.pending`). */
  async pending(em: EntityManager, environment: Environment, network: Network, since: Date | null = null): Promise<PendingPayment[]> {
    const rows = await em.execute<{ id: string; order_id: string; block_number: string; block_hash: string }[]>(
      `select id, order_id, block_number, block_hash from unattributed_receipts where environment = ? and network = ? and status = 'pending' ${since ? 'and detected_at >= ?' : ''} order by block_number`,
      since ? [environment, network, since] : [environment, network],
    );
    return rows.map((r) => ({ id: r.id, orderId: r.order_id, blockNumber: BigInt(r.block_number), blockHash: r.block_hash }));
  }

  /** Confirms receipts and reports each to its merchant once (an event per receipt, whatever reorgs did before). */
  async markConfirmed(em: EntityManager, ids: string[]): Promise<void> {
    if (!ids.length) return;
    const rows = await em.execute<
      {
        id: string;
        order_id: string;
        deposit_id: string;
        tx_hash: string;
        log_index: number;
        network: Network;
        to_address: string;
        amount: string;
        reason: string;
        token_address: string | null;
        symbol: string | null;
        decimals: number | null;
      }[]
    >(
      `with c as (update unattributed_receipts set status = 'confirmed', confirmed_at = now() where id in (${ids.map(() => '?').join(',')}) and status in (${sourcesSql('confirmed')}) returning *)
       select c.id, c.order_id, c.deposit_id, c.tx_hash, c.log_index, c.network, c.to_address, c.amount::text as amount, c.reason, t.address as token_address, t.symbol, t.decimals
       from c left join tokens t on t.id = c.token_id
       where not exists (select 1 from order_events e where e.order_id = c.order_id and e.type = ? and e.reason->>'receiptId' = c.id::text)`,
      [...ids, PAYMENT_UNATTRIBUTED],
    );
    for (const r of rows) {
      // native coin: no token address; the coin's symbol and decimals
      const native = nativeAsset(r.network);
      await recordOrderEvent(em, r.order_id, PAYMENT_UNATTRIBUTED, {
        receiptId: r.id,
        depositId: r.deposit_id,
        txHash: r.tx_hash,
        logIndex: r.log_index,
        network: r.network,
        tokenAddress: r.token_address,
        tokenSymbol: r.symbol ?? native.symbol,
        decimals: r.decimals ?? native.decimals,
        toAddress: r.to_address,
        amount: r.amount,
        reason: r.reason,
      });
    }
  }

  async markOrphaned(em: EntityManager, ids: string[]): Promise<void> {
    if (ids.length)
      await em.execute(
        `update unattributed_receipts set status = 'orphaned', orphaned_at = now() where id in (${ids.map(() => '?').join(',')}) and status in (${sourcesSql('orphaned')})`,
        ids,
      );
  }
}
