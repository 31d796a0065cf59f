import type { EntityManager } from '@mikro-orm/postgresql';
import { DomainError } from '../../common/errors.js';
import { depositSourcesOf, type DepositStatus } from '../deposits/deposit.transitions.js';
import type { OrderStatusService } from '../orders/order-status.service.js';
import type { OrderStatus } from '../orders/order.transitions.js';
import { PAYMENT_LATE, PAYMENT_OVERPAID, PAYMENT_REORGED, type OrderEventReasons } from '../events/event.catalogue.js';
import { recordOrderEvent } from '../events/order-event.writer.js';
import { syncLinkUse } from '../payment-links/link-use.js';
import { decideSettlement, lateWindowEnd, type ReceiptPayment } from './settlement.rules.js';

/** A `payment.reorged` event raised (and committed) for one payment: what the alarm hook receives. */
export type PaymentReorgedAlarm = OrderEventReasons[typeof PAYMENT_REORGED] & { orderId: string; environment: string; network: string; status: OrderStatus };
import { rollupColumns, rollupDelta } from '../orders/order-stats.sql.js';
import { ORDER_REVENUE_SQL } from '../orders/order-revenue.sql.js';

export interface SettlementOptions {
  /** Payments detected up to this long after expiry can still complete an order. */
  lateWindowS: number;
  /** Called once per committed `payment.reorged` event (the log line at error and the metric). */
  onPaymentReorged?: (alarm: PaymentReorgedAlarm) => void;
}

