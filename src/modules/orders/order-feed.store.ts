import type { EntityManager } from '@mikro-orm/postgresql';
import type { Environment } from '../../common/environment.js';
import type { OrderFeedNotification } from '../events/event.catalogue.js';

/**
 * The order feed's reads of `order_events` (raw SQL, docs/decisions/0001-hot-path-sql.md): the
 * events named by LISTEN hints, the table's head, and a merchant environment's events after a `seq`
 * (a feed's catch-up). One column list, so a hint and a catch-up publish the same notification.
 */

const FEED_COLUMNS = `e.id as "eventId", e.seq, e.type, e.order_id as "orderId", o.order_no as "orderNo", e.merchant_id as "merchantId", e.environment,
       e.to_status as status, e.from_status as "previousStatus", to_char(e.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as at, e.reason`;

type FeedRow = Omit<OrderFeedNotification, 'seq'> & { seq: string | number };

const toNotification = (r: FeedRow): OrderFeedNotification => ({ ...r, seq: Number(r.seq) });

/** Committed events by id (unknown ids are simply absent), in any order. */
export async function feedEventsByIds(em: EntityManager, ids: readonly string[]): Promise<OrderFeedNotification[]> {
  const rows = await em.getConnection().execute<FeedRow[]>(
    `select ${FEED_COLUMNS}
     from order_events e join orders o on o.id = e.order_id
     where e.id = any(?::uuid[])`,
    [`{${ids.join(',')}}`], // ids are checked UUIDs; an array literal (an array parameter would expand into a list)
  );
  return rows.map(toNotification);
}

/** The table's newest `seq` now (0 when empty). */
export async function feedHead(em: EntityManager): Promise<number> {
  const [row] = await em.execute<{ seq: string }[]>(`select coalesce(max(seq), 0)::text as seq from order_events`);
  return Number(row!.seq);
}

/** The merchant environment's events after `seq`, oldest first, at most 1,000 (a feed's catch-up). */
export async function feedEventsSince(em: EntityManager, merchantId: string, environment: Environment, seq: number): Promise<OrderFeedNotification[]> {
  const rows = await em.execute<FeedRow[]>(
    `select ${FEED_COLUMNS}
     from order_events e join orders o on o.id = e.order_id
     where e.merchant_id = ? and e.environment = ? and e.seq > ? order by e.seq limit 1000`,
    [merchantId, environment, seq],
  );
  return rows.map(toNotification);
}
