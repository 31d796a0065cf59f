import { randomUUID } from 'node:crypto';
import { requireApiKey, requireEnvironment, requireMerchant, requireMerchantWide, requireOrderScope } from '../../common/access.js';
import type { RequestContext } from '../../common/context.js';
import { DomainError } from '../../common/errors.js';
import { parseInput } from '../../common/validation.js';
import type { Deposit } from '../deposits/deposit.entity.js';
import type { Payment } from '../payments/payment.entity.js';
import type { Quote } from '../quotes/quote.entity.js';
import { assertReturnUrls, saveOrderReturnUrls } from './return-urls.js';
import type { CheckoutKeyService } from './checkout-key.service.js';
import { prepared } from '../../db/prepared.js';
import { Order, type OrderRecord } from './order.entity.js';
import { createOrderCommand, getOrderCommand, listOrdersCommand, type CreateOrderCommand, type GetOrderCommand, type ListOrdersCommand, type OrderFilter, type OrderSort } from './order.commands.js';
import { decodeCursor, encodeCursor, isPgInteger, isPgTimestamp } from '../../common/cursor.js';
import { createOrderLoaders, type OrderLoaders } from './order.loaders.js';
import { OPEN_STATUSES } from './order.transitions.js';

export interface OrderServiceOptions {
  /** Read per order: the listening port may be known only after start. */
  publicBaseUrl: () => string;
  defaultTtlS: number;
  minIdr: number;
  maxIdr: number;
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

  constructor(
    private readonly keys: CheckoutKeyService,
    private readonly opts: OrderServiceOptions,
  ) {
    this.createCommand = createOrderCommand(opts.minIdr, opts.maxIdr);
  }

  /** Merchant server (API key): creates an order in the key's environment. Duplicate order number → DUPLICATE_ORDER_NO. */
  async create(ctx: RequestContext, cmd: CreateOrderCommand): Promise<CreatedOrder> {
    const caller = requireApiKey(ctx);
    const data = parseInput(this.createCommand, cmd);
    assertReturnUrls(caller.environment, data);
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
    await saveOrderReturnUrls(ctx.em, created.order.id, data);
    return created;
  }

