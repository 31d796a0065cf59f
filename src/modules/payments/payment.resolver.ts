import { Arg, Authorized, Ctx, FieldResolver, Int, Query, Resolver, Root, UseMiddleware } from 'type-graphql';
import { explorerTxUrl } from '../../chains/registry.js';
import type { Network } from '../../common/environment.js';
import { pageInfoOf, totalCountResolver } from '../../graphql/connection.js';
import type { GqlContext } from '../../graphql/context.js';
import { EnvironmentArg } from '../../graphql/request.middleware.js';
import { EnvironmentEnum, NetworkEnum } from '../../graphql/scalars.js';
import { PaymentType, toPaymentType } from '../orders/order.types.js';
import { PaymentConnection, PaymentStatusEnum } from './payment.types.js';

@Resolver()
export class PaymentResolver {
  @Authorized('API_KEY', 'DASHBOARD')
  @UseMiddleware(EnvironmentArg)
  @Query(() => PaymentConnection, {
    description:
      'Transfers observed into the merchant’s deposit addresses, newest first; filters (the payments CSV export takes the same); cursor pagination (docs/api.md "GraphQL for dashboards")',
  })
  async payments(
    @Ctx() ctx: GqlContext,
    @Arg('environment', () => EnvironmentEnum, { nullable: true }) _environment?: EnvironmentEnum,
    @Arg('statuses', () => [PaymentStatusEnum], { nullable: true, description: 'Any of these statuses (default: all)' }) statuses?: PaymentStatusEnum[],
    @Arg('network', () => NetworkEnum, { nullable: true }) network?: Network,
    @Arg('tokenAddress', () => String, { nullable: true }) tokenAddress?: string,
    @Arg('detectedFrom', () => Date, { nullable: true, description: 'Detected at or after' }) detectedFrom?: Date,
    @Arg('detectedTo', () => Date, { nullable: true, description: 'Detected before' }) detectedTo?: Date,
    @Arg('search', () => String, { nullable: true, description: 'Order number prefix, or exactly the transaction hash or the sender address' }) search?: string,
    @Arg('first', () => Int, { nullable: true, description: '1-100, default 20' }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ): Promise<PaymentConnection> {
    const page = await ctx.app.payments.list(ctx, {
      statuses: statuses ?? undefined,
      network: network ?? undefined,
      tokenAddress: tokenAddress ?? undefined,
      detectedFrom: detectedFrom ?? undefined,
      detectedTo: detectedTo ?? undefined,
      search: search ?? undefined,
      first: first ?? undefined,
      after: after ?? undefined,
    });
    const edges = page.edges.map((e) => ({ cursor: e.cursor, node: toPaymentType(e.node, e.node.order.orderNo) }));
    return { edges, pageInfo: pageInfoOf(edges, page.hasNextPage, after), count: page.totalCount };
  }
}

@Resolver(() => PaymentType)
export class PaymentFieldsResolver {
  @FieldResolver(() => String, {
    nullable: true,
    description: 'The transaction on a public block explorer; null on the sandbox’s local dev chains, which no explorer sees',
  })
  explorerUrl(@Root() payment: PaymentType, @Ctx() ctx: GqlContext): string | null {
    return explorerTxUrl(payment.environment, payment.network, payment.txHash, ctx.app.config.DEV_CHAINS);
  }
}

export const PaymentConnectionResolver = totalCountResolver(PaymentConnection, 'Payments');
