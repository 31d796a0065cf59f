import type { EntityManager } from '@mikro-orm/postgresql';
import type { OrderStatus } from '../orders/order.transitions.js';
import type { OrderEventReasons, OrderEventType } from './event.catalogue.js';

/**
 * The one INSERT into `order_events`, as a CTE named `e` over a row source `source` with columns
 * (id, merchant_id, environment, status) — an `update orders … returning` for a status change, a
 * plain select for the other events — so a status change stays one statement (OrderStatusService).
 * Its three placeholders are filled by {@link orderEventParams}. `from_status` defaults to the
 * order's status (an event that changes no status). The trigger on `order_events` queues every row
 * for the webhook outbox.
 */
export function orderEventInsert(source: string): string {
  return `e as (
         insert into order_events (id, order_id, merchant_id, environment, type, from_status, to_status, reason)
         select gen_random_uuid(), ${source}.id, ${source}.merchant_id, ${source}.environment, ?, coalesce(?::text, ${source}.status), ${source}.status, ?::jsonb from ${source}
         returning id, seq, order_id, created_at
       )`;
}

export function orderEventParams<T extends OrderEventType>(type: T, fromStatus: OrderStatus | null, reason: OrderEventReasons[T]): unknown[] {
  return [type, fromStatus, JSON.stringify(reason)];
}

/**
 * Records an event that changes no status (late payment, overpayment) in the caller's transaction.
 * Status changes go through OrderStatusService.transition, which uses the same insert.
 */
export async function recordOrderEvent<T extends OrderEventType>(tx: EntityManager, orderId: string, type: T, reason: OrderEventReasons[T]): Promise<string | null> {
  const rows = await tx.execute<{ id: string }[]>(
    `with o as (select id, merchant_id, environment, status from orders where id = ?), ${orderEventInsert('o')} select id from e`,
    [orderId, ...orderEventParams(type, null, reason)],
  );
  return rows[0]?.id ?? null;
}
