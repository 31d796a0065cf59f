import type { EntityManager } from '@mikro-orm/postgresql';
import type { OrderStatus } from '../orders/order.transitions.js';
import { ORDER_CREATED, ORDER_EVENTS_CHANNEL, ORDER_STATUS_CHANGED, type OrderEventReasons, type OrderEventType } from './event.catalogue.js';

/** Longest `reason` (JSON text) sent in a notification; PostgreSQL refuses payloads over 8000 bytes. */
const NOTIFY_REASON_MAX = 4000;

/**
 * The one INSERT into `order_events`. Its RETURNING also announces the row: `pg_notify('order_events',
 * …)` (OrderFeedNotification; queued by PostgreSQL until commit, dropped on rollback), so every
 * recorded event reaches the live feeds and none is announced without being recorded. The order
 * number is read from the pre-statement snapshot (it never changes).
 */
function insertEvents(source: string, type: string, fromStatus: string, reason: string): string {
  return `e as (
         insert into order_events (id, order_id, merchant_id, environment, type, from_status, to_status, reason)
         select gen_random_uuid(), ${source}.id, ${source}.merchant_id, ${source}.environment, ${type}, ${fromStatus}, ${source}.status, ${reason} from ${source}
         returning id, seq, order_id, created_at, pg_notify('${ORDER_EVENTS_CHANNEL}', json_build_object(
           'eventId', id, 'seq', seq, 'type', type, 'orderId', order_id,
           'orderNo', (select x.order_no from orders x where x.id = order_events.order_id),
           'merchantId', merchant_id, 'environment', environment, 'status', to_status, 'previousStatus', from_status,
           'at', to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
           'reason', case when octet_length(reason::text) <= ${NOTIFY_REASON_MAX} then reason end)::text) as notified
       )`;
}

/**
 * The insert as a CTE named `e` over a row source `source` with columns (id, merchant_id, environment,
 * status) — an `update orders … returning` for a status change, a plain select for the other events —
 * so a status change stays one statement (OrderStatusService). Its three placeholders are filled by
 * {@link orderEventParams}. `from_status` defaults to the order's status (an event that changes no
 * status). The trigger on `order_events` queues webhook events for the outbox.
 */
export function orderEventInsert(source: string): string {
  return insertEvents(source, '?', `coalesce(?::text, ${source}.status)`, '?::jsonb');
}

/**
 * Status changes for every row of `source` (an `update orders … returning` joined with the columns
 * `from_status` (text) and `reason` (jsonb)): OrderStatusService's transitions, one statement for
 * any number of orders.
 */
export function statusChangesInsertFrom(source: string): string {
  return insertEvents(source, `'${ORDER_STATUS_CHANGED}'`, `${source}.from_status`, `${source}.reason`);
}

/**
 * The same insert for many events at once, none changing a status: `source` also has the columns
 * `type` (text) and `reason` (jsonb), one event per row (payment.detected / payment.confirmed, written
 * in the statement that records or confirms the payments).
 */
export function orderEventsInsertFrom(source: string): string {
  return insertEvents(source, `${source}.type`, `${source}.status`, `${source}.reason`);
}

/**
 * `order.created` for every row of `source` (the orders an `insert into orders … returning id,
 * merchant_id, environment, status, source` CTE inserted), as a CTE named `e` of the same statement:
 * OrderService's insert and group-committed batch stay one statement each, and the events commit (and
 * are announced) exactly with their orders. The announcement is the event id and its merchant feed
 * (`<merchantId>:<environment>`) alone: the orders are not in the statement's snapshot, the stream reads
 * every fact back by id, and a process where no stream watches that feed reads nothing back
 * (order-update.stream.ts, watchFeed): the smallest cost on the merchants' hot path.
 */
export function orderCreatedInsert(source: string): string {
  return `e as (
         insert into order_events (id, order_id, merchant_id, environment, type, from_status, to_status, reason)
         select gen_random_uuid(), ${source}.id, ${source}.merchant_id, ${source}.environment, '${ORDER_CREATED}', ${source}.status, ${source}.status,
                jsonb_build_object('source', ${source}.source) from ${source}
         returning pg_notify('${ORDER_EVENTS_CHANNEL}', json_build_object('eventId', id, 'feed', merchant_id::text || ':' || environment)::text) as notified
       )`;
}

export function orderEventParams<T extends OrderEventType>(type: T, fromStatus: OrderStatus | null, reason: OrderEventReasons[T]): unknown[] {
  return [type, fromStatus, JSON.stringify(reason)];
}

/**
 * Records an event that changes no status (late payment, overpayment) in the caller's transaction.
 * Status changes go through OrderStatusService.transition, which uses the same insert.
 */
export async function recordOrderEvent<T extends OrderEventType>(
  tx: EntityManager,
  orderId: string,
  type: T,
  reason: OrderEventReasons[T],
): Promise<string | null> {
  const rows = await tx.execute<{ id: string }[]>(
    `with o as (select id, merchant_id, environment, status from orders where id = ?), ${orderEventInsert('o')} select id from e`,
    [orderId, ...orderEventParams(type, null, reason)],
  );
  return rows[0]?.id ?? null;
}
