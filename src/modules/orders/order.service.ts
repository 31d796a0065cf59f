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
import { GroupCommit, type GroupCommitOptions } from '../../common/group-commit.js';
import { OrderStore, type NewOrder, type PendingOrder } from './order.store.js';
import { uuid7 } from '../../common/uuid7.js';
import { Order, type OrderRecord } from './order.entity.js';
import {
  CheckedCreateOrder,
  createOrderCommand,
  getOrderCommand,
  listOrdersCommand,
  type CreateOrderCommand,
  type GetOrderCommand,
  type ListOrdersCommand,
} from './order.commands.js';
import { BindParams } from '../../db/sql-values.js';
import { orderFilterSql, orderListingSql } from './order-filter.sql.js';
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

export class OrderService {
  private readonly createCommand;
  /** The orders table's raw SQL (the insert, one row or a group-committed batch, and idempotency keys). */
  readonly store: OrderStore;
  /** Group commit of order inserts outside transactions; null when `groupCommit` is off. */
  private readonly batcher: GroupCommit<PendingOrder, OrderRecord> | null;

  constructor(
    private readonly keys: CheckoutKeyService,
    private readonly opts: OrderServiceOptions,
  ) {
    this.createCommand = createOrderCommand(opts.minIdr, opts.maxIdr);
    this.store = new OrderStore({ defaultTtlS: opts.defaultTtlS, onBatch: opts.onBatch });
    this.batcher = opts.groupCommit ? new GroupCommit((batch) => this.store.insertBatch(batch), opts.groupCommit) : null;
  }

  /**
   * Merchant server (API key): creates an order in the key's environment. Duplicate order number →
   * DUPLICATE_ORDER_NO. With an idempotency key (order-idempotency.ts), a retry of the same request
   * gets the original order back (`replayed`); without one, nothing changes on this hot path.
   */
  async create(
    ctx: RequestContext,
    cmd: CreateOrderCommand | CheckedCreateOrder,
    opts: { idempotencyKey?: string } = {},
  ): Promise<CreatedOrder & { replayed?: boolean }> {
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
      if (!(await this.store.lockIdempotencyKey(tx, `idempotency:${caller.merchantId}:${caller.environment}:${key}`))) {
        throw new DomainError(
          'IDEMPOTENCY_KEY_IN_FLIGHT',
          'A request with this Idempotency-Key is still being processed; retry after it finishes to get its answer',
        );
      }
      const claimed = await this.store.claimIdempotencyKey(tx, {
        merchantId: caller.merchantId,
        environment: caller.environment,
        key,
        requestHash: hash,
        orderNo: data.orderNo,
        ttlS: this.opts.idempotencyTtlS,
      });
      if (claimed) return this.createOnce(txCtx, caller, data);
      return { ...(await this.replay(txCtx, caller, key, hash)), replayed: true };
    });
  }

  /** Refuses an order in an environment where no network is watched (see `anyNetworkOffered`). */
  assertNetworkWatched(environment: Order['environment']): void {
    if (this.opts.anyNetworkOffered && !this.opts.anyNetworkOffered(environment)) {
      const env = environment === 'production' ? 'production' : 'sandbox';
      throw new DomainError(
        'NO_NETWORK_WATCHED',
        `No network is watched in ${env}: an order could never be paid (the operator sets ${env === 'production' ? 'PRODUCTION' : 'SANDBOX'}_<NETWORK>_RPC_URLS); see /networks`,
        { environment: env },
      );
    }
  }

  private async createOnce(
    ctx: RequestContext,
    caller: { merchantId: string; environment: Order['environment'] },
    data: z.output<ReturnType<typeof createOrderCommand>>,
  ): Promise<CreatedOrder> {
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
  private async replay(
    ctx: RequestContext,
    caller: { merchantId: string; environment: Order['environment'] },
    key: string,
    hash: string,
  ): Promise<CreatedOrder> {
    const row = await this.store.idempotentOrder(ctx.em, caller.merchantId, caller.environment, key);
    if (!row) throw new DomainError('CONFLICT', 'This Idempotency-Key is being used by another request; retry');
    if (row.request_hash !== hash) {
      throw new DomainError('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was already used with a different request body; use a new key for a new order');
    }
    const fresh = this.keys.issue(row.id);
    await this.store.replaceCheckoutKey(ctx.em, row.id, fresh.hash, fresh.expiresAt);
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
   * Outside a transaction, concurrent inserts are group-committed (`OrderStore.insertBatch`): one multi-row
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
    const order = this.batcher && !inTx ? await this.batcher.submit(row) : await this.store.insertOne(row);
    this.opts.onCreated?.(order);
    return { order, key: key.key, url: this.checkoutUrl(order.id, key.key) };
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
    const order = await ctx.em.findOne(
      Order,
      { merchant: caller.merchantId, environment: env, orderNo },
      opts.forUpdate ? { lockMode: 4 /* PESSIMISTIC_WRITE */ } : {},
    );
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
    const [quotes, deposits, payments, receipts] = await Promise.all([
      loaders.quotes.load(order.id),
      loaders.deposits.load(order.id),
      loaders.payments.load(order.id),
      loaders.receipts.load(order.id),
    ]);
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
      where.push(
        `(${listing.key}, o.id) ${listing.dir === 'desc' ? '<' : '>'} (${q.bind(k)}::${f.sort === 'AMOUNT' ? 'numeric' : 'timestamptz'}, ${q.bind(id)}::uuid)`,
      );
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
        const [n] = await ctx.em.execute<{ n: string }[]>(
          `select count(*) as n from orders o where ${orderFilterSql(f, caller.merchantId, env, c).join(' and ')}`,
          c.values,
        );
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
