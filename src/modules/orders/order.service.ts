import type { z } from 'zod';
import { requireApiKey, requireEnvironment, requireMerchant, requireMerchantWide, requireOrderScope } from '../../common/access.js';
import { existingEm, type RequestContext } from '../../common/context.js';
import type { EntityManager } from '@mikro-orm/postgresql';
import { DomainError } from '../../common/errors.js';
import { parseInput } from '../../common/validation.js';
import type { Deposit } from '../deposits/deposit.entity.js';
import type { Payment } from '../payments/payment.entity.js';
import type { UnattributedReceipt } from '../payments/unattributed-receipt.entity.js';
import type { Quote } from '../quotes/quote.entity.js';
import { assertReturnUrls, hasReturnUrls, saveOrderReturnUrls } from './return-urls.js';
import type { CheckoutKeyService } from './checkout-key.service.js';
import { prepared } from '../../db/prepared.js';
import { orderCreatedInsert } from '../events/order-event.writer.js';
import { GroupCommit, type GroupCommitOptions, type Outcome } from '../../common/group-commit.js';
import { uuid7 } from '../../common/uuid7.js';
import { Order, type OrderRecord } from './order.entity.js';
import { CheckedCreateOrder, createOrderCommand, getOrderCommand, listOrdersCommand, type CreateOrderCommand, type GetOrderCommand, type ListOrdersCommand } from './order.commands.js';
import { BindParams, orderFilterSql, orderListingSql } from './order-filter.sql.js';
import { decodeCursor, encodeCursor, isPgInteger, isPgTimestamp } from '../../common/cursor.js';
import { createOrderLoaders, type OrderLoaders } from './order.loaders.js';
import { OPEN_STATUSES } from './order.transitions.js';
import { orderRequestHash, parseIdempotencyKey } from './order-idempotency.js';

export interface OrderServiceOptions {
  /** Read per order: the listening port may be known only after start. */
  publicBaseUrl: () => string;
  defaultTtlS: number;
  /** How long an order-creation idempotency key is remembered (IDEMPOTENCY_KEY_TTL_S). */
  idempotencyTtlS: number;
  minIdr: number;
  maxIdr: number;
  /** Observability hook (metrics), called once per inserted order. */
  onCreated?: (order: Pick<OrderRecord, 'environment' | 'source'>) => void;
  /** Observability hook (metrics), called once per group-committed statement with its number of orders. */
  onBatch?: (size: number) => void;
  /** Group commit of concurrent order inserts (ORDER_GROUP_COMMIT_*); absent → one statement per order. */
  groupCommit?: GroupCommitOptions;
  /**
   * The EntityManager of statements outside any transaction (group-committed inserts and their
   * follow-up reads): raw SQL only, so no identity map ever fills. It spares a request without an
   * EntityManager of its own (lazyRequestContext) the fork.
   */
  statements: () => EntityManager;
  /**
   * Whether any network is offered in an environment (something watches it): an order where none is
   * could never be paid, so it is refused at creation (NO_NETWORK_WATCHED), not at the rate lock.
   * Absent → always.
   */
  anyNetworkOffered?: (environment: Order['environment']) => boolean;
}

export interface CreatedOrder {
  /** The inserted row as a plain record (no entity hydration on the hot path). */
  order: OrderRecord;
  /** The scoped checkout key, shown once. */
  key: string;
  /** Hosted checkout page with the key embedded. */
  url: string;
}

export type NewOrder = Pick<Order, 'environment' | 'orderNo' | 'amount' | 'customerName' | 'customerEmail' | 'source' | 'paymentLinkId'> & { merchantId: string };

/** An order waiting for its insert: its id and checkout key are made before it reaches the database. */
export interface PendingOrder {
  em: EntityManager;
  id: string;
  keyHash: string;
  keyExpiresAt: Date;
  o: NewOrder;
}

/**
 * What an insert learns from PostgreSQL: the columns it fills itself (defaults, and the expiry from the
 * merchant's lifetime setting), times as epoch milliseconds (int8 text: cheaper to format and to read
 * than timestamptz text and `new Date(text)`). Everything else in the record is the request's own
 * values, so thirteen columns per row came back for five (bench:orders: PostgreSQL and driver CPU).
 */
const RETURNING = 'id, currency, status, floor(extract(epoch from expires_at) * 1000)::int8 as expires_ms, floor(extract(epoch from created_at) * 1000)::int8 as created_ms';
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

