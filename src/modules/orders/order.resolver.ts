import { Arg, Authorized, Ctx, Int, Mutation, Query, Resolver, UseMiddleware } from 'type-graphql';
import { pageInfoOf, totalCountResolver } from '../../graphql/connection.js';
import type { OrderSort, SortDirection, StatsGroup } from './order.commands.js';
import type { Network, WalletType } from '../../common/environment.js';
import type { GqlContext } from '../../graphql/context.js';
import { EnvironmentArg } from '../../graphql/request.middleware.js';
import { EnvironmentEnum, NetworkEnum, OrderSortEnum, OrderStatsGroupEnum, OrderStatusEnum, SortDirectionEnum, WalletTypeEnum } from '../../graphql/scalars.js';
import type { Order } from './order.entity.js';
import type { OrderStatus } from './order.transitions.js';
import {
  CreatedOrder,
  CreateOrderInput,
  DepositPayload,
  OrderConnection,
  OrderStatsBucket,
  OrderType,
  QuoteType,
  TokenType,
  toDepositType,
  toOrderType,
  toQuoteType,
  toTokenType,
} from './order.types.js';

/** An order with its children and paying token, through the request's batch loaders (a page of orders costs one query per child kind). */
async function withChildren(ctx: GqlContext, order: Order): Promise<OrderType> {
  const [d, paidToken] = await Promise.all([
    ctx.app.orders.details(ctx, order, ctx.loaders),
    order.paidTokenId ? ctx.loaders.tokens.load(order.paidTokenId) : null,
  ]);
  return toOrderType(d.order, d.quotes, d.deposits, d.payments, d.receipts, paidToken);
}

@Resolver()
export class OrderResolver {
  @Authorized()
  @UseMiddleware(EnvironmentArg)
  @Query(() => [TokenType], { description: 'Tokens active in the environment' })
  async tokens(@Ctx() ctx: GqlContext, @Arg('environment', () => EnvironmentEnum, { nullable: true }) _environment?: EnvironmentEnum): Promise<TokenType[]> {
    return (await ctx.app.tokens.list(ctx)).map(toTokenType);
  }

  @Authorized('API_KEY')
  @Mutation(() => CreatedOrder, { description: 'Same as POST /merchant/fiat/order' })
  async createOrder(
    @Arg('input') input: CreateOrderInput,
    @Ctx() ctx: GqlContext,
    @Arg('idempotencyKey', () => String, {
      nullable: true,
      description: 'Same as the REST Idempotency-Key header: a retry with the same key and input returns the original order (fresh checkout key)',
    })
    idempotencyKey?: string | null,
  ): Promise<CreatedOrder> {
    const cmd = {
      orderNo: input.orderNo,
      amount: input.amount,
      customerName: input.name,
      customerEmail: input.email,
      successUrl: input.successUrl,
      cancelUrl: input.cancelUrl,
      autoRedirect: input.autoRedirect,
    };
    const { order, key, url, replayed } = await ctx.app.orders.create(ctx, cmd, { idempotencyKey: idempotencyKey ?? undefined });
    return { order: toOrderType(order), key, url, expiresAt: order.expiresAt, replayed: replayed ?? false };
  }

  @Authorized()
  @UseMiddleware(EnvironmentArg)
  @Query(() => OrderType, { description: 'One order with its quotes and deposits (merchant, dashboard or its checkout key)' })
  async order(
    @Arg('orderNo') orderNo: string,
    @Ctx() ctx: GqlContext,
    @Arg('environment', () => EnvironmentEnum, { nullable: true }) _environment?: EnvironmentEnum,
  ): Promise<OrderType> {
    return withChildren(ctx, await ctx.app.orders.getByNo(ctx, { orderNo }));
  }