  /**
   * Shared by API orders and payment-link orders: ONE statement (the merchant's lifetime setting is
   * read inside it, and no explicit transaction is opened), because this is the merchants' hot path.
   * `ON CONFLICT DO NOTHING` on (merchant, environment, order_no) turns a duplicate into a clear
   * error without an exception round trip; concurrent duplicates still produce exactly one order.
   * Checks no caller: API orders and payment-link opens authorise before calling it, and `ctx.em`
   * may be their transaction.
   */
  async insert(
    ctx: RequestContext,
    o: Pick<Order, 'environment' | 'orderNo' | 'amount' | 'customerName' | 'customerEmail' | 'source' | 'paymentLinkId'> & { merchantId: string },
  ): Promise<CreatedOrder> {
    const { em } = ctx;
    const id = randomUUID();
    const key = this.keys.issue(id);
    const rows = await prepared<Record<string, unknown>>(
      em,
      'order-insert',
      `insert into orders (id, merchant_id, environment, order_no, amount, customer_name, customer_email, source, payment_link_id,
                           checkout_key_hash, checkout_key_expires_at, expires_at)
       select ?, m.id, ?, ?, ?, ?, ?, ?, ?, ?, ?, now() + make_interval(secs => coalesce(m.order_ttl_seconds, ?))
       from merchants m where m.id = ?
       on conflict (merchant_id, environment, order_no) do nothing
       returning id, merchant_id, environment, order_no, amount, currency, status, customer_name, customer_email, source, payment_link_id, expires_at, created_at`,
      [id, o.environment, o.orderNo, o.amount.toString(), o.customerName, o.customerEmail, o.source, o.paymentLinkId, key.hash, key.expiresAt, this.opts.defaultTtlS, o.merchantId],
    );
    const row = rows[0];
    if (!row) {
      const exists = await em.execute<{ n: number }[]>('select 1 as n from merchants where id = ?', [o.merchantId]);
      if (!exists.length) throw new DomainError('MERCHANT_NOT_FOUND', 'Merchant not found');
      throw new DomainError('DUPLICATE_ORDER_NO', `An order with order_no ${o.orderNo} already exists`, { order_no: o.orderNo });
    }
    const order: OrderRecord = {
      id: row.id as string,
      merchant: { id: row.merchant_id as string },
      environment: row.environment as OrderRecord['environment'],
      orderNo: row.order_no as string,
      amount: BigInt(row.amount as string),
      currency: row.currency as string,
      status: row.status as OrderRecord['status'],
      customerName: row.customer_name as string | null,
      customerEmail: row.customer_email as string | null,
      source: row.source as OrderRecord['source'],
      paymentLinkId: row.payment_link_id as string | null,
      // The ORM's connections return timestamps as text.
      expiresAt: new Date(row.expires_at as string),
      paidAt: null,
      createdAt: new Date(row.created_at as string),
    };
    return { order, key: key.key, url: `${this.opts.publicBaseUrl()}/checkout/${order.id}?key=${key.key}` };
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
  async details(ctx: RequestContext, order: Order, loaders: OrderLoaders = createOrderLoaders(ctx.em)): Promise<{ order: Order; quotes: Quote[]; deposits: Deposit[]; payments: Payment[] }> {
    const [quotes, deposits, payments] = await Promise.all([loaders.quotes.load(order.id), loaders.deposits.load(order.id), loaders.payments.load(order.id)]);
    return { order, quotes, deposits, payments };
  }

  /** Refuses quotes and deposits for orders that can no longer be paid. */
  assertPayable(order: Order, now = new Date()): void {
    if (!OPEN_STATUSES.includes(order.status)) throw new DomainError('ORDER_CLOSED', `Order ${order.orderNo} is ${order.status}`);
    if (order.expiresAt <= now) throw new DomainError('ORDER_EXPIRED', `Order ${order.orderNo} expired`);
  }

  /**
   * Dashboard / merchant listing: filters (orderFilterSql), a sort with a keyset cursor (the sort key,
   * then id) and, only when asked, the total count of the filtered rows. Two statements for a page
   * (ids, then the orders) plus one for the count.
   */
  async list(ctx: RequestContext, cmd: ListOrdersCommand): Promise<OrderList> {
    const f = parseInput(listOrdersCommand, cmd);
    const caller = requireMerchantWide(ctx, 'Listing orders');
    const env = requireEnvironment(ctx);
    const filter = orderFilterSql(f, caller.merchantId, env);
    const key = SORT_COLUMNS[f.sort];
    const where = [...filter.where];
    const params = [...filter.params];
    if (f.sort === 'PAID_AT') where.push('o.paid_at is not null');
    const kind = `orders:${f.sort}:${f.direction}`;
    if (f.after) {
      const [k, id] = decodeCursor(kind, f.after, [f.sort === 'AMOUNT' ? isPgInteger : isPgTimestamp]);
      where.push(`(${key}, o.id) ${f.direction === 'DESC' ? '<' : '>'} (?::${f.sort === 'AMOUNT' ? 'numeric' : 'timestamptz'}, ?::uuid)`);
      params.push(k, id);
    }
    const dir = f.direction === 'DESC' ? 'desc' : 'asc';
    const rows = await ctx.em.execute<{ id: string; k: string }[]>(
      `select o.id, ${key}::text as k from orders o where ${where.join(' and ')} order by ${key} ${dir}, o.id ${dir} limit ${f.first + 1}`,
      params,
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
        const [c] = await ctx.em.execute<{ n: string }[]>(`select count(*) as n from orders o where ${filter.where.join(' and ')}`, filter.params);
        return Number(c?.n ?? 0);
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

const SORT_COLUMNS: Record<OrderSort, string> = { CREATED_AT: 'o.created_at', AMOUNT: 'o.amount', PAID_AT: 'o.paid_at' };

/** `%`, `_` and `\` taken literally in a LIKE pattern. */
const likeLiteral = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * The WHERE clauses of an order listing (alias `o`), always within one merchant's environment. The
 * paying network/token are the order's own columns (copied at settlement), so no join is needed.
 * Shared by the GraphQL listing and anything else that lists orders with the same filters.
 */
export function orderFilterSql(f: OrderFilter, merchantId: string, environment: string): { where: string[]; params: unknown[] } {
  const where: string[] = ['o.merchant_id = ?', 'o.environment = ?'];
  const params: unknown[] = [merchantId, environment];
  const add = (clause: string, ...values: unknown[]) => {
    where.push(clause);
    params.push(...values);
  };
  if (f.statuses?.length) add(`o.status in (${f.statuses.map(() => '?').join(', ')})`, ...f.statuses);
  if (f.createdFrom) add('o.created_at >= ?', f.createdFrom);
  if (f.createdTo) add('o.created_at < ?', f.createdTo);
  if (f.paidFrom) add('o.paid_at >= ?', f.paidFrom);
  if (f.paidTo) add('o.paid_at < ?', f.paidTo);
  if (f.network) add('o.paid_network = ?', f.network);
  if (f.tokenAddress) add('o.paid_token_id in (select t.id from tokens t where t.environment = o.environment and lower(t.address) = lower(?))', f.tokenAddress);
  if (f.paymentLinkId) add('o.payment_link_id = ?', f.paymentLinkId);
  if (f.overpaid !== undefined) add('o.overpaid = ?', f.overpaid);
  if (f.search) {
    const s = likeLiteral(f.search);
    add("(o.order_no like ? or o.customer_name ilike ? or o.customer_email ilike ?)", `${s}%`, `%${s}%`, `%${s}%`);
  }
  return { where, params };
}
