import { Arg, Authorized, Ctx, Int, Mutation, Query, Resolver, UseMiddleware } from 'type-graphql';
import type { Network, WalletType } from '../../common/environment.js';
import { unix } from '../../common/time.js';
import type { GqlContext } from '../../graphql/context.js';
import { EnvironmentArg } from '../../graphql/request.middleware.js';
import { EnvironmentEnum, NetworkEnum, OrderStatusEnum, WalletTypeEnum } from '../../graphql/scalars.js';
import type { Order } from './order.entity.js';
import type { OrderStatus } from './order.transitions.js';
import { CreatedOrder, CreateOrderInput, DepositPayload, OrderPage, OrderType, QuoteType, TokenType, toDepositType, toOrderType, toQuoteType, toTokenType } from './order.types.js';

/** An order with its children, through the request's batch loaders (a page of orders costs one query per child kind). */
async function withChildren(ctx: GqlContext, order: Order): Promise<OrderType> {
  const d = await ctx.app.orders.details(ctx, order, ctx.loaders);
  return toOrderType(d.order, d.quotes, d.deposits, d.payments, d.receipts);
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
    @Arg('idempotencyKey', () => String, { nullable: true, description: 'Same as the REST Idempotency-Key header: a retry with the same key and input returns the original order (fresh checkout key)' })
    idempotencyKey?: string | null,
  ): Promise<CreatedOrder> {
    const cmd = { orderNo: input.orderNo, amount: input.amount, customerName: input.name, customerEmail: input.email, successUrl: input.successUrl, cancelUrl: input.cancelUrl, autoRedirect: input.autoRedirect };
    const { order, key, url, replayed } = await ctx.app.orders.create(ctx, cmd, { idempotencyKey: idempotencyKey ?? undefined });
    return { order: toOrderType(order), key, url, expiredAt: unix(order.expiresAt), replayed: replayed ?? false };
  }

  @Authorized()
  @UseMiddleware(EnvironmentArg)
  @Query(() => OrderType, { description: 'One order with its quotes and deposits (merchant, dashboard or its checkout key)' })
  async order(@Arg('orderNo') orderNo: string, @Ctx() ctx: GqlContext, @Arg('environment', () => EnvironmentEnum, { nullable: true }) _environment?: EnvironmentEnum): Promise<OrderType> {
    return withChildren(ctx, await ctx.app.orders.getByNo(ctx, { orderNo }));
  }

  @Authorized('API_KEY', 'DASHBOARD')
  @UseMiddleware(EnvironmentArg)
  @Query(() => OrderPage, { description: 'Newest first; filter by status, creation time, network or token; cursor pagination' })
  async orders(
    @Ctx() ctx: GqlContext,
    @Arg('environment', () => EnvironmentEnum, { nullable: true }) _environment?: EnvironmentEnum,
    @Arg('status', () => OrderStatusEnum, { nullable: true }) status?: OrderStatus,
    @Arg('from', () => Date, { nullable: true }) from?: Date,
    @Arg('to', () => Date, { nullable: true }) to?: Date,
    @Arg('network', () => NetworkEnum, { nullable: true }) network?: Network,
    @Arg('tokenAddress', () => String, { nullable: true }) tokenAddress?: string,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ): Promise<OrderPage> {
    const page = await ctx.app.orders.list(ctx, { status: status ?? undefined, from: from ?? undefined, to: to ?? undefined, network: network ?? undefined, tokenAddress: tokenAddress ?? undefined, first: first ?? undefined, after: after ?? undefined });
    return { nodes: await Promise.all(page.orders.map((o) => withChildren(ctx, o))), nextCursor: page.nextCursor };
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
