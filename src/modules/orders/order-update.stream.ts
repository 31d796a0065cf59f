import { Repeater, type PubSub } from '@graphql-yoga/subscription';
import type { Logger } from 'pino';
import { z } from 'zod';
import { ENVIRONMENTS } from '../../common/environment.js';
import type { ChannelHandler } from '../../db/listen.client.js';
import { merchantTopic, ORDER_EVENT_TYPES, ORDER_STATUS_CHANGED, type OrderEventType, type OrderStatusUpdate, type SubscriptionTopics } from '../events/event.catalogue.js';
import { ORDER_STATUSES } from './order.transitions.js';

export type OrderEventsPubSub = PubSub<SubscriptionTopics>;

const notificationSchema = z.object({
  eventId: z.string().min(1),
  seq: z.number().int().positive(),
  orderId: z.string().min(1),
  orderNo: z.string(),
  merchantId: z.string().min(1),
  environment: z.enum(ENVIRONMENTS),
  status: z.enum(ORDER_STATUSES),
  previousStatus: z.enum(ORDER_STATUSES).nullable(),
  at: z.string(),
  // Absent in notifications of processes older than the payment events: those were status changes.
  type: z.enum(ORDER_EVENT_TYPES as [OrderEventType, ...OrderEventType[]]).default(ORDER_STATUS_CHANGED),
  reason: z.record(z.string(), z.unknown()).nullable().default(null),
});

/**
 * The `order_events` channel of an API process's LISTEN connection: each notification (sent by
 * OrderEventWriter's insert inside the recording transaction, so delivered only after commit) is
 * published to the merchant feed (`MERCHANT_EVENT:<merchant>:<environment>`, every event) and, for a
 * status change, to `ORDER_UPDATED:<orderId>`; after a reconnect `ORDER_EVENTS_RESYNC` makes every stream read what
 * it missed from `order_events`.
 */
export function orderEventsChannel(pubSub: OrderEventsPubSub, log: Logger): ChannelHandler {
  return {
    notify: (raw) => {
      let parsed: z.infer<typeof notificationSchema>;
      try {
        parsed = notificationSchema.parse(JSON.parse(raw ?? ''));
      } catch (err) {
        log.warn({ err, payload: raw?.slice(0, 200) }, 'order_events: ignoring malformed notification');
        return;
      }
      if (parsed.type === ORDER_STATUS_CHANGED) pubSub.publish('ORDER_UPDATED', parsed.orderId, parsed);
      pubSub.publish('MERCHANT_EVENT', merchantTopic(parsed.merchantId, parsed.environment), parsed);
    },
    resync: () => pubSub.publish('ORDER_EVENTS_RESYNC'),
  };
}

export interface OrderUpdateSource {
  /** The order's status now (sent first). */
  current(): Promise<OrderStatusUpdate | null>;
  /** Events after `seq`, oldest first (catch-up after a resync). */
  since(seq: number): Promise<OrderStatusUpdate[]>;
}

/**
 * One subscriber's stream: the current status first, then each committed change, in order, each once.
 * The PubSub listeners are attached before the current status is read, so no change falls between
 * the two; `seq` drops what the snapshot already covered (and duplicates after a resync).
 */
export function orderUpdateStream(pubSub: OrderEventsPubSub, orderId: string, source: OrderUpdateSource): Repeater<OrderStatusUpdate> {
  return new Repeater<OrderStatusUpdate>(async (push, stop) => {
    const events = pubSub.subscribe('ORDER_UPDATED', orderId);
    const resyncs = pubSub.subscribe('ORDER_EVENTS_RESYNC');
    // A Repeater starts (adds its event listener) on its first next(): do that before reading.
    let nextEvent = events.next();
    let nextResync = resyncs.next();
    let lastSeq = -1;
    const emit = async (u: OrderStatusUpdate) => {
      if (u.seq <= lastSeq) return;
      lastSeq = u.seq;
      await push(u);
    };
    const stopped = stop.then(() => ({ kind: 'stop' as const }));
    try {
      const now = await source.current();
      if (now) await emit(now);
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
          for (const u of await source.since(Math.max(lastSeq, 0))) await emit(u);
        }
      }
    } finally {
      await Promise.all([events.return(), resyncs.return()]);
    }
    stop();
  });
}
