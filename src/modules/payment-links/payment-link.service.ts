import { flushAudited } from '../audit/audit.service.js';
import type { EntityManager } from '@mikro-orm/postgresql';
import { requireEnvironment, requirePermission, type DashboardCaller } from '../../common/access.js';
import type { RequestContext } from '../../common/context.js';
import { randomHex } from '../../common/crypto.js';
import type { Environment } from '../../common/environment.js';
import { DomainError } from '../../common/errors.js';
import { parseInput } from '../../common/validation.js';
import { inPageOrder, newestFirstIds } from '../../db/keyset.js';
import { assertReturnUrls, saveOrderReturnUrls } from '../orders/return-urls.js';
import type { CreatedOrder, OrderService } from '../orders/order.service.js';
import type { RateLimits } from '../limits/rate-limit.service.js';
import { linkClient } from './link-client.js';
import { PaymentLink, paymentLinkStatus, remainingUses } from './payment-link.entity.js';
import {
  createPaymentLinkCommand,
  listPaymentLinksCommand,
  openPaymentLinkCommand,
  pagePaymentLinksCommand,
  totalOf,
  updatePaymentLinkCommand,
  type CreatePaymentLinkCommand,
  type ListPaymentLinksCommand,
  type OpenPaymentLinkCommand,
  type PagePaymentLinksCommand,
  type UpdatePaymentLinkCommand,
} from './payment-link.commands.js';

export interface PaymentLinkServiceOptions {
  /** Read per link: the listening port may be known only after start. */
  publicBaseUrl: () => string;
  minIdr: number;
  maxIdr: number;
  /** Unpaid orders one client may hold on one link at once (PAYMENT_LINK_UNPAID_PER_CLIENT). */
  unpaidPerClient: number;
}

export interface PaymentLinkPage {
  items: PaymentLink[];
  total: number;
  limit: number;
  offset: number;
}

/** A connection page of links: each with its cursor; the total is counted only when called. */
export interface PaymentLinkConnectionPage {
  edges: { node: PaymentLink; cursor: string }[];
  hasNextPage: boolean;
  totalCount: () => Promise<number>;
}

export interface OpenedPaymentLink extends CreatedOrder {
  link: PaymentLink;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A path or body id as a UUID, or null: ids that cannot exist are "not found", never a database error. */
const asLinkId = (id: unknown): string | null => (typeof id === 'string' && UUID.test(id) ? id.toLowerCase() : null);

/**
 * Payment links: dashboard management (JWT, environment of the path / argument) and the public open
 * and validate operations of the hosted checkout page. REST and GraphQL both call these methods.
 */
export class PaymentLinkService {
  private readonly createCommand;

  constructor(
    private readonly orders: OrderService,
    private readonly opts: PaymentLinkServiceOptions,
    private readonly limits: RateLimits,
  ) {
    this.createCommand = createPaymentLinkCommand(opts.minIdr, opts.maxIdr);
  }

  /** Public page of a link. */
  url(link: PaymentLink): string {
    return `${this.opts.publicBaseUrl()}/pay/${link.id}`;
  }

  async create(ctx: RequestContext, cmd: CreatePaymentLinkCommand): Promise<PaymentLink> {
    const caller = requireEditor(ctx);
    const env = requireEnvironment(ctx);
    const data = parseInput(this.createCommand, cmd);
    assertReturnUrls(env, data);
    const now = Date.now();
    const link = ctx.em.create(PaymentLink, {
      merchant: caller.merchantId,
      environment: env,
      title: data.title,
      products: data.products.map((p) => ({ name: p.name, price: p.price.toString(), quantity: p.quantity })),
      totalPrice: totalOf(data.products),
      expirationTime: data.expirationTime,
      expiresAt: new Date(now + data.expirationTime * 1000),
      maxUsage: data.maxUsage,
      successUrl: data.successUrl ?? null,
      cancelUrl: data.cancelUrl ?? null,
      autoRedirect: data.autoRedirect ?? false,
    });
    await flushAudited(ctx.em, ctx, 'payment_link.created', { subject: link.id, after: linkAudit(link) });
    return link;
  }

  /** Newest first; `limit` 1–100 (default 20): larger values are refused with VALIDATION_FAILED, not clamped. */
  async list(ctx: RequestContext, cmd: ListPaymentLinksCommand = {}): Promise<PaymentLinkPage> {
    const caller = requireViewer(ctx);
    const env = requireEnvironment(ctx);
    const { limit, offset } = parseInput(listPaymentLinksCommand, cmd ?? {});
    const [items, total] = await ctx.em.findAndCount(
      PaymentLink,
      { merchant: caller.merchantId, environment: env },
      { orderBy: { createdAt: 'desc', id: 'desc' }, limit, offset },
    );
    return { items, total, limit, offset };
  }