export class OrderService {
  private readonly createCommand;
  /** Group commit of order inserts outside transactions; null when `groupCommit` is off. */
  private readonly batcher: GroupCommit<PendingOrder, OrderRecord> | null;

  constructor(
    private readonly keys: CheckoutKeyService,
    private readonly opts: OrderServiceOptions,
  ) {
    this.createCommand = createOrderCommand(opts.minIdr, opts.maxIdr);
    this.batcher = opts.groupCommit ? new GroupCommit((batch) => this.insertBatch(batch), opts.groupCommit) : null;
  }

  /**
   * Merchant server (API key): creates an order in the key's environment. Duplicate order number →
   * DUPLICATE_ORDER_NO. With an idempotency key (order-idempotency.ts), a retry of the same request
   * gets the original order back (`replayed`); without one, nothing changes on this hot path.
   */
  async create(ctx: RequestContext, cmd: CreateOrderCommand | CheckedCreateOrder, opts: { idempotencyKey?: string } = {}): Promise<CreatedOrder & { replayed?: boolean }> {
    const caller = requireApiKey(ctx);
    const data = cmd instanceof CheckedCreateOrder ? cmd.data : parseInput(this.createCommand, cmd);
    assertReturnUrls(caller.environment, data);
    this.assertNetworkWatched(caller.environment);
    if (opts.idempotencyKey === undefined) return this.createOnce(ctx, caller, data);
    const key = parseIdempotencyKey(opts.idempotencyKey);
    const hash = orderRequestHash(data);
    // One transaction for the key row and the order: a key is remembered exactly when its order
    // exists, and a crash leaves neither. While it is open the key is "in flight": a concurrent
    // duplicate does not wait for it (a client's timeout would fire first and it would retry again)
    // but gets IDEMPOTENCY_KEY_IN_FLIGHT (409) at once, from a transaction-scoped advisory lock on
    // the key; once this commits, the same key replays the order.
    return ctx.em.transactional(async (tx) => {
      const txCtx = { ...ctx, em: tx };
      const [lock] = await tx.execute<{ got: boolean }[]>('select pg_try_advisory_xact_lock(hashtextextended(?, 0)) as got', [`idempotency:${caller.merchantId}:${caller.environment}:${key}`]);
      if (!lock?.got) {
        throw new DomainError('IDEMPOTENCY_KEY_IN_FLIGHT', 'A request with this Idempotency-Key is still being processed; retry after it finishes to get its answer');
      }
      const claimed = await tx.execute<{ claimed: number }[]>(
        `insert into idempotency_keys (merchant_id, environment, key, request_hash, order_no, expires_at)
         values (?, ?, ?, ?, ?, now() + make_interval(secs => ?))
         on conflict (merchant_id, environment, key) do update
           set request_hash = excluded.request_hash, order_no = excluded.order_no, created_at = now(), expires_at = excluded.expires_at
           where idempotency_keys.expires_at <= now()
         returning 1 as claimed`,
        [caller.merchantId, caller.environment, key, hash, data.orderNo, this.opts.idempotencyTtlS],
      );
      if (claimed.length) return this.createOnce(txCtx, caller, data);
      return { ...(await this.replay(txCtx, caller, key, hash)), replayed: true };
    });
  }

  /** Refuses an order in an environment where no network is watched (see `anyNetworkOffered`). */
  assertNetworkWatched(environment: Order['environment']): void {
    if (this.opts.anyNetworkOffered && !this.opts.anyNetworkOffered(environment)) {
      const env = environment === 'production' ? 'production' : 'sandbox';
      throw new DomainError('NO_NETWORK_WATCHED', `No network is watched in ${env}: an order could never be paid (the operator sets ${env === 'production' ? 'PRODUCTION' : 'SANDBOX'}_<NETWORK>_RPC_URLS); see /networks`, { environment: env });
    }
  }

  private async createOnce(ctx: RequestContext, caller: { merchantId: string; environment: Order['environment'] }, data: z.output<ReturnType<typeof createOrderCommand>>): Promise<CreatedOrder> {
    const created = await this.insert(ctx, {
      merchantId: caller.merchantId,
      environment: caller.environment,
      orderNo: data.orderNo,
      amount: BigInt(data.amount),
      customerName: data.customerName ?? null,
      customerEmail: data.customerEmail ?? null,
      source: 'api',
      paymentLinkId: null,
    });
    if (hasReturnUrls(data)) await saveOrderReturnUrls(ctx.em, created.order.id, data);
    return created;
  }

