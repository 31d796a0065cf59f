import type { EntityManager } from '@mikro-orm/postgresql';
import { DomainError } from '../../common/errors.js';
import { ORDER_STATUS_CHANGED, type OrderEventNotification, type OrderStatusUpdate, type TransitionReason } from '../events/event.catalogue.js';
import { orderEventInsert, orderEventParams } from '../events/order-event.writer.js';
import { Order } from './order.entity.js';
import { rollupColumns, rollupDelta } from './order-stats.sql.js';
import { canTransition, ORDER_STATUSES, type OrderStatus } from './order.transitions.js';

/** The deposit that completed the order (Success only): its network, token and units received are copied onto the order. */
export interface PaidBy {
  depositId?: string | null;
}

export interface TransitionResult {
  /** false when the order already had the target status (nothing written, nothing notified). */
  changed: boolean;
  from: OrderStatus;
  to: OrderStatus;
  /** The `order_events` row written for the change (null when unchanged). */
  eventId: string | null;
}

/** A timestamptz as `2026-11-21T06:07:27.309Z` (raw queries return timestamps as text). */
const iso = (col: string) => `to_char(${col} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** A row as raw SQL returns it: `seq` may arrive as text (bigint). */
type UpdateRow = Omit<OrderStatusUpdate, 'seq'> & { seq: string | number };
const toUpdate = (r: UpdateRow): OrderStatusUpdate => ({ ...r, seq: Number(r.seq) });

/**
 * The only writer of `orders.status` (ARCHITECTURE: modules rule 4). One transition = lock the order
 * row, check the transition table, update the status (and on Success `paid_at` and the paying deposit's
 * facts: network, token, units received), append the move between rollup buckets to `order_stats_delta`
 * (insert only: concurrent transitions of one merchant never lock a shared row), write an
 * `order_events` row (outbox, rule 5; the insert is OrderEventWriter's) and `pg_notify` — all in the caller's transaction, so the
 * notification is delivered on commit and never for a rolled-back change.
 */
export class OrderStatusService {
  /** `onTransition`: observability hook (metrics), called after each written transition (inside the caller's transaction). */
  constructor(private readonly onTransition?: (t: { environment: string; from: OrderStatus; to: OrderStatus }) => void) {}

  /**
   * `em` must be inside a transaction (`em.transactional(...)`). Same status → no-op (`changed: false`).
   * A move the table does not allow throws a plain Error: callers decide from the table first, so
   * reaching it is a programming error, not a client error.
   */
  async transition(em: EntityManager, orderId: string, to: OrderStatus, reason: TransitionReason, paid: PaidBy = {}): Promise<TransitionResult> {
    if (!em.isInTransaction()) throw new Error('OrderStatusService.transition must run inside a transaction (em.transactional)');
    if (!ORDER_STATUSES.includes(to)) throw new Error(`Unknown order status ${String(to)}`);
    if (!reason || typeof reason.kind !== 'string' || !reason.kind) throw new Error('A transition needs a reason with a kind');

    const locked = await em.execute<{ status: OrderStatus }[]>('select status from orders where id = ? for update', [orderId]);
    const from = locked[0]?.status;
    if (!from) throw new DomainError('ORDER_NOT_FOUND', `Order ${orderId} not found`);
    if (from === to) return { changed: false, from, to, eventId: null };
    if (!canTransition(from, to)) throw new Error(`Illegal order status transition ${from} → ${to} (order ${orderId})`);

    // One statement: update (with the paying deposit's facts on Success), outbox row and its
    // notification (sent by the writer's insert, queued by PostgreSQL until commit).
    const depositId = to === 'Success' ? (paid.depositId ?? null) : null;
    const rows = await em.execute<{ event_id: string; status: OrderStatus; environment: string; paid_at: string | null; updated_at: string }[]>(
      `with s as (
         select d.id, d.network, d.token_id, t.decimals, d.amount_received
         from deposits d join tokens t on t.id = d.token_id
         where d.id = ?::uuid and d.order_id = ?
       ), prev as (
         select * from orders where id = ?
       ), o as (
         update orders o set status = ?, paid_at = case when ? = 'Success' then coalesce(o.paid_at, now()) else o.paid_at end, updated_at = now(),
           paid_deposit_id = coalesce(s.id, o.paid_deposit_id), paid_network = coalesce(s.network, o.paid_network),
           paid_token_id = coalesce(s.token_id, o.paid_token_id), paid_decimals = coalesce(s.decimals, o.paid_decimals),
           paid_amount = coalesce(s.amount_received, o.paid_amount)
         from (select 1) one left join s on true
         where o.id = ? returning o.id, o.order_no, o.merchant_id, o.environment, o.status, o.paid_at, o.updated_at, o.created_at, o.amount,
                                  o.received_idr, o.fee_idr, o.net_idr, o.paid_network, o.paid_token_id, o.paid_decimals, o.paid_amount
       ), ${rollupDelta('r', `${rollupColumns(-1, 'prev')} union all ${rollupColumns(1, 'o')}`)}, ${orderEventInsert('o')}
       select e.id as event_id, o.status, o.environment, ${iso('o.paid_at')} as paid_at, ${iso('o.updated_at')} as updated_at
       from o join e on e.order_id = o.id`,
      [depositId, orderId, orderId, to, to, orderId, ...orderEventParams(ORDER_STATUS_CHANGED, from, reason)],
    );
    const row = rows[0];
    if (!row) throw new Error(`Order ${orderId} vanished during its transition`);
    this.onTransition?.({ environment: row.environment, from, to });

    // Keep a managed Order of this EntityManager in step (without making it dirty).
    const managed = em.getUnitOfWork().getById<Order>(Order.name, orderId);
    if (managed)
      em.merge(
        Order,
        { id: orderId, status: row.status, paidAt: row.paid_at ? new Date(row.paid_at) : null, updatedAt: new Date(row.updated_at) },
        { refresh: true },
      );
    return { changed: true, from, to, eventId: row.event_id };
  }

  /** The order's status now, with the latest event's seq (0 if none); null if there is no such order. */
  async current(em: EntityManager, orderId: string): Promise<OrderStatusUpdate | null> {
    const rows = await em.execute<UpdateRow[]>(
      `select e.id as "eventId", coalesce(e.seq, 0) as seq, o.id as "orderId", o.order_no as "orderNo", o.merchant_id as "merchantId",
              o.environment, o.status, e.from_status as "previousStatus", ${iso('coalesce(e.created_at, o.created_at)')} as at
       from orders o
       left join lateral (select id, seq, from_status, created_at from order_events where order_id = o.id and type = ? order by seq desc limit 1) e on true
       where o.id = ?`,
      [ORDER_STATUS_CHANGED, orderId],
    );
    return rows[0] ? toUpdate(rows[0]) : null;
  }

  /** The order's status changes after `afterSeq`, oldest first (catch-up after a missed notification). */
  async eventsSince(em: EntityManager, orderId: string, afterSeq: number): Promise<OrderEventNotification[]> {
    const rows = await em.execute<(UpdateRow & { eventId: string })[]>(
      `select e.id as "eventId", e.seq, o.id as "orderId", o.order_no as "orderNo", o.merchant_id as "merchantId",
              e.environment, e.to_status as status, e.from_status as "previousStatus", ${iso('e.created_at')} as at
       from order_events e join orders o on o.id = e.order_id
       where e.order_id = ? and e.seq > ? and e.type = ? order by e.seq`,
      [orderId, afterSeq, ORDER_STATUS_CHANGED],
    );
    return rows.map((r) => ({ ...toUpdate(r), eventId: r.eventId }));
  }
}
