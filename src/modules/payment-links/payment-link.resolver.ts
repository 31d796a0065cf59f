import { Arg, Authorized, Ctx, Int, Mutation, Query, Resolver, UseMiddleware } from 'type-graphql';
import { pageInfoOf, totalCountResolver } from '../../graphql/connection.js';
import type { GqlContext } from '../../graphql/context.js';
import { EnvironmentArg, PublicEnvironmentArg, RateLimited } from '../../graphql/request.middleware.js';
import { EnvironmentEnum } from '../../graphql/scalars.js';
import type { PaymentLink } from './payment-link.entity.js';
import {
  CreatePaymentLinkInput,
  createCommandOf,
  OpenedPaymentLink,
  PaymentLinkConnection,
  PaymentLinkType,
  PaymentLinkValidation,
  toOpenedPaymentLink,
  toPaymentLinkType,
  toPaymentLinkValidation,
  UpdatePaymentLinkInput,
  updateCommandOf,
} from './payment-link.types.js';

const typeOf = (ctx: GqlContext, link: PaymentLink) => toPaymentLinkType(link, ctx.app.paymentLinks.url(link));

/** Dashboard management (the environment is an argument, like the REST path) and the public checkout calls. */
@Resolver()
export class PaymentLinkResolver {
  @Authorized('DASHBOARD')
  @UseMiddleware(EnvironmentArg)
  @Mutation(() => PaymentLinkType, { description: 'Same as POST /merchant/payment-link' })
  async createPaymentLink(
    @Arg('environment', () => EnvironmentEnum) _environment: EnvironmentEnum,
    @Arg('input') input: CreatePaymentLinkInput,
    @Ctx() ctx: GqlContext,
  ): Promise<PaymentLinkType> {
    return typeOf(ctx, await ctx.app.paymentLinks.create(ctx, createCommandOf(input)));
  }

  @Authorized('DASHBOARD')
  @UseMiddleware(EnvironmentArg)
  @Query(() => PaymentLinkConnection, { description: 'The links of the environment, newest first; cursor pagination (REST keeps limit/offset)' })
  async paymentLinks(
    @Arg('environment', () => EnvironmentEnum) _environment: EnvironmentEnum,
    @Ctx() ctx: GqlContext,
    @Arg('first', () => Int, { nullable: true, description: '1-100, default 20; larger is refused' }) first?: number | null,
    @Arg('after', () => String, { nullable: true }) after?: string | null,
  ): Promise<PaymentLinkConnection> {
    const page = await ctx.app.paymentLinks.page(ctx, { first: first ?? undefined, after: after ?? undefined });
    const edges = page.edges.map((e) => ({ cursor: e.cursor, node: typeOf(ctx, e.node) }));
    return { edges, pageInfo: pageInfoOf(edges, page.hasNextPage, after), count: page.totalCount };
  }

  @Authorized('DASHBOARD')
  @UseMiddleware(EnvironmentArg)
  @Query(() => PaymentLinkType)
  async paymentLink(
    @Arg('environment', () => EnvironmentEnum) _environment: EnvironmentEnum,
    @Arg('id') id: string,
    @Ctx() ctx: GqlContext,
  ): Promise<PaymentLinkType> {
    return typeOf(ctx, await ctx.app.paymentLinks.get(ctx, id));
  }

  @Authorized('DASHBOARD')
  @UseMiddleware(EnvironmentArg)
  @Mutation(() => PaymentLinkType, { description: 'Title, validity (restarted from now) or status ACTIVE/INACTIVE' })
  async updatePaymentLink(
    @Arg('environment', () => EnvironmentEnum) _environment: EnvironmentEnum,
    @Arg('input') input: UpdatePaymentLinkInput,
    @Ctx() ctx: GqlContext,
  ): Promise<PaymentLinkType> {
    return typeOf(ctx, await ctx.app.paymentLinks.update(ctx, updateCommandOf(input)));
  }

  @Authorized('DASHBOARD')
  @UseMiddleware(EnvironmentArg)
  @Mutation(() => PaymentLinkType, { description: 'Deactivates the link (status INACTIVE); idempotent' })
  async deletePaymentLink(
    @Arg('environment', () => EnvironmentEnum) _environment: EnvironmentEnum,
    @Arg('id') id: string,
    @Ctx() ctx: GqlContext,
  ): Promise<PaymentLinkType> {
    return typeOf(ctx, await ctx.app.paymentLinks.deactivate(ctx, id));
  }

  @UseMiddleware(PublicEnvironmentArg)
  @Query(() => PaymentLinkValidation, { description: 'Public: what the checkout page shows before opening a link' })
  async validatePaymentLink(
    @Arg('id') id: string,
    @Ctx() ctx: GqlContext,
    @Arg('environment', () => EnvironmentEnum, { nullable: true }) _environment?: EnvironmentEnum | null,
  ): Promise<PaymentLinkValidation> {
    return toPaymentLinkValidation(await ctx.app.paymentLinks.validate(ctx, id));
  }

  @RateLimited('public')
  @UseMiddleware(PublicEnvironmentArg)
  @Mutation(() => OpenedPaymentLink, { description: 'Public: takes one use of the link and creates its order (POST /order/payment-link)' })
  async openPaymentLink(
    @Arg('id') id: string,
    @Ctx() ctx: GqlContext,
    @Arg('environment', () => EnvironmentEnum, { nullable: true }) _environment?: EnvironmentEnum | null,
  ): Promise<OpenedPaymentLink> {
    return toOpenedPaymentLink(await ctx.app.paymentLinks.open(ctx, { id }));
  }
}

export const PaymentLinkConnectionResolver = totalCountResolver(PaymentLinkConnection, 'Links');