  /**
   * The order a live idempotency key was first used for, with a fresh checkout key (only the hash of
   * the first one is stored; the fresh key replaces it). Within the caller's merchant and environment
   * only: the key row is looked up under them, so another merchant's key names nothing here.
   */
  private async replay(ctx: RequestContext, caller: { merchantId: string; environment: Order['environment'] }, key: string, hash: string): Promise<CreatedOrder> {
    const rows = await ctx.em.execute<{ request_hash: string; id: string }[]>(
      `select k.request_hash, o.id from idempotency_keys k
       join orders o on o.merchant_id = k.merchant_id and o.environment = k.environment and o.order_no = k.order_no
       where k.merchant_id = ? and k.environment = ? and k.key = ?`,
      [caller.merchantId, caller.environment, key],
    );
    const row = rows[0];
    if (!row) throw new DomainError('CONFLICT', 'This Idempotency-Key is being used by another request; retry');
    if (row.request_hash !== hash) {
      throw new DomainError('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was already used with a different request body; use a new key for a new order');
    }
    const fresh = this.keys.issue(row.id);
    await ctx.em.execute('update orders set checkout_key_hash = ?, checkout_key_expires_at = ? where id = ?', [fresh.hash, fresh.expiresAt, row.id]);
    const order = await ctx.em.findOneOrFail(Order, { id: row.id });
    const record: OrderRecord = {
      id: order.id,
      merchant: { id: caller.merchantId },
      environment: order.environment,
      orderNo: order.orderNo,
      amount: order.amount,
      currency: order.currency,
      status: order.status,
      customerName: order.customerName,
      customerEmail: order.customerEmail,
      source: order.source,
      paymentLinkId: order.paymentLinkId,
      expiresAt: order.expiresAt,
      paidAt: order.paidAt,
      createdAt: order.createdAt,
    };
    return { order: record, key: fresh.key, url: this.checkoutUrl(order.id, fresh.key) };
  }

  /**
   * Shared by API orders and payment-link orders: ONE statement (the merchant's lifetime setting is
   * read inside it, and no explicit transaction is opened), because this is the merchants' hot path.
   * `ON CONFLICT DO NOTHING` on (merchant, environment, order_no) turns a duplicate into a clear
   * error without an exception round trip; concurrent duplicates still produce exactly one order.
   * Outside a transaction, concurrent inserts are group-committed (`insertBatch`): one multi-row
   * statement and one commit for many requests, each answered only after that commit.
   * Checks no caller: API orders and payment-link opens authorise before calling it, and `ctx.em`
   * may be their transaction.
   */
  async insert(ctx: RequestContext, o: NewOrder): Promise<CreatedOrder> {
    // Time-ordered id (uuid7.ts): the primary key grows at its right edge, however large the table.
    const id = uuid7();
    const key = this.keys.issue(id);
    // A context without an EntityManager yet is in no transaction: its insert needs no fork of its own.
    const own = existingEm(ctx);
    const inTx = own?.isInTransaction() ?? false;
    const row: PendingOrder = { em: inTx ? own! : this.opts.statements(), id, keyHash: key.hash, keyExpiresAt: key.expiresAt, o };
    const order = this.batcher && !inTx ? await this.batcher.submit(row) : await this.insertOne(row);
    this.opts.onCreated?.(order);
    return { order, key: key.key, url: this.checkoutUrl(order.id, key.key) };
  }

