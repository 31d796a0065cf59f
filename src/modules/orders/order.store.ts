import type { EntityManager } from '@mikro-orm/postgresql';
import { DomainError } from '../../common/errors.js';
import type { Outcome } from '../../common/group-commit.js';
import { prepared } from '../../db/prepared.js';
import { orderCreatedInsert } from '../events/order-event.writer.js';
import type { Order, OrderRecord } from './order.entity.js';

/**
 * The orders table's raw-SQL statements (docs/decisions/0001-hot-path-sql.md): the order insert, one
 * row or a group-committed batch (the merchants' hot path, one statement each, with the
 * `order.created` event in the same statement), and the `idempotency_keys` rows of order creation.
 * OrderService decides (who may create, which environment, group commit or not); this only speaks SQL.
 */

export type NewOrder = Pick<Order, 'environment' | 'orderNo' | 'amount' | 'customerName' | 'customerEmail' | 'source' | 'paymentLinkId'> & {
  merchantId: string;
};

/** An order waiting for its insert: its id and checkout key are made before it reaches the database. */
export interface PendingOrder {
  em: EntityManager;
  id: string;
  keyHash: string;
  keyExpiresAt: Date;
  o: NewOrder;
}

export interface OrderStoreOptions {
  /** ORDER_TTL_S: an order's lifetime when its merchant set none. */
  defaultTtlS: number;
  /** Observability hook (metrics), called once per group-committed statement with its number of orders. */
  onBatch?: (size: number) => void;
}

/**
 * What an insert learns from PostgreSQL: the columns it fills itself (defaults, and the expiry from the
 * merchant's lifetime setting), times as epoch milliseconds (int8 text: cheaper to format and to read
 * than timestamptz text and `new Date(text)`). Everything else in the record is the request's own
 * values, so thirteen columns per row came back for five (bench:orders: PostgreSQL and driver CPU).
 */
const RETURNING =
  'id, currency, status, floor(extract(epoch from expires_at) * 1000)::int8 as expires_ms, floor(extract(epoch from created_at) * 1000)::int8 as created_ms';
/** What the insert CTE hands on: RETURNING's columns and what the `order.created` event of each row needs (order-event.writer.ts). */
const INSERTED = 'id, merchant_id, environment, status, source, currency, expires_at, created_at';

const duplicate = (orderNo: string) => new DomainError('DUPLICATE_ORDER_NO', `An order with order_no ${orderNo} already exists`, { order_no: orderNo });
const merchantNotFound = () => new DomainError('MERCHANT_NOT_FOUND', 'Merchant not found');

function settle<T>(p: Promise<T>): Promise<Outcome<T>> {
  return p.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
}

/** The inserted order as a plain record (no entity hydration on the hot path): the request's values and what RETURNING gave. */
function toRecord(p: PendingOrder, row: Record<string, unknown>): OrderRecord {
  const { o } = p;
  return {
    id: p.id,
    merchant: { id: o.merchantId },
    environment: o.environment,
    orderNo: o.orderNo,
    amount: o.amount,
    currency: row.currency as string,
    status: row.status as OrderRecord['status'],
    customerName: o.customerName,
    customerEmail: o.customerEmail,
    source: o.source,
    paymentLinkId: o.paymentLinkId,
    expiresAt: new Date(Number(row.expires_ms)),
    paidAt: null,
    createdAt: new Date(Number(row.created_ms)),
  };
}

export class OrderStore {
  constructor(private readonly opts: OrderStoreOptions) {}

