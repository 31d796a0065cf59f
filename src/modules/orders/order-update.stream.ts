import { Repeater, type PubSub } from '@graphql-yoga/subscription';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { ChannelHandler } from '../../db/listen.client.js';
import { feedEventsByIds } from './order-feed.store.js';
import { merchantTopic, ORDER_STATUS_CHANGED, type OrderFeedNotification, type OrderStatusUpdate, type SubscriptionTopics } from '../events/event.catalogue.js';

export type OrderEventsPubSub = PubSub<SubscriptionTopics>;

/**
 * What this process takes from an `order_events` notification: the event's id, nothing else. PostgreSQL
 * has no privilege for NOTIFY, so any role that can connect (the read-only analytics role included)
 * can send `pg_notify('order_events', '{"status":"Success",…}')`: the payload is a hint that a row
 * exists, and every fact a subscriber sees is read back from `order_events` by that id.
 */
const hintSchema = z.object({ eventId: z.string().uuid(), feed: z.string().max(100).optional() });

/**
 * Merchant feeds (`<merchantId>:<environment>`) with a live stream in this process, per PubSub. An
 * `order.created` hint names its feed (order-event.writer.ts): one no stream here watches is not read
 * back at all, so order creation, the merchants' hot path, costs the API processes nothing while no
 * dashboard watches. A forged hint naming a feed can only add a read (of an id that must exist), never
 * hide a real event: that has its own notification.
 */
const watchedFeeds = new WeakMap<OrderEventsPubSub, Map<string, number>>();

/** Marks `feed` watched while a stream lives; returns the release. */
export function watchFeed(pubSub: OrderEventsPubSub, feed: string): () => void {
  let feeds = watchedFeeds.get(pubSub);
  if (!feeds) watchedFeeds.set(pubSub, (feeds = new Map()));
  feeds.set(feed, (feeds.get(feed) ?? 0) + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const n = (feeds.get(feed) ?? 1) - 1;
    if (n > 0) feeds.set(feed, n);
    else feeds.delete(feed);
  };
}

export const isFeedWatched = (pubSub: OrderEventsPubSub, feed: string): boolean => (watchedFeeds.get(pubSub)?.get(feed) ?? 0) > 0;

/** Reads committed `order_events` rows by id (unknown ids are simply absent), in any order. */
export type OrderEventLoader = (eventIds: string[]) => Promise<OrderFeedNotification[]>;

/** Hints waiting for the loader; past this a flood is dropped and every stream catches up from the table. */
const MAX_PENDING_HINTS = 10_000;

/** The loader over the gateway's database: one query per batch of hints. */
export function orderEventLoader(orm: MikroORM): OrderEventLoader {
  return (ids) => feedEventsByIds(orm.em.fork(), ids);
}

/**
 * The `order_events` channel of an API process's LISTEN connection. Each notification (sent by
 * OrderEventWriter's insert inside the recording transaction, so delivered only after commit) is a
 * hint naming an event id; the hints are read back from `order_events` in batches (one query per
 * batch, one batch at a time, so events keep their commit order) and each row found is published to
 * the merchant feed (`MERCHANT_EVENT:<merchant>:<environment>`, every event) and, for a status change,
 * to `ORDER_UPDATED:<orderId>`. A hint naming no committed row publishes nothing. After a reconnect
 * (or a flood of hints beyond {@link MAX_PENDING_HINTS}) `ORDER_EVENTS_RESYNC` makes every stream
 * read what it missed from `order_events`.
 */
export function orderEventsChannel(pubSub: OrderEventsPubSub, log: Logger, load: OrderEventLoader): ChannelHandler {
  let pending: string[] = [];
  let draining = false;
  const resync = () => pubSub.publish('ORDER_EVENTS_RESYNC');
  const drain = async () => {
    draining = true;
    try {
      while (pending.length) {
        const batch = [...new Set(pending.splice(0, 500))];
        let rows: OrderFeedNotification[];
        try {
          rows = await load(batch);
        } catch (err) {
          // The rows are committed; the streams read them back themselves.
          log.warn({ err }, 'order_events: could not read notified events; subscribers catch up from the table');
          pending = [];
          resync();
          break;
        }
        const byId = new Map(rows.map((r) => [r.eventId, r]));
        for (const id of batch) {
          const e = byId.get(id);
          if (!e) continue; // announced but not there: not an event (a forged or stale hint)
          if (e.type === ORDER_STATUS_CHANGED) pubSub.publish('ORDER_UPDATED', e.orderId, e);
          pubSub.publish('MERCHANT_EVENT', merchantTopic(e.merchantId, e.environment), e);
        }
      }
    } finally {
      draining = false;
    }
  };
  return {
    notify: (raw) => {
      let eventId: string;
      try {
        const hint = hintSchema.parse(JSON.parse(raw ?? ''));
        // A creation no stream of this process watches (see watchFeed).
        if (hint.feed !== undefined && !isFeedWatched(pubSub, hint.feed)) return;
        eventId = hint.eventId;
      } catch (err) {
        log.warn({ err, payload: raw?.slice(0, 200) }, 'order_events: ignoring malformed notification');
        return;
      }
      if (pending.length >= MAX_PENDING_HINTS) {
        log.warn({ pending: pending.length }, 'order_events: too many notifications waiting; subscribers catch up from the table');
        pending = [];
        resync();
        return;
      }
      pending.push(eventId);
      if (!draining) void drain();
    },
    resync,
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