  @Authorized('API_KEY', 'DASHBOARD')
  @UseMiddleware(EnvironmentArg)
  @Query(() => OrderConnection, {
    description: 'Orders of the environment: filters, sort (newest first by default), cursor pagination (docs/api.md "GraphQL for dashboards")',
  })
  async orders(
    @Ctx() ctx: GqlContext,
    @Arg('environment', () => EnvironmentEnum, { nullable: true }) _environment?: EnvironmentEnum,
    @Arg('statuses', () => [OrderStatusEnum], { nullable: true, description: 'Any of these statuses' }) statuses?: OrderStatus[],
    @Arg('status', () => OrderStatusEnum, { nullable: true, deprecationReason: 'Use statuses' }) status?: OrderStatus,
    @Arg('createdFrom', () => Date, { nullable: true, description: 'Created at or after' }) createdFrom?: Date,
    @Arg('createdTo', () => Date, { nullable: true, description: 'Created before' }) createdTo?: Date,
    @Arg('from', () => Date, { nullable: true, deprecationReason: 'Use createdFrom' }) from?: Date,
    @Arg('to', () => Date, { nullable: true, deprecationReason: 'Use createdTo' }) to?: Date,
    @Arg('paidFrom', () => Date, { nullable: true, description: 'Paid at or after' }) paidFrom?: Date,
    @Arg('paidTo', () => Date, { nullable: true, description: 'Paid before' }) paidTo?: Date,
    @Arg('network', () => NetworkEnum, { nullable: true, description: 'Network of the deposit that paid the order' }) network?: Network,
    @Arg('tokenAddress', () => String, { nullable: true, description: 'Token of the deposit that paid the order' }) tokenAddress?: string,
    @Arg('search', () => String, { nullable: true, description: 'Order number prefix, or part of the customer name or email' }) search?: string,
    @Arg('paymentLinkId', () => String, { nullable: true }) paymentLinkId?: string,
    @Arg('overpaid', () => Boolean, { nullable: true }) overpaid?: boolean,
    @Arg('sort', () => OrderSortEnum, { nullable: true }) sort?: OrderSort,
    @Arg('direction', () => SortDirectionEnum, { nullable: true, description: 'DESC (default) or ASC' }) direction?: SortDirection,
    @Arg('first', () => Int, { nullable: true, description: '1-100, default 20' }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ): Promise<OrderConnection> {
    const wanted = statuses ?? (status ? [status] : undefined);
    const page = await ctx.app.orders.list(ctx, {
      statuses: wanted,
      createdFrom: createdFrom ?? from ?? undefined,
      createdTo: createdTo ?? to ?? undefined,
      paidFrom: paidFrom ?? undefined,
      paidTo: paidTo ?? undefined,
      network: network ?? undefined,
      tokenAddress: tokenAddress ?? undefined,
      search: search ?? undefined,
      paymentLinkId: paymentLinkId ?? undefined,
      overpaid: overpaid ?? undefined,
      sort: sort ?? undefined,
      direction: direction ?? undefined,
      first: first ?? undefined,
      after: after ?? undefined,
    });
    const edges = await Promise.all(page.edges.map(async (e) => ({ cursor: e.cursor, node: await withChildren(ctx, e.order) })));
    const pageInfo = pageInfoOf(edges, page.hasNextPage, after);
    return { edges, pageInfo, count: page.totalCount, nodes: edges.map((e) => e.node), nextCursor: page.hasNextPage ? pageInfo.endCursor : null };
  }

  @Authorized('API_KEY', 'DASHBOARD')
  @UseMiddleware(EnvironmentArg)
  @Query(() => [OrderStatsBucket], {
    description: 'Counts and sums of orders created in [from, to), grouped; computed by the database (docs/api.md "GraphQL for dashboards")',
  })
  async orderStats(
    @Ctx() ctx: GqlContext,
    @Arg('from', () => Date) from: Date,
    @Arg('to', () => Date) to: Date,
    @Arg('environment', () => EnvironmentEnum, { nullable: true }) _environment?: EnvironmentEnum,
    @Arg('groupBy', () => [OrderStatsGroupEnum], { nullable: true, description: 'Empty: one bucket for the range' }) groupBy?: StatsGroup[],
    @Arg('timeZone', () => String, { nullable: true, defaultValue: 'Asia/Jakarta', description: 'IANA name; DAY and HOUR buckets are local to it' })
    timeZone?: string,
  ): Promise<OrderStatsBucket[]> {
    return ctx.app.orderStats.stats(ctx, { from, to, groupBy: groupBy ?? [], timeZone: timeZone ?? undefined });
  }

  @Authorized('API_KEY', 'CHECKOUT')
  @Mutation(() => QuoteType, { description: 'Same as POST /merchant/fiat/checkOrderRate: locks the rate for (order, token)' })
  async lockQuote(
    @Arg('orderNo') orderNo: string,
    @Arg('tokenAddress') tokenAddress: string,
    @Arg('network', () => NetworkEnum) network: Network,
    @Ctx() ctx: GqlContext,
  ): Promise<QuoteType> {
    const { quote } = await ctx.app.quotes.lock(ctx, { orderNo, network, tokenAddress });
    return toQuoteType(quote);
  }

  @Authorized('API_KEY', 'CHECKOUT')
  @Mutation(() => DepositPayload, { description: 'Same as POST /pgqr/fiat/create: the order’s deposit address and QR for a token' })
  async createDeposit(
    @Arg('orderNo') orderNo: string,
    @Arg('tokenAddress') tokenAddress: string,
    @Arg('network', () => NetworkEnum) network: Network,
    @Arg('walletType', () => WalletTypeEnum) walletType: WalletType,
    @Ctx() ctx: GqlContext,
  ): Promise<DepositPayload> {
    const r = await ctx.app.deposits.create(ctx, { orderNo, network, tokenAddress, walletType });
    return { deposit: toDepositType(r.deposit, r.quote, r.token), qrValue: r.qrValue };
  }
}

export const OrderConnectionResolver = totalCountResolver(OrderConnection, 'Orders');