/** `status in (…)` guard of a write moving deposits to `to`, from the transition table. */
const depositSourcesSql = (to: DepositStatus) =>
  depositSourcesOf(to)
    .map((s) => `'${s}'`)
    .join(',');

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

  /** Settles one order in its own transaction; reorg alarms are announced once it has committed. */
  async settle(em: EntityManager, orderId: string, now = new Date()): Promise<OrderStatus> {
    const alarms: PaymentReorgedAlarm[] = [];
    const status = await em.transactional((tx) => this.settleIn(tx, orderId, now, alarms));
    for (const a of alarms) this.opts.onPaymentReorged?.(a);
    return status;
  }

  private async settleIn(tx: EntityManager, orderId: string, now: Date, alarms: PaymentReorgedAlarm[]): Promise<OrderStatus> {
    alarms.length = 0; // a retried transaction starts over
    const [order] = await tx.execute<{ status: OrderStatus; expires_at: Date; overpaid: boolean; settings: { paymentToleranceBps?: number } }[]>(
      `select o.status, o.expires_at, o.overpaid, m.settings from orders o join merchants m on m.id = o.merchant_id where o.id = ? for update of o`,
      [orderId],
    );
    if (!order) throw new DomainError('ORDER_NOT_FOUND', 'Order not found');
    const expiresAt = new Date(order.expires_at);
    const lateEnd = lateWindowEnd(expiresAt, this.opts.lateWindowS);

    const rows = await tx.execute<
      { id: string; total_amount: string; total_amount_fiat: string; confirmed: string; pending: string; paid_in_window: string }[]
    >(
      `select d.id, d.total_amount, d.total_amount_fiat,
              coalesce(sum(p.amount) filter (where p.status = 'confirmed'), 0) as confirmed,
              coalesce(sum(p.amount) filter (where p.status = 'pending'), 0) as pending,
              coalesce(sum(p.amount) filter (where p.status = 'confirmed' and p.detected_at <= ?), 0) as paid_in_window
       from deposits d left join payments p on p.deposit_id = d.id
       where d.order_id = ? group by d.id order by d.created_at, d.id`,
      [lateEnd, orderId],
    );
    // In-window confirmed payments in chain order: the rules find the one that completed the order.
    const counted = await tx.execute<{ id: string; deposit_id: string; amount: string; confirmed_at: Date | null; detected_at: Date }[]>(
      `select id, deposit_id, amount, confirmed_at, detected_at from payments
       where order_id = ? and status = 'confirmed' and detected_at <= ? order by block_number, log_index, id`,
      [orderId, lateEnd],
    );
    const paymentsOf = (depositId: string): ReceiptPayment[] =>
      counted
        .filter((p) => p.deposit_id === depositId)
        .map((p) => ({
          id: p.id,
          amount: BigInt(p.amount),
          confirmedAt: p.confirmed_at ? new Date(p.confirmed_at) : null,
          detectedAt: new Date(p.detected_at),
        }));
    const deposits = rows.map((r) => ({
      id: r.id,
      due: BigInt(r.total_amount),
      dueIdr: BigInt(r.total_amount_fiat),
      confirmed: BigInt(r.confirmed),
      pending: BigInt(r.pending),
      inWindow: BigInt(r.paid_in_window),
      payments: paymentsOf(r.id),
    }));
    for (const d of deposits) await tx.execute(`update deposits set amount_received = ? where id = ?`, [d.confirmed.toString(), d.id]);
    // Revenue follows the confirmed receipts (order-revenue.sql.ts): received, fee and net on what
    // arrived, and the paying deposit's units; the rollups follow in the same statement.
    await writeOrderRevenue(tx, orderId);

    // Deep reorgs: each confirmed payment that left the chain is reported once (before the status
    // change it may cause, so a receiver reads the cause first), and the order is flagged.
    const reorged = await tx.execute<
      {
        id: string;
        deposit_id: string;
        tx_hash: string;
        log_index: number;
        amount: string;
        block_number: string;
        block_hash: string;
        status: string;
        reorged_at: string;
        environment: string;
        network: string;
      }[]
    >(
      `update payments set reorg_reported_at = reorged_at
       where order_id = ? and reorged_at is not null and (reorg_reported_at is null or reorg_reported_at < reorged_at)
       returning id, deposit_id, tx_hash, log_index, amount::text, block_number::text, block_hash, status,
                 to_char(reorged_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as reorged_at, environment, network`,
      [orderId],
    );
    for (const p of reorged) {
      const reason = {
        paymentId: p.id,
        depositId: p.deposit_id,
        txHash: p.tx_hash,
        logIndex: p.log_index,
        amount: p.amount,
        blockNumber: p.block_number,
        blockHash: p.block_hash,
        paymentStatus: p.status,
        reorgedAt: p.reorged_at,
      };
      await this.event(tx, orderId, PAYMENT_REORGED, reason);
      alarms.push({ ...reason, orderId, environment: p.environment, network: p.network, status: order.status });
    }
    if (reorged.length) await tx.execute(`update orders set reorged = true where id = ?`, [orderId]);
    const [loss] = await tx.execute<{ lost: boolean }[]>(
      `select exists (select 1 from payments where order_id = ? and reorged_at is not null and status = 'orphaned') as lost`,
      [orderId],
    );

    const decision = decideSettlement({
      status: order.status,
      expiresAt,
      overpaid: order.overpaid,
      deposits,
      toleranceBps: Number(order.settings?.paymentToleranceBps ?? 0),
      now,
      lateWindowS: this.opts.lateWindowS,
      reorgLoss: loss?.lost === true,
    });
    const target = decision.transition ? decision.target : order.status;
    if (decision.transition) {
      await this.orderStatus.transition(
        tx,
        orderId,
        target,
        {
          kind: target === 'Underpaid' && order.status === 'Success' ? 'reorged' : 'settlement',
          // The deposit and payment that completed the order (Success): its webhook reports them.
          ...(target === 'Success' ? { depositId: decision.paidDepositId, paymentId: decision.paidPaymentId } : {}),
          confirmed: deposits.map((d) => ({ depositId: d.id, confirmed: d.confirmed.toString(), due: d.due.toString() })),
        },
        { depositId: decision.paidDepositId },
      );
      // A payment-link order gives its use back when it expires unpaid (payment-links/link-use.ts).
      await syncLinkUse(tx, orderId, target);
    }
    for (const a of alarms) a.status = target;
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
      await this.event(tx, orderId, PAYMENT_OVERPAID, {
        depositId: over.depositId,
        due: over.due.toString(),
        received: over.received.toString(),
        excess: over.excess.toString(),
        excessIdr: over.excessIdr.toString(),
        deposits: over.deposits.map((d) => ({ depositId: d.depositId, due: d.due.toString(), received: d.received.toString() })),
      });
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
    if (decision.deposits === 'close')
      await tx.execute(`update deposits set status = 'closed' where order_id = ? and status in (${depositSourcesSql('closed')})`, [orderId]);
    else if (decision.deposits === 'settle')
      await tx.execute(`update deposits set status = 'settled' where order_id = ? and status in (${depositSourcesSql('settled')})`, [orderId]);
    else if (decision.deposits === 'lapse')
      await tx.execute(`update deposits set status = 'lapsed' where order_id = ? and status in (${depositSourcesSql('lapsed')})`, [orderId]);
    return target;
  }

  /** Moves due orders past expiry (the expiry job). Skips rows another worker holds. Returns how many were settled. */
  async expireDue(em: EntityManager, now = new Date(), limit = 500): Promise<number> {
    const due = await em.execute<{ id: string }[]>(
      `select id from orders where status in ('Created','Processing') and expires_at <= ? order by expires_at limit ${Number(limit)}`,
      [now],
    );
    for (const { id } of due) await this.settle(em, id, now);
    // Close deposits whose late window is over: no longer watched (their codes went back at expiry).
    await em.execute(
      `update deposits d set status = 'closed' from orders o where o.id = d.order_id and d.status in (${depositSourcesSql('closed')}) and o.expires_at + make_interval(secs => ?) < ?`,
      [this.opts.lateWindowS, now],
    );
    return due.length;
  }

  private async event<T extends typeof PAYMENT_LATE | typeof PAYMENT_OVERPAID | typeof PAYMENT_REORGED>(
    tx: EntityManager,
    orderId: string,
    type: T,
    reason: OrderEventReasons[T],
  ): Promise<void> {
    await recordOrderEvent(tx, orderId, type, reason);
  }
}

/**
 * Writes the order's revenue columns from its deposits' confirmed receipts less its confirmed refunds
 * (order-revenue.sql.ts), with the rollups' deltas in the same statement; nothing when unchanged.
 * Inside the caller's transaction (settlement, a refund's confirmation).
 */
export async function writeOrderRevenue(tx: EntityManager, orderId: string): Promise<void> {
  await tx.execute(
    `with f as (${ORDER_REVENUE_SQL}),
     prev as (select * from orders where id = ?),
     o as (
       update orders o set received_idr = case when f.any then f.received end, fee_idr = case when f.any then f.fee end,
         net_idr = case when f.any then f.received - f.fee end,
         paid_amount = coalesce((select x.amount_received from deposits x where x.id = o.paid_deposit_id), o.paid_amount)
       from f where o.id = ?
         and (o.received_idr, o.fee_idr, o.net_idr, o.paid_amount) is distinct from
             (case when f.any then f.received end, case when f.any then f.fee end, case when f.any then f.received - f.fee end,
              coalesce((select x.amount_received from deposits x where x.id = o.paid_deposit_id), o.paid_amount))
       returning o.*
     ),
     ${rollupDelta('r', `${rollupColumns(-1, 'prev')} where exists (select 1 from o) union all ${rollupColumns(1, 'o')}`)}
     select 1 from o`,
    [orderId, orderId, orderId],
  );
}
