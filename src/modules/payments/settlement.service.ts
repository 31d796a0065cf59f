import type { EntityManager } from '@mikro-orm/postgresql';
import { prepared } from '../../db/prepared.js';
import { DomainError } from '../../common/errors.js';
import { depositSourcesOf, type DepositStatus } from '../deposits/deposit.transitions.js';
import type { OrderStatusService } from '../orders/order-status.service.js';
import type { OrderStatus } from '../orders/order.transitions.js';
import { PAYMENT_LATE, PAYMENT_OVERPAID, PAYMENT_REORGED, type OrderEventReasons } from '../events/event.catalogue.js';
import { recordOrderEvent } from '../events/order-event.writer.js';
import { syncLinkUse } from '../payment-links/link-use.js';
import { decideSettlement, lateWindowEnd, type ReceiptPayment, type SettlementDecision } from './settlement.rules.js';

/** A `payment.reorged` event raised (and committed) for one payment: what the alarm hook receives. */
export type PaymentReorgedAlarm = OrderEventReasons[typeof PAYMENT_REORGED] & { orderId: string; environment: string; network: string; status: OrderStatus };
import { rollupColumns, rollupDelta } from '../orders/order-stats.sql.js';
import { ORDERS_REVENUE_SQL } from '../orders/order-revenue.sql.js';

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
    const status = (await this.settleMany(em, [orderId], now)).get(orderId);
    if (!status) throw new DomainError('ORDER_NOT_FOUND', 'Order not found');
    return status;
  }

  /**
   * Settles several orders in one transaction (the orders a block touched: one commit and one set of
   * statements instead of a transaction each, bench:detect), each exactly as alone: the rows are
   * locked in id order, then read, decided (settlement.rules.ts) and written together; the rarer
   * steps (a reorg to report, an overpayment, a late payment, a payment link's use) per order that has
   * them. Reorg alarms are announced once it has committed. Returns each order's status (an unknown
   * id is left out). One failure rolls back all of them: the caller settles them one by one then.
   */
  async settleMany(em: EntityManager, orderIds: string[], now = new Date()): Promise<Map<string, OrderStatus>> {
    const { statuses, announce } = await em.transactional((tx) => this.settleWithin(tx, orderIds, now));
    announce();
    return statuses;
  }

  /**
   * `settleMany` inside the caller's transaction (the watcher's recording transaction when a block's
   * payments are final as they are recorded: detection and Success commit together). `announce`
   * raises the reorg alarms: the caller calls it once the transaction has committed.
   */
  async settleWithin(tx: EntityManager, orderIds: string[], now = new Date()): Promise<{ statuses: Map<string, OrderStatus>; announce: () => void }> {
    const alarms: PaymentReorgedAlarm[] = [];
    const statuses = await this.settleIn(tx, [...new Set(orderIds)].sort(), now, alarms);
    return { statuses, announce: () => alarms.forEach((a) => this.opts.onPaymentReorged?.(a)) };
  }

  private async settleIn(tx: EntityManager, ids: string[], now: Date, alarms: PaymentReorgedAlarm[]): Promise<Map<string, OrderStatus>> {
    const statuses = new Map<string, OrderStatus>();
    if (!ids.length) return statuses;
    const orders = await prepared<{
      id: string;
      status: OrderStatus;
      expires_at: Date;
      overpaid: boolean;
      payment_link_id: string | null;
      settings: { paymentToleranceBps?: number };
    }>(
      tx,
      'settle_lock',
      `select o.id, o.status, o.expires_at, o.overpaid, o.payment_link_id, m.settings from orders o join merchants m on m.id = o.merchant_id
       where o.id in (select value::uuid from jsonb_array_elements_text(?::jsonb)) order by o.id for update of o`,
      [JSON.stringify(ids)],
    );
    if (!orders.length) return statuses;
    const lateEnds = new Map(orders.map((o) => [o.id, lateWindowEnd(new Date(o.expires_at), this.opts.lateWindowS)]));

    // Everything settling reads, in one statement after the locks (a fresh snapshot: what a settlement
    // that held a lock before committed is seen): per deposit its sums, its in-window confirmed
    // payments in chain order (the rules find the one that completed the order), and flags saying
    // which of the rarer steps below have anything to do.
    const rows = await prepared<{
      order_id: string;
      id: string;
      total_amount: string;
      total_amount_fiat: string;
      amount_received: string;
      confirmed: string;
      pending: string;
      paid_in_window: string;
      counted: { id: string; amount: string; confirmedAt: string | null; detectedAt: string }[];
      unreported_reorg: boolean;
      lost: boolean;
      late: boolean;
    }>(
      tx,
      'settle_read',
      `select d.order_id, d.id, d.total_amount, d.total_amount_fiat, d.amount_received,
              coalesce(sum(p.amount) filter (where p.status = 'confirmed'), 0) as confirmed,
              coalesce(sum(p.amount) filter (where p.status = 'pending'), 0) as pending,
              coalesce(sum(p.amount) filter (where p.status = 'confirmed' and p.detected_at <= v.late_end), 0) as paid_in_window,
              coalesce(jsonb_agg(jsonb_build_object('id', p.id, 'amount', p.amount::text, 'confirmedAt', p.confirmed_at, 'detectedAt', p.detected_at)
                                 order by p.block_number, p.log_index, p.id) filter (where p.status = 'confirmed' and p.detected_at <= v.late_end), '[]') as counted,
              coalesce(bool_or(p.reorged_at is not null and (p.reorg_reported_at is null or p.reorg_reported_at < p.reorged_at)), false) as unreported_reorg,
              coalesce(bool_or(p.reorged_at is not null and p.status = 'orphaned'), false) as lost,
              coalesce(bool_or(p.late and p.status = 'confirmed'), false) as late
       from jsonb_to_recordset(?::jsonb) as v(order_id uuid, late_end timestamptz)
       join deposits d on d.order_id = v.order_id
       left join payments p on p.deposit_id = d.id
       group by d.id, v.late_end order by d.order_id, d.created_at, d.id`,
      [JSON.stringify(orders.map((o) => ({ order_id: o.id, late_end: lateEnds.get(o.id)!.toISOString() })))],
    );
    // deposits.amount_received follows the confirmed payments; revenue follows it (order-revenue.sql.ts):
    // received, fee and net on what arrived, and the paying deposit's units, with the rollups.
    const received = rows.filter((r) => BigInt(r.amount_received) !== BigInt(r.confirmed));
    if (received.length)
      await prepared(
        tx,
        'settle_received',
        `update deposits d set amount_received = v.amount from jsonb_to_recordset(?::jsonb) as v(id uuid, amount numeric) where d.id = v.id`,
        [JSON.stringify(received.map((r) => ({ id: r.id, amount: r.confirmed })))],
      );
    await writeOrdersRevenue(
      tx,
      orders.map((o) => o.id),
    );

    const plans = [];
    for (const order of orders) {
      const own = rows.filter((r) => r.order_id === order.id);
      const deposits = own.map((r) => ({
        id: r.id,
        due: BigInt(r.total_amount),
        dueIdr: BigInt(r.total_amount_fiat),
        confirmed: BigInt(r.confirmed),
        pending: BigInt(r.pending),
        inWindow: BigInt(r.paid_in_window),
        payments: r.counted.map((p): ReceiptPayment => ({
          id: p.id,
          amount: BigInt(p.amount),
          confirmedAt: p.confirmedAt ? new Date(p.confirmedAt) : null,
          detectedAt: new Date(p.detectedAt),
        })),
      }));
      // Deep reorgs: each confirmed payment that left the chain is reported once (before the status
      // change it may cause, so a receiver reads the cause first), and the order is flagged.
      if (own.some((r) => r.unreported_reorg)) await this.reportReorgs(tx, order.id, order.status, alarms);
      const decision = decideSettlement({
        status: order.status,
        expiresAt: new Date(order.expires_at),
        overpaid: order.overpaid,
        deposits,
        toleranceBps: Number(order.settings?.paymentToleranceBps ?? 0),
        now,
        lateWindowS: this.opts.lateWindowS,
        reorgLoss: own.some((r) => r.lost),
      });
      plans.push({ order, own, deposits, decision, target: decision.transition ? decision.target : order.status });
    }
    await this.orderStatus.transitionLocked(
      tx,
      plans
        .filter((p) => p.decision.transition)
        .map(({ order, deposits, decision, target }) => ({
          orderId: order.id,
          from: order.status,
          to: target,
          reason: {
            kind: target === 'Underpaid' && order.status === 'Success' ? 'reorged' : 'settlement',
            // The deposit and payment that completed the order (Success): its webhook reports them.
            ...(target === 'Success' ? { depositId: decision.paidDepositId, paymentId: decision.paidPaymentId } : {}),
            confirmed: deposits.map((d) => ({ depositId: d.id, confirmed: d.confirmed.toString(), due: d.due.toString() })),
          },
          depositId: decision.paidDepositId,
        })),
    );
    for (const { order, own, decision, target } of plans) {
      // A payment-link order gives its use back when it expires unpaid (payment-links/link-use.ts).
      if (decision.transition && order.payment_link_id) await syncLinkUse(tx, order.id, target);
      for (const a of alarms) if (a.orderId === order.id) a.status = target;
      if (decision.overpayment) await this.flagOverpaid(tx, order.id, decision.overpayment);
      // Late payments: reported once each, whatever they did to the status.
      if (own.some((r) => r.late)) await this.reportLate(tx, order.id, lateEnds.get(order.id)!);
      statuses.set(order.id, target);
    }
    for (const [kind, to] of [
      ['close', 'closed'],
      ['settle', 'settled'],
      ['lapse', 'lapsed'],
    ] as const) {
      const of = plans.filter((p) => p.decision.deposits === kind).map((p) => p.order.id);
      if (of.length)
        await prepared(
          tx,
          `settle_deposits_${to}`,
          `update deposits set status = '${to}' where order_id in (select value::uuid from jsonb_array_elements_text(?::jsonb)) and status in (${depositSourcesSql(to)})`,
          [JSON.stringify(of)],
        );
    }
    return statuses;
  }

  /** Reports each confirmed payment of the order reorganised away since the last report (`payment.reorged`, alarms) and flags the order. */
  private async reportReorgs(tx: EntityManager, orderId: string, status: OrderStatus, alarms: PaymentReorgedAlarm[]): Promise<void> {
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
      alarms.push({ ...reason, orderId, environment: p.environment, network: p.network, status });
    }
    if (reorged.length) await tx.execute(`update orders set reorged = true where id = ?`, [orderId]);
  }

  /** The paying deposit received more since it settled the order: the order is flagged, its units follow (with the rollup), `payment.overpaid`. */
  private async flagOverpaid(tx: EntityManager, orderId: string, over: NonNullable<SettlementDecision['overpayment']>): Promise<void> {
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

  /** `payment.late` once per late confirmed payment of the order not reported yet. */
  private async reportLate(tx: EntityManager, orderId: string, lateEnd: Date): Promise<void> {
    const late = await tx.execute<{ id: string; tx_hash: string; amount: string; in_window: boolean }[]>(
      `select p.id, p.tx_hash, p.amount, p.detected_at <= ? as in_window from payments p where p.order_id = ? and p.late and p.status = 'confirmed'
         and not exists (select 1 from order_events e where e.order_id = p.order_id and e.type = ? and e.reason->>'paymentId' = p.id::text)`,
      [lateEnd, orderId, PAYMENT_LATE],
    );
    for (const p of late) await this.event(tx, orderId, PAYMENT_LATE, { paymentId: p.id, txHash: p.tx_hash, amount: p.amount, withinLateWindow: p.in_window });
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
 * Writes the orders' revenue columns from their deposits' confirmed receipts less their confirmed
 * refunds (order-revenue.sql.ts), with the rollups' deltas in the same statement; nothing for an order
 * whose figures are unchanged. Inside the caller's transaction (settlement, a refund's confirmation).
 */
export async function writeOrdersRevenue(tx: EntityManager, orderIds: string[]): Promise<void> {
  if (!orderIds.length) return;
  await prepared(
    tx,
    'orders_revenue',
    `with f as (${ORDERS_REVENUE_SQL}),
     prev as (select o.* from orders o join f on f.order_id = o.id),
     o as (
       update orders o set received_idr = case when f.any then f.received end, fee_idr = case when f.any then f.fee end,
         net_idr = case when f.any then f.received - f.fee end,
         paid_amount = coalesce((select x.amount_received from deposits x where x.id = o.paid_deposit_id), o.paid_amount)
       from f where o.id = f.order_id
         and (o.received_idr, o.fee_idr, o.net_idr, o.paid_amount) is distinct from
             (case when f.any then f.received end, case when f.any then f.fee end, case when f.any then f.received - f.fee end,
              coalesce((select x.amount_received from deposits x where x.id = o.paid_deposit_id), o.paid_amount))
       returning o.*
     ),
     ${rollupDelta('r', `${rollupColumns(-1, 'prev')} where prev.id in (select id from o) union all ${rollupColumns(1, 'o')}`)}
     select 1 from o`,
    [JSON.stringify(orderIds)],
  );
}

/** {@link writeOrdersRevenue} for one order. */
export const writeOrderRevenue = (tx: EntityManager, orderId: string): Promise<void> => writeOrdersRevenue(tx, [orderId]);
