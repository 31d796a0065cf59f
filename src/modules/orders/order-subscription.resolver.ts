import { Arg, Authorized, Field, ObjectType, Resolver, Root, Subscription, type SubscribeResolverData } from 'type-graphql';
import type { GqlContext } from '../../graphql/context.js';
import { pubSubOf } from '../../graphql/pubsub.js';
import { throwIfLapsed, untilCredentialLapses, type CredentialLapsed } from '../../graphql/credential-lapse.js';
import { orderUpdateStream } from './order-update.stream.js';
import { OrderStatusEnum } from '../../graphql/scalars.js';
import type { OrderStatusUpdate } from '../events/event.catalogue.js';
import type { OrderStatus } from './order.transitions.js';

@ObjectType({ description: "An order's status: the current one when subscribing, then each committed change" })
export class OrderUpdate {
  @Field() orderNo!: string;
  @Field(() => OrderStatusEnum) status!: OrderStatus;
  @Field(() => OrderStatusEnum, { nullable: true, description: 'Status before this change (null if the order never changed)' })
  previousStatus!: OrderStatus | null;
  @Field() merchantId!: string;
  @Field({ description: 'When this status was reached (order creation if it never changed)' }) updatedAt!: Date;
}

type Args = { orderNo: string };

/**
 * Who may listen is decided at subscribe time, by the same rule as reading the order
 * (OrderService.findForCaller): the order's own checkout key, or the API key of its merchant and
 * environment. Another merchant's order is ORDER_NOT_FOUND; another order's checkout key SCOPE_DENIED.
 */
async function subscribeOrderUpdates({ args, context: ctx, info }: SubscribeResolverData<unknown, Args, GqlContext>) {
  const { caller, app } = ctx;
  if (caller.kind !== 'apiKey' && caller.kind !== 'checkout') throw new Error('unreachable: @Authorized admits API and checkout keys only');
  const order = await app.orders.findForCaller(ctx, args.orderNo);
  const orderId = order.id;
  // Reads use their own short-lived EntityManager forks: the operation's context lives as long as the stream.
  const stream = orderUpdateStream(pubSubOf(info.schema), orderId, {
    current: () => app.orderStatus.current(app.orm.em.fork(), orderId),
    since: (seq) => app.orderStatus.eventsSince(app.orm.em.fork(), orderId, seq),
  });
  // A rotated API key or an expired checkout key ends the stream (with its error), not just new subscriptions.
  return untilCredentialLapses(stream, ctx.reauthenticate, app.config.SUBSCRIPTION_AUTH_RECHECK_MS, { owner: app, key: ctx.credentialKey });
}

@Resolver()
export class OrderSubscriptionResolver {
  @Authorized('API_KEY', 'CHECKOUT')
  @Subscription(() => OrderUpdate, {
    description:
      "An order's status over graphql-ws: the current status first, then every committed change, in order, from any API process. " +
      "Authorised by the order's checkout key (connection param `key`) or the merchant's API key (`api-key`).",
    subscribe: subscribeOrderUpdates,
  })
  orderUpdated(@Root() root: OrderStatusUpdate | CredentialLapsed, @Arg('orderNo') _orderNo: string): OrderUpdate {
    const u = throwIfLapsed(root);
    return { orderNo: u.orderNo, status: u.status, previousStatus: u.previousStatus, merchantId: u.merchantId, updatedAt: new Date(u.at) };
  }
}