  /** One order, one statement (inside a caller's transaction, and the per-row retry of a failed batch). */
  private async insertOne(p: PendingOrder, retry = false): Promise<OrderRecord> {
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
      [p.id, o.environment, o.orderNo, o.amount.toString(), o.customerName, o.customerEmail, o.source, o.paymentLinkId, p.keyHash, p.keyExpiresAt, this.opts.defaultTtlS, o.paymentLinkId, o.merchantId],
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
        (await prepared<{ id: string }>(batch[0]!.em, 'order-batch-merchants', 'select id from merchants where id = any(?::uuid[])', [[...new Set(cols.merchant)]])).map((m) => m.id),
      );
      out.push({ ok: false, error: merchants.has(p.o.merchantId) ? duplicate(p.o.orderNo) : merchantNotFound() });
    }
    return out;
  }

  private checkoutUrl(orderId: string, key: string): string {
    return `${this.opts.publicBaseUrl()}/checkout/${orderId}?key=${key}`;
  }

  /** getOrder / checkout reads: by order number within the caller's merchant, for the merchant or the order's checkout key. */
  async getByNo(ctx: RequestContext, cmd: GetOrderCommand): Promise<Order> {
    const data = parseInput(getOrderCommand, cmd);
    return this.findForCaller(ctx, data.orderNo);
  }

  /**
   * The caller's order by number. Lookups are within the caller's merchant, so another merchant's
   * order is reported as not found (no existence leak); a checkout key naming a different order of
   * the same merchant is refused by scope.
   */
  async findForCaller(ctx: RequestContext, orderNo: string, opts: { forUpdate?: boolean } = {}): Promise<Order> {
    const env = requireEnvironment(ctx);
    const caller = requireMerchant(ctx);
    const order = await ctx.em.findOne(Order, { merchant: caller.merchantId, environment: env, orderNo }, opts.forUpdate ? { lockMode: 4 /* PESSIMISTIC_WRITE */ } : {});
    if (!order) throw new DomainError('ORDER_NOT_FOUND', `Order ${orderNo} not found`);
    requireOrderScope(ctx, order.id);
    return order;
  }

  /** The order with its locked quotes, deposits and payments (REST getOrder), through the same queries as GraphQL's batch loaders. */
  async details(
    ctx: RequestContext,
    order: Order,
    loaders: OrderLoaders = createOrderLoaders(ctx.em),
  ): Promise<{ order: Order; quotes: Quote[]; deposits: Deposit[]; payments: Payment[]; receipts: UnattributedReceipt[] }> {
    const [quotes, deposits, payments, receipts] = await Promise.all([loaders.quotes.load(order.id), loaders.deposits.load(order.id), loaders.payments.load(order.id), loaders.receipts.load(order.id)]);
    return { order, quotes, deposits, payments, receipts };
  }

  /** Refuses quotes and deposits for orders that can no longer be paid. */
  assertPayable(order: Order, now = new Date()): void {
    if (!OPEN_STATUSES.includes(order.status)) throw new DomainError('ORDER_CLOSED', `Order ${order.orderNo} is ${order.status}`);
    if (order.expiresAt <= now) throw new DomainError('ORDER_EXPIRED', `Order ${order.orderNo} expired`);
  }

  /**
   * Dashboard / merchant listing: filters and sort (order-filter.sql.ts, shared with the CSV export), a sort with a keyset cursor (the sort key,
   * then id) and, only when asked, the total count of the filtered rows. Two statements for a page
   * (ids, then the orders) plus one for the count.
   */
  async list(ctx: RequestContext, cmd: ListOrdersCommand): Promise<OrderList> {
    const f = parseInput(listOrdersCommand, cmd);
    const caller = requireMerchantWide(ctx, 'Listing orders', 'orders.read');
    const env = requireEnvironment(ctx);
    const q = new BindParams();
    const listing = orderListingSql(f, caller.merchantId, env, q);
    const where = [...listing.where];
    const kind = `orders:${f.sort}:${f.direction}`;
    if (f.after) {
      const [k, id] = decodeCursor(kind, f.after, [f.sort === 'AMOUNT' ? isPgInteger : isPgTimestamp]);
      where.push(`(${listing.key}, o.id) ${listing.dir === 'desc' ? '<' : '>'} (${q.bind(k)}::${f.sort === 'AMOUNT' ? 'numeric' : 'timestamptz'}, ${q.bind(id)}::uuid)`);
    }
    const rows = await ctx.em.execute<{ id: string; k: string }[]>(
      `select o.id, ${listing.key}::text as k from orders o where ${where.join(' and ')} order by ${listing.orderBy} limit ${f.first + 1}`,
      q.values,
    );
    const page = rows.slice(0, f.first);
    const found = page.length ? await ctx.em.find(Order, { id: { $in: page.map((r) => r.id) } }) : [];
    const byId = new Map(found.map((o) => [o.id, o]));
    const edges = page.flatMap((r) => {
      const order = byId.get(r.id);
      return order ? [{ order, cursor: encodeCursor(kind, [r.k, r.id]) }] : [];
    });
    return {
      edges,
      hasNextPage: rows.length > f.first,
      totalCount: async () => {
        const c = new BindParams();
        const [n] = await ctx.em.execute<{ n: string }[]>(`select count(*) as n from orders o where ${orderFilterSql(f, caller.merchantId, env, c).join(' and ')}`, c.values);
        return Number(n?.n ?? 0);
      },
    };
  }
}

/** One page of orders: each with its cursor; the total is counted only when called. */
export interface OrderList {
  edges: { order: Order; cursor: string }[];
  hasNextPage: boolean;
  totalCount: () => Promise<number>;
}
