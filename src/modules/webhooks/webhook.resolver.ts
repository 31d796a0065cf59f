import { pageInfoOf, totalCountResolver } from '../../graphql/connection.js';
import { Arg, Authorized, Ctx, ID, Int, Mutation, Query, Resolver } from 'type-graphql';
import type { GqlContext } from '../../graphql/context.js';
import { EnvironmentEnum } from '../../graphql/scalars.js';
import {
  NotificationSettings,
  toDeliveryType,
  WebhookDeliveryPage,
  WebhookDeliveryStateEnum,
  WebhookDeliveryType,
  WebhookSigningSecretType,
} from './webhook.types.js';

@Resolver()
export class WebhookResolver {
  @Authorized('DASHBOARD')
  @Mutation(() => NotificationSettings, {
    description: 'Sets (or clears, with null) the webhook URL of an environment. Production needs https and a public address',
  })
  async setNotificationUrl(
    @Arg('environment', () => EnvironmentEnum) environment: EnvironmentEnum,
    @Arg('url', () => String, { nullable: true }) url: string | null,
    @Ctx() ctx: GqlContext,
  ): Promise<NotificationSettings> {
    const m = await ctx.app.webhooks.settings.setNotificationUrl(ctx, { environment, url: url ?? null });
    return { environment, notificationUrl: environment === EnvironmentEnum.PRODUCTION ? m.notificationUrlProduction : m.notificationUrlSandbox };
  }

  @Authorized('DASHBOARD')
  @Query(() => WebhookDeliveryPage, { description: 'The webhook delivery log, newest first, with every attempt; cursor pagination' })
  async webhookDeliveries(
    @Arg('environment', () => EnvironmentEnum) environment: EnvironmentEnum,
    @Ctx() ctx: GqlContext,
    @Arg('status', () => WebhookDeliveryStateEnum, { nullable: true }) status?: WebhookDeliveryStateEnum,
    @Arg('event', () => String, { nullable: true, description: 'An X-Service-Event value' }) event?: string,
    @Arg('orderNo', () => String, { nullable: true }) orderNo?: string,
    @Arg('first', () => Int, { nullable: true, description: '1–100, default 20' }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ): Promise<WebhookDeliveryPage> {
    const page = await ctx.app.webhooks.log.list(ctx, {
      environment,
      state: status ?? undefined,
      event: event ?? undefined,
      orderNo: orderNo ?? undefined,
      first: first ?? undefined,
      after: after ?? undefined,
    });
    const edges = page.deliveries.map((d) => ({ cursor: d.cursor, node: toDeliveryType(d) }));
    return {
      edges,
      pageInfo: pageInfoOf(edges, page.nextCursor !== null, after),
      count: page.totalCount,
      nodes: edges.map((e) => e.node),
      nextCursor: page.nextCursor,
    };
  }

  @Authorized('DASHBOARD')
  @Mutation(() => WebhookDeliveryType, {
    description: 'Queues a delivered or failed webhook again: new attempt series, same body and idempotency key, current URL and key',
  })
  async redeliverWebhook(@Arg('id', () => ID) id: string, @Ctx() ctx: GqlContext): Promise<WebhookDeliveryType> {
    return toDeliveryType(await ctx.app.webhooks.log.redeliver(ctx, { id }));
  }

  @Authorized('DASHBOARD')
  @Mutation(() => WebhookDeliveryType, { description: 'Sends a signed webhook.test event to the environment’s URL now and returns the attempt' })
  async sendTestWebhook(@Arg('environment', () => EnvironmentEnum) environment: EnvironmentEnum, @Ctx() ctx: GqlContext): Promise<WebhookDeliveryType> {
    return toDeliveryType(await ctx.app.webhooks.settings.sendTest(ctx, { environment }));
  }

  @Authorized('DASHBOARD')
  @Query(() => WebhookSigningSecretType, { description: 'The Standard Webhooks signing secret of an environment (owners and admins), made on first ask' })
  async webhookSigningSecret(
    @Arg('environment', () => EnvironmentEnum) environment: EnvironmentEnum,
    @Ctx() ctx: GqlContext,
  ): Promise<WebhookSigningSecretType> {
    return (await ctx.app.webhooks.secrets.reveal(ctx, { environment })) as WebhookSigningSecretType;
  }

  @Authorized('DASHBOARD')
  @Mutation(() => WebhookSigningSecretType, {
    description: 'A new Standard Webhooks secret; the previous one keeps signing beside it for overlapHours (default 24, 0–168)',
  })
  async rotateWebhookSigningSecret(
    @Arg('environment', () => EnvironmentEnum) environment: EnvironmentEnum,
    @Ctx() ctx: GqlContext,
    @Arg('overlapHours', () => Int, { nullable: true }) overlapHours?: number,
  ): Promise<WebhookSigningSecretType> {
    return (await ctx.app.webhooks.secrets.rotate(ctx, { environment, overlapHours: overlapHours ?? undefined })) as WebhookSigningSecretType;
  }
}

export const WebhookDeliveryPageResolver = totalCountResolver(WebhookDeliveryPage, 'Deliveries');
