import { randomUUID } from 'node:crypto';
import { requireApiKey, requireEnvironment, requireMerchant, requireMerchantWide, requireOrderScope } from '../../common/access.js';
import type { RequestContext } from '../../common/context.js';
import { DomainError } from '../../common/errors.js';
import { parseInput } from '../../common/validation.js';
import type { Deposit } from '../deposits/deposit.entity.js';
import type { Payment } from '../payments/payment.entity.js';
import type { UnattributedReceipt } from '../payments/unattributed-receipt.entity.js';
import type { Quote } from '../quotes/quote.entity.js';
import { assertReturnUrls, saveOrderReturnUrls } from './return-urls.js';
import type { CheckoutKeyService } from './checkout-key.service.js';
import { prepared } from '../../db/prepared.js';
import { Order, type OrderRecord } from './order.entity.js';
import { createOrderCommand, getOrderCommand, listOrdersCommand, type CreateOrderCommand, type GetOrderCommand, type ListOrdersCommand } from './order.commands.js';
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
      overpaid: false,
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

  /** Dashboard / merchant listing with filters and a keyset cursor (created_at desc, id desc). */
  async list(ctx: RequestContext, cmd: ListOrdersCommand): Promise<{ orders: Order[]; nextCursor: string | null }> {
    const f = parseInput(listOrdersCommand, cmd);
    const caller = requireMerchantWide(ctx, 'Listing orders');
    const env = requireEnvironment(ctx);
    const where: string[] = ['o.merchant_id = ?', 'o.environment = ?'];
    const params: unknown[] = [caller.merchantId, env];
    const add = (list: string[], clause: string, value: unknown) => {
      list.push(clause);
      params.push(value);
    };
    if (f.status) add(where, 'o.status = ?', f.status);
    if (f.from) add(where, 'o.created_at >= ?', f.from);
    if (f.to) add(where, 'o.created_at < ?', f.to);
    if (f.network || f.tokenAddress) {
      const sub = ['d.order_id = o.id'];
      if (f.network) add(sub, 'd.network = ?', f.network);
      if (f.tokenAddress) add(sub, 'lower(t.address) = lower(?)', f.tokenAddress);
      where.push(`exists (select 1 from deposits d join tokens t on t.id = d.token_id where ${sub.join(' and ')})`);
    }
    if (f.after) {
      const c = decodeCursor(f.after);
      where.push('(o.created_at, o.id) < (?, ?)');
      params.push(c.createdAt, c.id);
    }
    const rows = await ctx.em
      .execute<{ id: string }[]>(`select o.id from orders o where ${where.join(' and ')} order by o.created_at desc, o.id desc limit ${f.first + 1}`, params);
    const ids = rows.slice(0, f.first).map((r) => r.id);
    const orders = ids.length ? await ctx.em.find(Order, { id: { $in: ids } }, { orderBy: { createdAt: 'desc', id: 'desc' } }) : [];
    const last = orders[orders.length - 1];
    return { orders, nextCursor: rows.length > f.first && last ? encodeCursor(last) : null };
  }
}

const encodeCursor = (o: Order) => Buffer.from(`${o.createdAt.toISOString()}|${o.id}`).toString('base64url');
function decodeCursor(s: string): { createdAt: Date; id: string } {
  const [iso, id] = Buffer.from(s, 'base64url').toString('utf8').split('|');
  const createdAt = new Date(iso ?? '');
  if (!id || Number.isNaN(createdAt.getTime()) || !/^[0-9a-f-]{36}$/.test(id)) throw new DomainError('VALIDATION_FAILED', 'Invalid cursor');
  return { createdAt, id };
}