  /** GraphQL's connection: newest first, keyset cursor (REST keeps the spec's limit/offset, `list`). */
  async page(ctx: RequestContext, cmd: PagePaymentLinksCommand = {}): Promise<PaymentLinkConnectionPage> {
    const caller = requireViewer(ctx);
    const env = requireEnvironment(ctx);
    const { first, after } = parseInput(pagePaymentLinksCommand, cmd ?? {});
    const page = await newestFirstIds(ctx.em, {
      kind: 'paymentLinks',
      from: 'payment_links l',
      id: 'l.id',
      key: 'l.created_at',
      where: ['l.merchant_id = ?', 'l.environment = ?'],
      params: [caller.merchantId, env],
      first,
      after,
    });
    const found = page.rows.length ? await ctx.em.find(PaymentLink, { id: { $in: page.rows.map((r) => r.id) } }) : [];
    return { edges: inPageOrder(page.rows, found), hasNextPage: page.hasNextPage, totalCount: page.totalCount };
  }

  async get(ctx: RequestContext, id: string): Promise<PaymentLink> {
    const caller = requireViewer(ctx);
    return this.findOwned(ctx.em, caller.merchantId, requireEnvironment(ctx), id);
  }

  /**
   * Title, validity (restarted from now) and Active/Inactive. Re-activating a link whose deadline
   * passed needs a new expiration_time in the same request, otherwise it would stay Expired.
   */
  async update(ctx: RequestContext, cmd: UpdatePaymentLinkCommand): Promise<PaymentLink> {
    const caller = requireEditor(ctx);
    const data = parseInput(updatePaymentLinkCommand, cmd);
    const link = await this.findOwned(ctx.em, caller.merchantId, requireEnvironment(ctx), data.id);
    const before = linkAudit(link);
    const now = Date.now();
    if (data.title !== undefined) link.title = data.title;
    if (data.expirationTime !== undefined) {
      link.expirationTime = data.expirationTime;
      link.expiresAt = new Date(now + data.expirationTime * 1000);
    }
    if (data.status !== undefined) {
      if (data.status === 'Active' && link.expiresAt.getTime() <= now) {
        throw new DomainError('PAYMENT_LINK_EXPIRED', 'This payment link has expired; send a new expiration_time to reactivate it');
      }
      link.status = data.status;
    }
    // Only the changed columns are written, so a concurrent open's usage_count increment is never overwritten.
    await flushAudited(ctx.em, ctx, 'payment_link.updated', { subject: link.id, before, after: linkAudit(link) });
    return link;
  }

  /** DELETE: deactivates (orders made from the link keep pointing at it). Idempotent. */
  async deactivate(ctx: RequestContext, id: string): Promise<PaymentLink> {
    const caller = requireEditor(ctx);
    const link = await this.findOwned(ctx.em, caller.merchantId, requireEnvironment(ctx), id);
    if (link.status !== 'Inactive') {
      const before = linkAudit(link);
      link.status = 'Inactive';
      await flushAudited(ctx.em, ctx, 'payment_link.deleted', { subject: link.id, before, after: linkAudit(link) });
    }
    return link;
  }

  /** Public: the link as the checkout page shows it. Unknown or malformed ids → PAYMENT_LINK_NOT_FOUND. */
  async validate(ctx: RequestContext, id: string): Promise<PaymentLink> {
    const link = await this.findPublic(ctx.em, ctx.environment, id);
    if (!link) throw notFound();
    return link;
  }

