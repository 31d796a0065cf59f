import { Arg, Authorized, Ctx, Int, Mutation, Query, Resolver } from 'type-graphql';
import type { GqlContext } from '../../graphql/context.js';
import { EnvironmentEnum } from '../../graphql/scalars.js';
import type { PaymentLink } from './payment-link.entity.js';
import {
  CreatePaymentLinkInput,
  createInputOf,
  OpenedPaymentLink,
  PaymentLinkPage,
  PaymentLinkType,
  PaymentLinkValidation,
  toOpenedPaymentLink,
  toPaymentLinkType,
  toPaymentLinkValidation,
  UpdatePaymentLinkInput,
  updateInputOf,
} from './payment-link.types.js';

const typeOf = (ctx: GqlContext, link: PaymentLink) => toPaymentLinkType(link, ctx.app.paymentLinks.url(link));

/** Dashboard management (the environment is an argument, like the REST path) and the public checkout calls. */
@Resolver()
export class PaymentLinkResolver {
  @Authorized('DASHBOARD')
  @Mutation(() => PaymentLinkType, { description: 'Same as POST /merchant/payment-link' })
  async createPaymentLink(@Arg('environment', () => EnvironmentEnum) environment: EnvironmentEnum, @Arg('input') input: CreatePaymentLinkInput, @Ctx() ctx: GqlContext): Promise<PaymentLinkType> {
    ctx.environment = environment;
    return typeOf(ctx, await ctx.app.paymentLinks.create(ctx, createInputOf(input)));
  }

  @Authorized('DASHBOARD')
  @Query(() => PaymentLinkPage, { description: 'Newest first; limit 1-100 (default 20), larger is refused' })
  async paymentLinks(
    @Arg('environment', () => EnvironmentEnum) environment: EnvironmentEnum,
    @Ctx() ctx: GqlContext,
    @Arg('limit', () => Int, { nullable: true }) limit?: number | null,
    @Arg('offset', () => Int, { nullable: true }) offset?: number | null,
  ): Promise<PaymentLinkPage> {
    ctx.environment = environment;
    const page = await ctx.app.paymentLinks.list(ctx, { limit: limit ?? undefined, offset: offset ?? undefined });
    return { ...page, items: page.items.map((l) => typeOf(ctx, l)) };
  }

  @Authorized('DASHBOARD')
  @Query(() => PaymentLinkType)
  async paymentLink(@Arg('environment', () => EnvironmentEnum) environment: EnvironmentEnum, @Arg('id') id: string, @Ctx() ctx: GqlContext): Promise<PaymentLinkType> {
    ctx.environment = environment;
    return typeOf(ctx, await ctx.app.paymentLinks.get(ctx, id));
  }

  @Authorized('DASHBOARD')
  @Mutation(() => PaymentLinkType, { description: 'Title, validity (restarted from now) or status ACTIVE/INACTIVE' })
  async updatePaymentLink(@Arg('environment', () => EnvironmentEnum) environment: EnvironmentEnum, @Arg('input') input: UpdatePaymentLinkInput, @Ctx() ctx: GqlContext): Promise<PaymentLinkType> {
    ctx.environment = environment;
    return typeOf(ctx, await ctx.app.paymentLinks.update(ctx, updateInputOf(input)));
  }

  @Authorized('DASHBOARD')
  @Mutation(() => PaymentLinkType, { description: 'Deactivates the link (status INACTIVE); idempotent' })
  async deletePaymentLink(@Arg('environment', () => EnvironmentEnum) environment: EnvironmentEnum, @Arg('id') id: string, @Ctx() ctx: GqlContext): Promise<PaymentLinkType> {
    ctx.environment = environment;
    return typeOf(ctx, await ctx.app.paymentLinks.deactivate(ctx, id));
  }

  @Query(() => PaymentLinkValidation, { description: 'Public: what the checkout page shows before opening a link' })
  async validatePaymentLink(@Arg('id') id: string, @Ctx() ctx: GqlContext, @Arg('environment', () => EnvironmentEnum, { nullable: true }) environment?: EnvironmentEnum | null): Promise<PaymentLinkValidation> {
    // Public: the link decides its environment; credentials sent along do not narrow it.
    ctx.environment = environment ?? null;
    return toPaymentLinkValidation(await ctx.app.paymentLinks.validate(ctx, id));
  }

  @Mutation(() => OpenedPaymentLink, { description: 'Public: takes one use of the link and creates its order (POST /order/payment-link)' })
  async openPaymentLink(@Arg('id') id: string, @Ctx() ctx: GqlContext, @Arg('environment', () => EnvironmentEnum, { nullable: true }) environment?: EnvironmentEnum | null): Promise<OpenedPaymentLink> {
    await ctx.app.rateLimits.consume('public', ctx.ip);
    ctx.environment = environment ?? null;
    return toOpenedPaymentLink(await ctx.app.paymentLinks.open(ctx, { payment_link_id: id }));
  }
}
