import { Arg, Authorized, Ctx, Int, Mutation, Query, Resolver, UseMiddleware } from 'type-graphql';
import type { GqlContext } from '../../graphql/context.js';
import { EnvironmentArg, PublicEnvironmentArg, RateLimited } from '../../graphql/request.middleware.js';
import { EnvironmentEnum } from '../../graphql/scalars.js';
import type { PaymentLink } from './payment-link.entity.js';
import {
  CreatePaymentLinkInput,
  createCommandOf,
  OpenedPaymentLink,
  PaymentLinkPage,
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
  async createPaymentLink(@Arg('environment', () => EnvironmentEnum) _environment: EnvironmentEnum, @Arg('input') input: CreatePaymentLinkInput, @Ctx() ctx: GqlContext): Promise<PaymentLinkType> {
    return typeOf(ctx, await ctx.app.paymentLinks.create(ctx, createCommandOf(input)));
  }

  @Authorized('DASHBOARD')
  @UseMiddleware(EnvironmentArg)
  @Query(() => PaymentLinkPage, { description: 'Newest first; limit 1-100 (default 20), larger is refused' })
  async paymentLinks(
    @Arg('environment', () => EnvironmentEnum) _environment: EnvironmentEnum,
    @Ctx() ctx: GqlContext,
    @Arg('limit', () => Int, { nullable: true }) limit?: number | null,
    @Arg('offset', () => Int, { nullable: true }) offset?: number | null,
  ): Promise<PaymentLinkPage> {
    const page = await ctx.app.paymentLinks.list(ctx, { limit: limit ?? undefined, offset: offset ?? undefined });
    return { ...page, items: page.items.map((l) => typeOf(ctx, l)) };
  }

  @Authorized('DASHBOARD')
  @UseMiddleware(EnvironmentArg)
  @Query(() => PaymentLinkType)
  async paymentLink(@Arg('environment', () => EnvironmentEnum) _environment: EnvironmentEnum, @Arg('id') id: string, @Ctx() ctx: GqlContext): Promise<PaymentLinkType> {
    return typeOf(ctx, await ctx.app.paymentLinks.get(ctx, id));
  }

  @Authorized('DASHBOARD')
  @UseMiddleware(EnvironmentArg)
  @Mutation(() => PaymentLinkType, { description: 'Title, validity (restarted from now) or status ACTIVE/INACTIVE' })
  async updatePaymentLink(@Arg('environment', () => EnvironmentEnum) _environment: EnvironmentEnum, @Arg('input') input: UpdatePaymentLinkInput, @Ctx() ctx: GqlContext): Promise<PaymentLinkType> {
    return typeOf(ctx, await ctx.app.paymentLinks.update(ctx, updateCommandOf(input)));
  }

  @Authorized('DASHBOARD')
  @UseMiddleware(EnvironmentArg)
  @Mutation(() => PaymentLinkType, { description: 'Deactivates the link (status INACTIVE); idempotent' })
  async deletePaymentLink(@Arg('environment', () => EnvironmentEnum) _environment: EnvironmentEnum, @Arg('id') id: string, @Ctx() ctx: GqlContext): Promise<PaymentLinkType> {
    return typeOf(ctx, await ctx.app.paymentLinks.deactivate(ctx, id));
  }

  @UseMiddleware(PublicEnvironmentArg)
  @Query(() => PaymentLinkValidation, { description: 'Public: what the checkout page shows before opening a link' })
  async validatePaymentLink(@Arg('id') id: string, @Ctx() ctx: GqlContext, @Arg('environment', () => EnvironmentEnum, { nullable: true }) _environment?: EnvironmentEnum | null): Promise<PaymentLinkValidation> {
    return toPaymentLinkValidation(await ctx.app.paymentLinks.validate(ctx, id));
  }

  @RateLimited('public')
  @UseMiddleware(PublicEnvironmentArg)
  @Mutation(() => OpenedPaymentLink, { description: 'Public: takes one use of the link and creates its order (POST /order/payment-link)' })
  async openPaymentLink(@Arg('id') id: string, @Ctx() ctx: GqlContext, @Arg('environment', () => EnvironmentEnum, { nullable: true }) _environment?: EnvironmentEnum | null): Promise<OpenedPaymentLink> {
    return toOpenedPaymentLink(await ctx.app.paymentLinks.open(ctx, { id }));
  }
}