  /** One order, one statement (inside a caller's transaction, and the per-row retry of a failed batch). */
  async insertOne(p: PendingOrder, retry = false): Promise<OrderRecord> {
    const { o } = p;
    const rows = await prepared<Record<string, unknown>>(
      p.em,
      'order-insert',
      `with o as (
         insert into orders (id, merchant_id, environment, order_no, amount, customer_name, customer_email, source, payment_link_id,
                             checkout_key_hash, checkout_key_expires_at, expires_at, link_use_held)
         select ?, m.id, ?, ?, ?, ?, ?, ?, ?, ?, ?, now() + make_interval(secs => coalesce(m.order_ttl_seconds, ?)), ?::uuid is not null
         from merchants m where m.id = ?
         on conflict (merchant_id, environment, order_no) do nothing
         returning ${INSERTED}
       ), ${orderCreatedInsert('o')}
       select ${RETURNING} from o`,
      [
        p.id,
        o.environment,
        o.orderNo,
        o.amount.toString(),
        o.customerName,
        o.customerEmail,
        o.source,
        o.paymentLinkId,
        p.keyHash,
        p.keyExpiresAt,
        this.opts.defaultTtlS,
        o.paymentLinkId,
        o.merchantId,
      ],
    );
    const row = rows[0];
    if (row) return toRecord(p, row);
    if (retry) {
      // A batch that failed on the way back (connection lost after its commit) may hold this very row: it is ours, not a duplicate.
      const own = await prepared<Record<string, unknown>>(p.em, 'order-by-id', `select ${RETURNING} from orders where id = ?`, [p.id]);
      if (own[0]) return toRecord(p, own[0]);
    }
    const exists = await p.em.execute<{ n: number }[]>('select 1 as n from merchants where id = ?', [o.merchantId]);
    throw exists.length ? duplicate(o.orderNo) : merchantNotFound();
  }

  /**
   * Group commit of many orders: `INSERT … SELECT … FROM unnest(…) ON CONFLICT DO NOTHING RETURNING`,
   * autocommit, so every order of the batch is durable when the statement answers. Rows go in in
   * unique-key order (the same in every batch, so two concurrent batches cannot deadlock on each
   * other's keys); of two rows with the same order number in one batch the earlier one wins and the
   * other gets DUPLICATE_ORDER_NO, exactly as if they had come one after the other. A row missing
   * from RETURNING is a duplicate, or its merchant does not exist (one read for the whole batch).
   * If the statement fails for anything else (a constraint, a deadlock, a lost connection), nothing of
   * it was committed and each row is retried on its own, so one bad row fails only its own request
   * (a retried row already present under its own id is answered as created: the batch committed and
   * only its answer was lost).
   */
  async insertBatch(batch: PendingOrder[]): Promise<Outcome<OrderRecord>[]> {
    this.opts.onBatch?.(batch.length);
    if (batch.length === 1) return [await settle(this.insertOne(batch[0]!))];
    const cols = {
      id: [] as string[],
      merchant: [] as string[],
      env: [] as string[],
      no: [] as string[],
      amount: [] as string[],
      name: [] as (string | null)[],
      email: [] as (string | null)[],
      source: [] as string[],
      link: [] as (string | null)[],
      hash: [] as string[],
      keyExp: [] as string[],
    };
    for (const { id, o, keyHash, keyExpiresAt } of batch) {
      cols.id.push(id);
      cols.merchant.push(o.merchantId);
      cols.env.push(o.environment);
      cols.no.push(o.orderNo);
      cols.amount.push(o.amount.toString());
      cols.name.push(o.customerName);
      cols.email.push(o.customerEmail);
      cols.source.push(o.source);
      cols.link.push(o.paymentLinkId);
      cols.hash.push(keyHash);
      // ISO text: pg's own Date formatting (local time with offset, field by field) cost more per row.
      cols.keyExp.push(keyExpiresAt.toISOString());
    }
    let rows: Record<string, unknown>[];
    try {
      rows = await prepared<Record<string, unknown>>(
        batch[0]!.em,
        'order-insert-batch',
        `with o as (
           insert into orders (id, merchant_id, environment, order_no, amount, customer_name, customer_email, source, payment_link_id,
                               checkout_key_hash, checkout_key_expires_at, expires_at, link_use_held)
           select u.id, m.id, u.env, u.no, u.amount, u.name, u.email, u.source, u.link, u.hash, u.key_exp,
                  now() + make_interval(secs => coalesce(m.order_ttl_seconds, ?::int)), u.link is not null
           from unnest(?::uuid[], ?::uuid[], ?::text[], ?::text[], ?::numeric[], ?::text[], ?::text[], ?::text[], ?::uuid[], ?::text[], ?::timestamptz[])
                with ordinality as u(id, merchant_id, env, no, amount, name, email, source, link, hash, key_exp, ord)
           join merchants m on m.id = u.merchant_id
           order by u.merchant_id, u.env, u.no, u.ord
           on conflict (merchant_id, environment, order_no) do nothing
           returning ${INSERTED}
         ), ${orderCreatedInsert('o')}
         select ${RETURNING} from o`,
        [this.opts.defaultTtlS, cols.id, cols.merchant, cols.env, cols.no, cols.amount, cols.name, cols.email, cols.source, cols.link, cols.hash, cols.keyExp],
      );
    } catch {
      // Nothing of the batch was committed: each row on its own gets exactly the answer it would have had alone.
      const out: Outcome<OrderRecord>[] = [];
      for (const p of batch) out.push(await settle(this.insertOne(p, true)));
      return out;
    }
    const byId = new Map<string, Record<string, unknown>>();
    for (const r of rows) byId.set(r.id as string, r);
    let merchants: Set<string> | null = null;
    const out: Outcome<OrderRecord>[] = [];
    for (const p of batch) {
      const row = byId.get(p.id);
      if (row) {
        out.push({ ok: true, value: toRecord(p, row) });
        continue;
      }
      merchants ??= new Set(
        (
          await prepared<{ id: string }>(batch[0]!.em, 'order-batch-merchants', 'select id from merchants where id = any(?::uuid[])', [
            [...new Set(cols.merchant)],
          ])
        ).map((m) => m.id),
      );
      out.push({ ok: false, error: merchants.has(p.o.merchantId) ? duplicate(p.o.orderNo) : merchantNotFound() });
    }
    return out;
  }

