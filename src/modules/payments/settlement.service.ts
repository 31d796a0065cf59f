import type { EntityManager } from '@mikro-orm/postgresql';
import { DomainError } from '../../common/errors.js';
import type { OrderStatusService } from '../orders/order-status.service.js';
import { canTransition, type OrderStatus } from '../orders/order.transitions.js';
import { PAYMENT_LATE, PAYMENT_OVERPAID, type OrderEventReasons } from '../events/event.catalogue.js';
import { recordOrderEvent } from '../events/order-event.writer.js';

export interface SettlementOptions {
  /** Payments detected up to this long after expiry can still complete an order. */
  lateWindowS: number;
}

interface DepositTotals {
  id: string;
  due: bigint;
  confirmed: bigint;
  pending: bigint;
  toleranceBps: number;
}

// Extra outbox events besides status changes (webhooks deliver them); defined in the event catalogue.
export { PAYMENT_LATE, PAYMENT_OVERPAID };

/**
 * The one place that decides an order's status from its payments (watchers only record). Every
 * call recomputes from the payments table, so it is idempotent and safe to re-run after a crash.
 *
 * - Success: confirmed receipts into one deposit reach its total (minus the merchant's tolerance),
 *   from a payment detected before expiry + late window.
 * - Processing: some payment is still waiting for confirmations.
 * - Underpaid: at expiry, something confirmed but not enough (a late top-up can still complete it).
 * - Expired: at expiry, nothing confirmed.
 * Overpayments and late payments are flagged and written as outbox events, never lost.
 */
export class SettlementService {
  constructor(
    private readonly orderStatus: OrderStatusService,
    private readonly opts: SettlementOptions,
  ) {}

  /** Settles one order in its own transaction. */
  async settle(em: EntityManager, orderId: string, now = new Date()): Promise<OrderStatus> {
    return em.transactional((tx) => this.settleIn(tx, orderId, now));
  }

  async settleIn(tx: EntityManager, orderId: string, now: Date): Promise<OrderStatus> {
    const [order] = await tx.execute<{ status: OrderStatus; expires_at: Date; overpaid: boolean; settings: { paymentToleranceBps?: number } }[]>(
      `select o.status, o.expires_at, o.overpaid, m.settings from orders o join merchants m on m.id = o.merchant_id where o.id = ? for update of o`,
      [orderId],
    );
    if (!order) throw new DomainError('ORDER_NOT_FOUND', 'Order not found');
    const expiresAt = new Date(order.expires_at);
    const lateEnd = new Date(expiresAt.getTime() + this.opts.lateWindowS * 1000);
    const toleranceBps = Math.max(0, Math.min(10_000, Number(order.settings?.paymentToleranceBps ?? 0)));

    const rows = await tx.execute<{ id: string; total_amount: string; confirmed: string; pending: string; paid_in_window: string }[]>(
      `select d.id, d.total_amount,
              coalesce(sum(p.amount) filter (where p.status = 'confirmed'), 0) as confirmed,
              coalesce(sum(p.amount) filter (where p.status = 'pending'), 0) as pending,
              coalesce(sum(p.amount) filter (where p.status = 'confirmed' and p.detected_at <= ?), 0) as paid_in_window
       from deposits d left join payments p on p.deposit_id = d.id
       where d.order_id = ? group by d.id, d.total_amount`,
      [lateEnd, orderId],
    );
    const deposits: (DepositTotals & { inWindow: bigint })[] = rows.map((r) => ({
      id: r.id,
      due: BigInt(r.total_amount),
      confirmed: BigInt(r.confirmed),
      pending: BigInt(r.pending),
      inWindow: BigInt(r.paid_in_window),
      toleranceBps,
    }));
    for (const d of deposits) await tx.execute(`update deposits set amount_received = ? where id = ?`, [d.confirmed.toString(), d.id]);

    const reaches = (d: DepositTotals & { inWindow: bigint }) => d.inWindow * 10_000n >= d.due * BigInt(10_000 - d.toleranceBps);
    const paid = deposits.find(reaches);
    const anyConfirmed = deposits.some((d) => d.confirmed > 0n);
    const anyPending = deposits.some((d) => d.pending > 0n);
    const expired = now >= expiresAt;

    let target: OrderStatus = order.status;
    if (paid) target = 'Success';
    else if (order.status === 'Created' || order.status === 'Processing') {
      if (anyPending) target = 'Processing';
      else if (!expired) target = 'Created';
      else target = anyConfirmed ? 'Underpaid' : 'Expired';
    } else if (order.status === 'Expired' && anyConfirmed && now <= lateEnd) target = 'Underpaid';

    if (target !== order.status && canTransition(order.status, target)) {
      await this.orderStatus.transition(tx, orderId, target, { kind: 'settlement', confirmed: deposits.map((d) => ({ depositId: d.id, confirmed: d.confirmed.toString(), due: d.due.toString() })) });
    }
    if (paid && paid.confirmed > paid.due && !order.overpaid) {
      await tx.execute(`update orders set overpaid = true where id = ?`, [orderId]);
      await this.event(tx, orderId, PAYMENT_OVERPAID, { depositId: paid.id, due: paid.due.toString(), received: paid.confirmed.toString(), excess: (paid.confirmed - paid.due).toString() });
    }
    // Late payments: reported once each, whatever they did to the status.
    const late = await tx.execute<{ id: string; tx_hash: string; amount: string; in_window: boolean }[]>(
      `select p.id, p.tx_hash, p.amount, p.detected_at <= ? as in_window from payments p where p.order_id = ? and p.late and p.status = 'confirmed'
         and not exists (select 1 from order_events e where e.order_id = p.order_id and e.type = ? and e.reason->>'paymentId' = p.id::text)`,
      [lateEnd, orderId, PAYMENT_LATE],
    );
    for (const p of late) {
      await this.event(tx, orderId, PAYMENT_LATE, { paymentId: p.id, txHash: p.tx_hash, amount: p.amount, withinLateWindow: p.in_window });
    }
    // A paid order's deposits release their unique codes but stay watched until the late window is
    // over (an extra transfer is then an overpayment, not a lost payment); after it nothing is watched.
    if (now > lateEnd) await tx.execute(`update deposits set status = 'closed' where order_id = ? and status <> 'closed'`, [orderId]);
    else if (target === 'Success') await tx.execute(`update deposits set status = 'settled' where order_id = ? and status = 'open'`, [orderId]);
    return target;
  }

  /** Moves due orders past expiry (the expiry job). Skips rows another worker holds. Returns how many were settled. */
  async expireDue(em: EntityManager, now = new Date(), limit = 500): Promise<number> {
    const due = await em.execute<{ id: string }[]>(
      `select id from orders where status in ('Created','Processing') and expires_at <= ? order by expires_at limit ${Number(limit)}`,
      [now],
    );
    for (const { id } of due) await this.settle(em, id, now);
    // Close deposits whose late window is over so their unique codes return to the pool.
    await em.execute(
      `update deposits d set status = 'closed' from orders o where o.id = d.order_id and d.status in ('open', 'settled') and o.expires_at + make_interval(secs => ?) < ?`,
      [this.opts.lateWindowS, now],
    );
    return due.length;
  }

  private async event<T extends typeof PAYMENT_LATE | typeof PAYMENT_OVERPAID>(tx: EntityManager, orderId: string, type: T, reason: OrderEventReasons[T]): Promise<void> {
    await recordOrderEvent(tx, orderId, type, reason);
  }
}
