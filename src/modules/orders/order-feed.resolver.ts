import { Repeater } from '@graphql-yoga/subscription';
import { Arg, Authorized, Field, ObjectType, Resolver, Root, Subscription, type SubscribeResolverData } from 'type-graphql';
import type { Environment, Network } from '../../common/environment.js';
import { resolveEnvironment } from '../../common/access.js';
import { DomainError } from '../../common/errors.js';
import type { GqlContext } from '../../graphql/context.js';
import { SharedFeed } from '../../graphql/fan-out.js';
import { pubSubOf } from '../../graphql/pubsub.js';
import { throwIfLapsed, untilCredentialLapses, type CredentialLapsed } from '../../graphql/credential-lapse.js';
import { EnvironmentEnum, NetworkEnum, OrderStatusEnum } from '../../graphql/scalars.js';
import { formatDecimal } from '../../common/money.js';
import { merchantTopic, ORDER_STATUS_CHANGED, type OrderFeedNotification } from '../events/event.catalogue.js';
import { watchFeed, type OrderEventsPubSub } from './order-update.stream.js';
import { feedEventsSince, feedHead } from './order-feed.store.js';
import type { OrderStatus } from './order.transitions.js';

@ObjectType({ description: 'The payment a payment.* event of the feed is about (fields the event does not record are null)' })
export class MerchantEventPayment {
  @Field(() => String, { nullable: true, description: 'Null for payment.unattributed (a receipt, not a payment) and payment.overpaid (an order-level fact)' })
  paymentId!: string | null;
  @Field(() => NetworkEnum, { nullable: true }) network!: Network | null;
  @Field(() => String, { nullable: true }) tokenSymbol!: string | null;
  @Field(() => String, { nullable: true }) tokenAddress!: string | null;
  @Field(() => String, { nullable: true, description: 'Token units as a decimal string (null when the event does not record the decimals)' }) amount!:
    string | null;
  @Field(() => String, { nullable: true, description: 'Base units as a decimal string' }) amountBase!: string | null;
  @Field(() => String, { nullable: true }) txHash!: string | null;
  @Field(() => String, { nullable: true }) fromAddress!: string | null;
  @Field(() => Boolean, { nullable: true, description: 'Detected after the order expired' }) late!: boolean | null;
}

@ObjectType({ description: 'One committed event of an order of the merchant environment (the dashboard feed)' })
export class MerchantEvent {
  @Field({
    description:
      'order.created (a new order: REST, GraphQL or a payment link); order.status_changed (Processing: a payment was seen; Success: paid; Underpaid / Expired at expiry); payment.detected (a transfer seen on chain, not yet confirmed: ' +
      'the "new payment" toast), payment.confirmed, payment.late, payment.overpaid, payment.reorged, payment.unattributed (docs/webhooks.md)',
  })
  type!: string;
  @Field() eventId!: string;
  @Field() orderId!: string;
  @Field() orderNo!: string;
  @Field(() => OrderStatusEnum) status!: OrderStatus;
  @Field(() => OrderStatusEnum, { nullable: true }) previousStatus!: OrderStatus | null;
  @Field(() => EnvironmentEnum) environment!: Environment;
  @Field() at!: Date;
  @Field(() => MerchantEventPayment, { nullable: true, description: 'The payment, for payment.* events' }) payment!: MerchantEventPayment | null;
}

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

/** The feed's payment fields from a payment.* event's recorded reason (event.catalogue.ts). */
export function feedPayment(type: string, reason: Record<string, unknown> | null): MerchantEventPayment | null {
  if (!type.startsWith('payment.') || !reason) return null;
  const base = str(reason.amount) ?? str(reason.excess);
  const decimals = typeof reason.decimals === 'number' ? reason.decimals : null;
  return {
    paymentId: str(reason.paymentId),
    network: str(reason.network) as Network | null,
    tokenSymbol: str(reason.tokenSymbol),
    tokenAddress: str(reason.tokenAddress),
    amountBase: base,
    amount: base !== null && decimals !== null && /^\d+$/.test(base) ? formatDecimal(BigInt(base), decimals) : null,
    txHash: str(reason.txHash),
    fromAddress: str(reason.fromAddress),
    late: typeof reason.late === 'boolean' ? reason.late : null,
  };
}

/** Where a feed reads what it may have missed: the table's newest `seq` now, and the merchant environment's events after one. */
export interface MerchantEventsSource {
  head(): Promise<number>;
  since(seq: number): Promise<OrderFeedNotification[]>;
}

/**
 * One subscriber's feed: each committed event (status change or payment.*) of any order of the merchant environment, as
 * published by the process's LISTEN connection (order-update.stream.ts). After a LISTEN reconnect it
 * reads the events it may have missed from `order_events` (seq above the last one it sent or, before
 * it sent any, above the table's head when it subscribed), skipping ones already sent.
 */