  /**
   * Takes the transaction-scoped advisory lock of one idempotency key (`lockKey` names merchant,
   * environment and key); false when another open transaction holds it (the key is in flight).
   */
  async lockIdempotencyKey(tx: EntityManager, lockKey: string): Promise<boolean> {
    const [lock] = await tx.execute<{ got: boolean }[]>('select pg_try_advisory_xact_lock(hashtextextended(?, 0)) as got', [lockKey]);
    return lock?.got === true;
  }

  /**
   * Remembers an idempotency key for `orderNo` until `ttlS` from now: true when this call claimed it
   * (new, or the old row had expired), false when a live row already holds it.
   */
  async claimIdempotencyKey(
    tx: EntityManager,
    k: { merchantId: string; environment: Order['environment']; key: string; requestHash: string; orderNo: string; ttlS: number },
  ): Promise<boolean> {
    const claimed = await tx.execute<{ claimed: number }[]>(
      `insert into idempotency_keys (merchant_id, environment, key, request_hash, order_no, expires_at)
       values (?, ?, ?, ?, ?, now() + make_interval(secs => ?))
       on conflict (merchant_id, environment, key) do update
         set request_hash = excluded.request_hash, order_no = excluded.order_no, created_at = now(), expires_at = excluded.expires_at
         where idempotency_keys.expires_at <= now()
       returning 1 as claimed`,
      [k.merchantId, k.environment, k.key, k.requestHash, k.orderNo, k.ttlS],
    );
    return claimed.length > 0;
  }

  /** The order an idempotency key of (merchant, environment) names, with the hash of the request that first used it; null when none. */
  async idempotentOrder(
    em: EntityManager,
    merchantId: string,
    environment: Order['environment'],
    key: string,
  ): Promise<{ request_hash: string; id: string } | null> {
    const rows = await em.execute<{ request_hash: string; id: string }[]>(
      `select k.request_hash, o.id from idempotency_keys k
       join orders o on o.merchant_id = k.merchant_id and o.environment = k.environment and o.order_no = k.order_no
       where k.merchant_id = ? and k.environment = ? and k.key = ?`,
      [merchantId, environment, key],
    );
    return rows[0] ?? null;
  }

  /** Deletes idempotency keys past their lifetime (an expired key is free for reuse anyway). */
  async pruneIdempotencyKeys(em: EntityManager): Promise<void> {
    await em.execute(`delete from idempotency_keys where expires_at < now()`);
  }

  /** Replaces an order's checkout key (only its hash is stored). */
  async replaceCheckoutKey(em: EntityManager, orderId: string, keyHash: string, expiresAt: Date): Promise<void> {
    await em.execute('update orders set checkout_key_hash = ?, checkout_key_expires_at = ? where id = ?', [keyHash, expiresAt, orderId]);
  }
}
