import { Arg, Authorized, Ctx, Int, Mutation, Query, Resolver } from 'type-graphql';
import type { Network, WalletType } from '../../common/environment.js';
import { DomainError } from '../../common/errors.js';
import type { GqlContext } from '../../graphql/context.js';
import { EnvironmentEnum, NetworkEnum, OrderStatusEnum, WalletTypeEnum } from '../../graphql/scalars.js';
import type { OrderStatus } from './order.transitions.js';
import { CreatedOrder, CreateOrderInput, DepositPayload, OrderPage, OrderType, QuoteType, TokenType, toDepositType, toOrderType, toQuoteType, toTokenType } from './order.types.js';

/** Dashboards name the environment; API and checkout keys carry their own. */
function useEnvironment(ctx: GqlContext, environment?: EnvironmentEnum | null): void {
  if (ctx.caller.kind === 'dashboard') {
    if (!environment) throw new DomainError('VALIDATION_FAILED', 'environment is required for dashboard calls');
    ctx.environment = environment;
  }
}

const merchantOf = (ctx: GqlContext): string => ('merchantId' in ctx.caller ? ctx.caller.merchantId : '');

@Resolver()
export class OrderResolver {
  @Authorized()
  @Query(() => [TokenType], { description: 'Tokens active in the environment' })
  async tokens(@Ctx() ctx: GqlContext, @Arg('environment', () => EnvironmentEnum, { nullable: true }) environment?: EnvironmentEnum): Promise<TokenType[]> {
    useEnvironment(ctx, environment);
    return (await ctx.app.tokens.listActive(ctx.em, ctx.environment!)).map(toTokenType);
  }

  @Authorized('API_KEY')
  @Mutation(() => CreatedOrder, { description: 'Same as POST /merchant/fiat/order' })
  async createOrder(@Arg('input') input: CreateOrderInput, @Ctx() ctx: GqlContext): Promise<CreatedOrder> {
    const { order, key, url } = await ctx.app.orders.create(ctx, { merchant_id: merchantOf(ctx), order_no: input.orderNo, amount: input.amount, name: input.name, email: input.email, success_url: input.successUrl, cancel_url: input.cancelUrl, auto_redirect: input.autoRedirect });
    return { order: toOrderType(order), key, url, expiredAt: Math.floor(order.expiresAt.getTime() / 1000) };
  }

  @Authorized()
  @Query(() => OrderType, { description: 'One order with its quotes and deposits (merchant, dashboard or its checkout key)' })
  async order(@Arg('orderNo') orderNo: string, @Ctx() ctx: GqlContext, @Arg('environment', () => EnvironmentEnum, { nullable: true }) environment?: EnvironmentEnum): Promise<OrderType> {
    useEnvironment(ctx, environment);
    const order = await ctx.app.orders.getByNo(ctx, { merchant_id: merchantOf(ctx), order_no: orderNo });
    const d = await ctx.app.orders.details(ctx, order);
    return toOrderType(d.order, d.quotes, d.deposits, d.payments);
  }

  @Authorized('API_KEY', 'DASHBOARD')
  @Query(() => OrderPage, { description: 'Newest first; filter by status, creation time, network or token; cursor pagination' })
  async orders(
    @Ctx() ctx: GqlContext,
    @Arg('environment', () => EnvironmentEnum, { nullable: true }) environment?: EnvironmentEnum,
    @Arg('status', () => OrderStatusEnum, { nullable: true }) status?: OrderStatus,
    @Arg('from', () => Date, { nullable: true }) from?: Date,
    @Arg('to', () => Date, { nullable: true }) to?: Date,
    @Arg('network', () => NetworkEnum, { nullable: true }) network?: Network,
    @Arg('tokenAddress', () => String, { nullable: true }) tokenAddress?: string,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ): Promise<OrderPage> {
    useEnvironment(ctx, environment);
    const page = await ctx.app.orders.list(ctx, { status: status ?? undefined, from: from ?? undefined, to: to ?? undefined, network: network ?? undefined, tokenAddress: tokenAddress ?? undefined, first: first ?? undefined, after: after ?? undefined });
    const nodes = await Promise.all(page.orders.map(async (o) => {
      const d = await ctx.app.orders.details(ctx, o);
      return toOrderType(o, d.quotes, d.deposits, d.payments);
    }));
    return { nodes, nextCursor: page.nextCursor };
  }

  @Authorized('API_KEY', 'CHECKOUT')
  @Mutation(() => QuoteType, { description: 'Same as POST /merchant/fiat/checkOrderRate: locks the rate for (order, token)' })
  async lockQuote(
    @Arg('orderNo') orderNo: string,
    @Arg('tokenAddress') tokenAddress: string,
    @Arg('network', () => NetworkEnum) network: Network,
    @Ctx() ctx: GqlContext,
  ): Promise<QuoteType> {
    const { quote } = await ctx.app.quotes.lock(ctx, { merchant_id: merchantOf(ctx), transactionID: orderNo, tokenAddress, network });
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
    const r = await ctx.app.deposits.create(ctx, { merchant_id: merchantOf(ctx), transactionID: orderNo, tokenAddress, network, walletType });
    return { deposit: toDepositType(r.deposit, r.quote, r.token), qrValue: r.qrValue };
  }
}
