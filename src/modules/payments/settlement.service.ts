import type { EntityManager } from '@mikro-orm/postgresql';
import { DomainError } from '../../common/errors.js';
import { depositSourcesOf, type DepositStatus } from '../deposits/deposit.transitions.js';
import type { OrderStatusService } from '../orders/order-status.service.js';
import type { OrderStatus } from '../orders/order.transitions.js';
import { PAYMENT_LATE, PAYMENT_OVERPAID, type OrderEventReasons } from '../events/event.catalogue.js';
import { recordOrderEvent } from '../events/order-event.writer.js';
import { decideSettlement, lateWindowEnd } from './settlement.rules.js';
import { rollupColumns, rollupDelta } from '../orders/order-stats.sql.js';

export interface SettlementOptions {
  /** Payments detected up to this long after expiry can still complete an order. */
  lateWindowS: number;
}

/** `status in (…)` guard of a write moving deposits to `to`, from the transition table. */
const depositSourcesSql = (to: DepositStatus) => depositSourcesOf(to).map((s) => `'${s}'`).join(',');

// Extra outbox events besides status changes (webhooks deliver them); defined in the event catalogue.
export { PAYMENT_LATE, PAYMENT_OVERPAID };

/**
 * Applies the settlement decision (settlement.rules.ts, where the rules are written) to an order:
 * reads its receipts, writes its status, flags, events and deposit states. Watchers only record;
 * this is the one place that moves an order because of its payments. Every call recomputes from the
 * payments table, so it is idempotent and safe to re-run after a crash. Overpayments and late
 * payments are flagged and written as outbox events, never lost.
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
    const lateEnd = lateWindowEnd(expiresAt, this.opts.lateWindowS);

    const rows = await tx.execute<{ id: string; total_amount: string; confirmed: string; pending: string; paid_in_window: string }[]>(
      `select d.id, d.total_amount,
              coalesce(sum(p.amount) filter (where p.status = 'confirmed'), 0) as confirmed,
              coalesce(sum(p.amount) filter (where p.status = 'pending'), 0) as pending,
              coalesce(sum(p.amount) filter (where p.status = 'confirmed' and p.detected_at <= ?), 0) as paid_in_window
       from deposits d left join payments p on p.deposit_id = d.id
       where d.order_id = ? group by d.id, d.total_amount`,
      [lateEnd, orderId],
    );
    const deposits = rows.map((r) => ({ id: r.id, due: BigInt(r.total_amount), confirmed: BigInt(r.confirmed), pending: BigInt(r.pending), inWindow: BigInt(r.paid_in_window) }));
    for (const d of deposits) await tx.execute(`update deposits set amount_received = ? where id = ?`, [d.confirmed.toString(), d.id]);

    const decision = decideSettlement({
      status: order.status,
      expiresAt,
      overpaid: order.overpaid,
      deposits,
      toleranceBps: Number(order.settings?.paymentToleranceBps ?? 0),
      now,
      lateWindowS: this.opts.lateWindowS,
    });
    const target = decision.transition ? decision.target : order.status;
    if (decision.transition) {
      await this.orderStatus.transition(tx, orderId, target, { kind: 'settlement', confirmed: deposits.map((d) => ({ depositId: d.id, confirmed: d.confirmed.toString(), due: d.due.toString() })) }, { depositId: decision.paidDepositId });
    }
    const over = decision.overpayment;
    if (over) {
      // The paying deposit received more since it settled the order: its units on the order follow.
      // The rollup follows in the same statement (old units out, new in).
      await tx.execute(
        `with prev as (select * from orders where id = ?),
         o as (update orders set overpaid = true, paid_amount = case when paid_deposit_id = ? then ? else paid_amount end where id = ? returning *),
         ${rollupDelta('r', `${rollupColumns(-1, 'prev')} union all ${rollupColumns(1, 'o')}`)}
         select 1 from o`,
        [orderId, over.depositId, over.received.toString(), orderId],
      );
      await this.event(tx, orderId, PAYMENT_OVERPAID, { depositId: over.depositId, due: over.due.toString(), received: over.received.toString(), excess: over.excess.toString() });
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
    if (decision.deposits === 'close') await tx.execute(`update deposits set status = 'closed' where order_id = ? and status in (${depositSourcesSql('closed')})`, [orderId]);
    else if (decision.deposits === 'settle') await tx.execute(`update deposits set status = 'settled' where order_id = ? and status in (${depositSourcesSql('settled')})`, [orderId]);
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
      `update deposits d set status = 'closed' from orders o where o.id = d.order_id and d.status in (${depositSourcesSql('closed')}) and o.expires_at + make_interval(secs => ?) < ?`,
      [this.opts.lateWindowS, now],
    );
    return due.length;
  }

  private async event<T extends typeof PAYMENT_LATE | typeof PAYMENT_OVERPAID>(tx: EntityManager, orderId: string, type: T, reason: OrderEventReasons[T]): Promise<void> {
    await recordOrderEvent(tx, orderId, type, reason);
  }
}