export function merchantEventStream(pubSub: OrderEventsPubSub, topic: string, source: MerchantEventsSource): Repeater<OrderFeedNotification> {
  return new Repeater<OrderFeedNotification>(async (push, stop) => {
    // Before subscribing: from now on this process reads the feed's order.created hints back.
    const unwatch = watchFeed(pubSub, topic);
    const events = pubSub.subscribe('MERCHANT_EVENT', topic);
    const resyncs = pubSub.subscribe('ORDER_EVENTS_RESYNC');
    let nextEvent = events.next();
    let nextResync = resyncs.next();
    // Read once subscribed: an event committed from now on is either published here or above the head.
    // Unreadable (the database is down as the feed opens), the feed catches up only after its first event.
    let lastSeq = await source.head().catch(() => 0);
    const sent = new Set<string>();
    const emit = async (e: OrderFeedNotification) => {
      if (sent.has(e.eventId)) return;
      sent.add(e.eventId);
      if (sent.size > 256) sent.delete(sent.values().next().value!);
      lastSeq = Math.max(lastSeq, e.seq);
      await push(e);
    };
    const stopped = stop.then(() => ({ kind: 'stop' as const }));
    try {
      for (;;) {
        const r = await Promise.race([
          nextEvent.then((v) => ({ kind: 'event' as const, v })),
          nextResync.then((v) => ({ kind: 'resync' as const, v })),
          stopped,
        ]);
        if (r.kind === 'stop' || r.v.done) break;
        if (r.kind === 'event') {
          nextEvent = events.next();
          await emit(r.v.value);
        } else {
          nextResync = resyncs.next();
          if (lastSeq > 0) for (const e of await source.since(lastSeq)) await emit(e);
        }
      }
    } finally {
      unwatch();
      await Promise.all([events.return(), resyncs.return()]);
    }
    stop();
  });
}

type Args = { environment?: EnvironmentEnum | null };

/**
 * Authorised at subscribe time: a dashboard session of the merchant (naming the environment) or an
 * API key (its own environment; the argument is ignored, as for queries). The topic is the caller's
 * own merchant id: no argument can name another merchant.
 */
async function subscribeMerchantEvents({ args, context: ctx, info }: SubscribeResolverData<unknown, Args, GqlContext>) {
  const { caller, app } = ctx;
  if (caller.kind !== 'dashboard' && caller.kind !== 'apiKey') throw new DomainError('FORBIDDEN', 'The merchant feed needs a dashboard session or an API key');
  const environment = resolveEnvironment(caller, args.environment as Environment | null | undefined);
  const merchantId = caller.merchantId;
  const openStream = () =>
    merchantEventStream(pubSubOf(info.schema), merchantTopic(merchantId, environment), {
      head: () => feedHead(app.orm.em.fork()),
      since: (seq) => feedEventsSince(app.orm.em.fork(), merchantId, environment, seq),
    });
  // A revoked session or a rotated API key ends the feed (with its error), not just new subscriptions.
  // The scope (feed + credential) lets every subscriber with the same credential and selection share
  // one stream, one re-check and one execution per event (graphql/fan-out.ts).
  return new SharedFeed(`${merchantTopic(merchantId, environment)}|${ctx.credentialKey}`, () =>
    untilCredentialLapses(openStream(), ctx.reauthenticate, app.config.SUBSCRIPTION_AUTH_RECHECK_MS, { owner: app, key: ctx.credentialKey }),
  );
}

@Resolver()
export class OrderFeedResolver {
  @Authorized('API_KEY', 'DASHBOARD')
  @Subscription(() => MerchantEvent, {
    description:
      'Live feed of the merchant environment over graphql-ws: every committed order and payment event (status changes, payment.detected, payment.confirmed, …), from any API process. ' +
      'Authorised by the dashboard access token (connection param `authorization: "Bearer …"`, with `environment`) or the API key (`api-key`).',
    subscribe: subscribeMerchantEvents,
  })
  merchantEvents(
    @Root() root: OrderFeedNotification | CredentialLapsed,
    @Arg('environment', () => EnvironmentEnum, { nullable: true }) _environment?: EnvironmentEnum,
  ): MerchantEvent {
    const e = throwIfLapsed(root);
    const statusChange = e.type === ORDER_STATUS_CHANGED;
    return {
      type: e.type,
      eventId: e.eventId,
      orderId: e.orderId,
      orderNo: e.orderNo,
      status: e.status,
      // An event that changed no status has none before it.
      previousStatus: statusChange ? e.previousStatus : null,
      environment: e.environment,
      at: new Date(e.at),
      payment: feedPayment(e.type, e.reason),
    };
  }
}