  /**
   * Public: reserves one use of the link and creates its order, in one transaction. The use is
   * taken by a single conditional UPDATE, so under any concurrency usage_count never passes
   * max_usage: PostgreSQL re-checks the WHERE clause of waiting updaters against the committed row,
   * and the order insert commits or rolls back together with the increment. When no row is updated
   * the link is read again only to say why. The use goes back if the order expires unpaid
   * (link-use.ts). Anonymous callers are bounded before anything is written: opens per IP (all
   * links) and per link, per hour — each open is an order whose checkout key can allocate deposits
   * and unique codes, so these budgets bound what anyone can allocate without paying. And one
   * client (its address, link-client.ts) holds at most `unpaidPerClient` unpaid orders of one link
   * at once: counted under a transaction-scoped advisory lock on (link, client), so concurrent opens
   * from one client cannot all pass the count; one more is RATE_LIMITED until the oldest expires.
   */
  async open(ctx: RequestContext, cmd: OpenPaymentLinkCommand): Promise<OpenedPaymentLink> {
    const id = asLinkId(parseInput(openPaymentLinkCommand, cmd).id);
    if (!id) throw notFound();
    await this.limits.consume('linkOpenIp', ctx.ip);
    await this.limits.consume('linkOpen', id);
    const env = ctx.environment;
    if (env) this.orders.assertNetworkWatched(env); // no use is taken for an order nobody could pay
    const client = linkClient(ctx.ip);
    const opened = await ctx.em.transactional(async (tx) => {
      await tx.execute(`select pg_advisory_xact_lock(hashtextextended(?, 0))`, [`link-open:${id}:${client}`]);
      const [held] = await tx.execute<{ n: number; retry_s: number | null }[]>(
        `select count(*)::int as n, ceil(extract(epoch from min(o.expires_at) - now()))::int as retry_s
           from payment_link_opens p join orders o on o.id = p.order_id
          where p.payment_link_id = ? and p.client = ? and o.link_use_held and o.status = 'Created'`,
        [id, client],
      );
      if (held && held.n >= this.opts.unpaidPerClient) {
        const retryAfterS = Math.max(1, held.retry_s ?? 1);
        throw new DomainError(
          'RATE_LIMITED',
          `This client already holds ${held.n} unpaid orders of this payment link; pay one or retry after ${retryAfterS} s, when the oldest expires`,
          { retryAfterS },
        );
      }
      const rows = await tx.execute<{ id: string }[]>(
        `update payment_links set usage_count = usage_count + 1, updated_at = now()
          where id = ?${env ? ' and environment = ?' : ''} and status = 'Active' and expires_at > now() and usage_count < max_usage
          returning id`,
        env ? [id, env] : [id],
      );
      if (!rows.length) return null;
      const link = await tx.findOneOrFail(PaymentLink, id, { refresh: true });
      const created = await this.orders.insert(
        { ...ctx, em: tx },
        {
          merchantId: link.merchant.id,
          environment: link.environment,
          orderNo: orderNoFor(link),
          amount: link.totalPrice,
          customerName: null,
          customerEmail: null,
          source: 'payment_link',
          paymentLinkId: link.id,
        },
      );
      await saveOrderReturnUrls(tx, created.order.id, { successUrl: link.successUrl, cancelUrl: link.cancelUrl, autoRedirect: link.autoRedirect });
      await tx.execute(`insert into payment_link_opens (order_id, payment_link_id, client) values (?, ?, ?)`, [created.order.id, link.id, client]);
      return { ...created, link };
    });
    if (opened) return opened;
    throw this.whyUnusable(await this.findPublic(ctx.em.fork(), env, id));
  }

  private whyUnusable(link: PaymentLink | null, now = new Date()): DomainError {
    if (!link) return notFound();
    const status = paymentLinkStatus(link, now);
    if (status === 'Inactive') return new DomainError('PAYMENT_LINK_INACTIVE', 'This payment link has been deactivated by the merchant');
    if (status === 'Expired') return new DomainError('PAYMENT_LINK_EXPIRED', 'This payment link has expired');
    if (remainingUses(link) === 0) return new DomainError('PAYMENT_LINK_EXHAUSTED', `This payment link has reached its maximum of ${link.maxUsage} uses`);
    // Expired between the UPDATE (database clock) and this read (our clock): still an expiry.
    return new DomainError('PAYMENT_LINK_EXPIRED', 'This payment link has expired');
  }

  /** A link of the caller's merchant in the environment; another merchant's link is "not found" (no existence leak). */
  private async findOwned(em: EntityManager, merchantId: string, env: Environment, id: unknown): Promise<PaymentLink> {
    const uuid = asLinkId(id);
    if (!uuid) throw notFound();
    const link = await em.findOne(PaymentLink, { id: uuid, merchant: merchantId, environment: env });
    if (!link) throw notFound();
    return link;
  }

  private async findPublic(em: EntityManager, env: Environment | null, id: unknown): Promise<PaymentLink | null> {
    const uuid = asLinkId(id);
    if (!uuid) return null;
    return em.findOne(PaymentLink, env ? { id: uuid, environment: env } : { id: uuid });
  }
}

const notFound = () => new DomainError('PAYMENT_LINK_NOT_FOUND', 'Payment link not found');

/** `PL-<first 8 hex of the link id>-<12 random hex>`: tells where the order came from, unique per merchant in practice (48 random bits). */
export function orderNoFor(link: Pick<PaymentLink, 'id'>): string {
  return `PL-${link.id.slice(0, 8)}-${randomHex(6)}`;
}

const DASHBOARD_ONLY = 'Payment links are managed from the dashboard';
/** Any dashboard role may read links. */
const requireViewer = (ctx: RequestContext): DashboardCaller => requirePermission(ctx, 'paymentLinks.read', DASHBOARD_ONLY);
/** Owners and admins change them. */
const requireEditor = (ctx: RequestContext): DashboardCaller => requirePermission(ctx, 'paymentLinks.manage', DASHBOARD_ONLY);

/** A link as the audit trail shows it. */
const linkAudit = (l: PaymentLink) => ({
  environment: l.environment,
  title: l.title,
  amountIdr: l.totalPrice,
  maxUsage: l.maxUsage,
  expiresAt: l.expiresAt,
  status: l.status,
});
