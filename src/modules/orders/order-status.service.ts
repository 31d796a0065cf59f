import type { EntityManager } from '@mikro-orm/postgresql';
import { prepared } from '../../db/prepared.js';
import { DomainError } from '../../common/errors.js';
import { ORDER_STATUS_CHANGED, type OrderEventNotification, type OrderStatusUpdate, type TransitionReason } from '../events/event.catalogue.js';
import { statusChangesInsertFrom } from '../events/order-event.writer.js';
import { Order } from './order.entity.js';
import { rollupColumns, rollupDelta } from './order-stats.sql.js';
import { canTransition, ORDER_STATUSES, type OrderStatus } from './order.transitions.js';

/** The deposit that completed the order (Success only): its network, token and units received are copied onto the order. */
export interface PaidBy {
  depositId?: string | null;
}

/** One transition of `transitionLocked`: the order is locked by the caller, which read `from` under the lock. */
export interface LockedTransition {
  orderId: string;
  from: OrderStatus;
  to: OrderStatus;
  reason: TransitionReason;
  /** Success: the deposit that completed the order (its network, token and units are copied onto the order). */
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
    const [result] = await this.transitionLocked(em, [{ orderId, from, to, reason, depositId: paid.depositId }]);
    return result!;
  }

  /**
   * Several transitions in one statement (the orders a block settled): for each, what `transition`
   * does after its lock, for orders the caller has locked (`for update`) in this transaction and whose
   * status `from` it read under that lock. An item whose target is its status writes nothing
   * (`changed: false`); one the transition table does not allow throws, writing nothing. Results in
   * the items' order.
   */
  async transitionLocked(em: EntityManager, items: LockedTransition[]): Promise<TransitionResult[]> {
    if (!em.isInTransaction()) throw new Error('OrderStatusService.transitionLocked must run inside a transaction (em.transactional)');
    for (const t of items) {
      if (!ORDER_STATUSES.includes(t.to)) throw new Error(`Unknown order status ${String(t.to)}`);
      if (!t.reason || typeof t.reason.kind !== 'string' || !t.reason.kind) throw new Error('A transition needs a reason with a kind');
      if (t.from !== t.to && !canTransition(t.from, t.to)) throw new Error(`Illegal order status transition ${t.from} → ${t.to} (order ${t.orderId})`);
    }
    const moves = items.filter((t) => t.from !== t.to);
    const written = new Map<string, { event_id: string; status: OrderStatus; environment: string; paid_at: string | null; updated_at: string }>();
    if (moves.length) {
      // One statement: the updates (with the paying deposit's facts on Success), the rollup deltas, the
      // outbox rows and their notifications (sent by the writer's insert, queued by PostgreSQL until commit).
      const rows = await prepared<{ order_id: string; event_id: string; status: OrderStatus; environment: string; paid_at: string | null; updated_at: string }>(
        em,
        'order_transitions',
        `with v as (
           select * from jsonb_to_recordset(?::jsonb) as v(id uuid, status text, from_status text, deposit_id uuid, reason jsonb)
         ), s as (
           select d.id, d.order_id, d.network, d.token_id, t.decimals, d.amount_received
           from v join deposits d on d.id = v.deposit_id and d.order_id = v.id join tokens t on t.id = d.token_id
         ), prev as (
           select o.* from orders o join v on v.id = o.id
         ), o as (
           update orders o set status = v.status, paid_at = case when v.status = 'Success' then coalesce(o.paid_at, now()) else o.paid_at end, updated_at = now(),
             paid_deposit_id = coalesce(s.id, o.paid_deposit_id), paid_network = coalesce(s.network, o.paid_network),
             paid_token_id = coalesce(s.token_id, o.paid_token_id), paid_decimals = coalesce(s.decimals, o.paid_decimals),
             paid_amount = coalesce(s.amount_received, o.paid_amount)
           from v left join s on s.order_id = v.id
           where o.id = v.id returning o.id, o.order_no, o.merchant_id, o.environment, o.status, o.paid_at, o.updated_at, o.created_at, o.amount,
                                    o.received_idr, o.fee_idr, o.net_idr, o.paid_network, o.paid_token_id, o.paid_decimals, o.paid_amount
         ), ${rollupDelta('r', `${rollupColumns(-1, 'prev')} union all ${rollupColumns(1, 'o')}`)},
         ov as (select o.*, v.from_status, v.reason from o join v on v.id = o.id),
         ${statusChangesInsertFrom('ov')}
         select o.id as order_id, e.id as event_id, o.status, o.environment, ${iso('o.paid_at')} as paid_at, ${iso('o.updated_at')} as updated_at
         from o join e on e.order_id = o.id`,
        [
          JSON.stringify(
            moves.map((t) => ({
              id: t.orderId,
              status: t.to,
              from_status: t.from,
              deposit_id: t.to === 'Success' ? (t.depositId ?? null) : null,
              reason: t.reason,
            })),
          ),
        ],
      );
      for (const r of rows) written.set(r.order_id, r);
    }
    return items.map((t) => {
      if (t.from === t.to) return { changed: false, from: t.from, to: t.to, eventId: null };
      const row = written.get(t.orderId);
      if (!row) throw new Error(`Order ${t.orderId} vanished during its transition`);
      this.onTransition?.({ environment: row.environment, from: t.from, to: t.to });
      // Keep a managed Order of this EntityManager in step (without making it dirty).
      const managed = em.getUnitOfWork().getById<Order>(Order.name, t.orderId);
      if (managed)
        em.merge(
          Order,
          { id: t.orderId, status: row.status, paidAt: row.paid_at ? new Date(row.paid_at) : null, updatedAt: new Date(row.updated_at) },
          { refresh: true },
        );
      return { changed: true, from: t.from, to: t.to, eventId: row.event_id };
    });
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
