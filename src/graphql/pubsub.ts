import { createPubSub, Repeater, type PubSub } from '@graphql-yoga/subscription';
import type { GraphQLSchema } from 'graphql';
import pg from 'pg';
import type { Logger } from 'pino';
import { z } from 'zod';
import { ENVIRONMENTS } from '../common/environment.js';
import { ORDER_EVENTS_CHANNEL, type OrderEventNotification, type OrderStatusUpdate } from '../modules/orders/order-status.service.js';
import { ORDER_STATUSES } from '../modules/orders/order.transitions.js';

/** Payloads are plain DTOs (never entities): they outlive any EntityManager. */
export type OrderUpdatePayload = OrderEventNotification;

export type GatewayTopics = {
  /** One order's committed status changes, keyed by order id. */
  ORDER_UPDATED: [orderId: string, payload: OrderUpdatePayload];
  /** The LISTEN connection came back: notifications may have been missed, subscribers catch up from `order_events`. */
  ORDER_EVENTS_RESYNC: [];
};
export type GatewayPubSub = PubSub<GatewayTopics>;

/** In-process PubSub of one API process; fed by {@link OrderEventsListener}, read by subscriptions. */
export const createGatewayPubSub = (): GatewayPubSub => createPubSub<GatewayTopics>();

// ---------------------------------------------------------------------------------------------------
// The PubSub a schema was built with. Subscriptions that use type-graphql's `subscribe` option get no
// PubSub argument; they find theirs through `info.schema` (two gateways in one process stay apart).

const schemaPubSubs = new WeakMap<GraphQLSchema, GatewayPubSub>();

export function registerSchemaPubSub(schema: GraphQLSchema, pubSub: GatewayPubSub): void {
  schemaPubSubs.set(schema, pubSub);
}

export function pubSubOf(schema: GraphQLSchema): GatewayPubSub {
  const pubSub = schemaPubSubs.get(schema);
  if (!pubSub) throw new Error('This schema was not built by buildGatewaySchema (no PubSub registered)');
  return pubSub;
}

// ---------------------------------------------------------------------------------------------------

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
});

export interface OrderEventsListenerOptions {
  connectionString: string;
  pubSub: GatewayPubSub;
  log: Logger;
  /** First reconnect delay; doubles per failed attempt up to `maxBackoffMs` (with jitter). */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** A `select 1` on this period detects half-open connections (0: off). */
  pingIntervalMs?: number;
  /** Other channels this connection LISTENs to, with their handlers (e.g. API-key revocations). */
  channels?: Record<string, (payload: string | undefined) => void>;
  /** Called after a reconnect: anything announced while disconnected was missed. */
  onReconnect?: () => void;
}

/**
 * One dedicated PostgreSQL connection per API process doing `LISTEN order_events`. Each notification
 * (sent by OrderStatusService inside the changing transaction, so delivered only after commit) is
 * published to `ORDER_UPDATED:<orderId>`. If the connection drops it reconnects with exponential
 * backoff and, once listening again, publishes `ORDER_EVENTS_RESYNC` so subscribers read what they
 * missed from `order_events`.
 */
export class OrderEventsListener {
  private client: pg.Client | null = null;
  private closed = false;
  private failures = 0;
  private retryTimer: NodeJS.Timeout | null = null;
  private pingTimer: NodeJS.Timeout | null = null;
  private readonly initialBackoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly pingIntervalMs: number;
  /** Count of successful (re)connections, for logs and tests. */
  connections = 0;

  constructor(private readonly opts: OrderEventsListenerOptions) {
    this.initialBackoffMs = opts.initialBackoffMs ?? 250;
    this.maxBackoffMs = opts.maxBackoffMs ?? 15_000;
    this.pingIntervalMs = opts.pingIntervalMs ?? 30_000;
  }

  get listening(): boolean {
    return this.client !== null;
  }

  /** Backend pid of the LISTEN connection (null while disconnected). */
  get backendPid(): number | null {
    return (this.client as (pg.Client & { processID?: number }) | null)?.processID ?? null;
  }

  /** Connects and LISTENs; rejects if the first attempt fails (boot should fail loudly). */
  async start(): Promise<void> {
    await this.connect();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    if (this.pingTimer) clearInterval(this.pingTimer);
    this.retryTimer = this.pingTimer = null;
    const client = this.client;
    this.client = null;
    if (client) await client.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.opts.connectionString, application_name: 'cpg-order-events', keepAlive: true, query_timeout: 10_000 });
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client));
    client.on('notification', (msg) => {
      if (msg.channel === ORDER_EVENTS_CHANNEL) this.deliver(msg.payload);
      else this.opts.channels?.[msg.channel]?.(msg.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${ORDER_EVENTS_CHANNEL}`);
      for (const channel of Object.keys(this.opts.channels ?? {})) await client.query(`LISTEN ${client.escapeIdentifier(channel)}`);
    } catch (err) {
      client.removeAllListeners('end');
      await client.end().catch(() => undefined);
      throw err;
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.failures = 0;
    this.connections += 1;
    if (this.pingIntervalMs > 0) {
      if (this.pingTimer) clearInterval(this.pingTimer);
      this.pingTimer = setInterval(() => {
        client.query('select 1').catch((err: unknown) => this.lost(client, err));
      }, this.pingIntervalMs);
      this.pingTimer.unref();
    }
  }

  private deliver(raw: string | undefined): void {
    let parsed: z.infer<typeof notificationSchema>;
    try {
      parsed = notificationSchema.parse(JSON.parse(raw ?? ''));
    } catch (err) {
      this.opts.log.warn({ err, payload: raw?.slice(0, 200) }, 'order_events: ignoring malformed notification');
      return;
    }
    this.opts.pubSub.publish('ORDER_UPDATED', parsed.orderId, parsed);
  }

  private lost(client: pg.Client, err?: unknown): void {
    if (client !== this.client || this.closed) return;
    this.client = null;
    if (this.pingTimer) clearInterval(this.pingTimer);
    this.pingTimer = null;
    client.removeAllListeners('notification');
    client.end().catch(() => undefined);
    this.opts.log.warn({ err }, 'order_events: LISTEN connection lost; reconnecting');
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.closed || this.retryTimer) return;
    const base = Math.min(this.maxBackoffMs, this.initialBackoffMs * 2 ** this.failures);
    const delay = Math.round(base / 2 + (Math.random() * base) / 2);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.connect().then(
        () => {
          if (this.closed) return;
          this.opts.log.info({ connections: this.connections }, 'order_events: listening again; subscribers catch up');
          this.opts.onReconnect?.();
          this.opts.pubSub.publish('ORDER_EVENTS_RESYNC');
        },
        (err: unknown) => {
          this.failures += 1;
          this.opts.log.warn({ err, attempt: this.failures }, 'order_events: reconnect failed');
          this.scheduleReconnect();
        },
      );
    }, delay);
    this.retryTimer.unref();
  }
}

// ---------------------------------------------------------------------------------------------------

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
export function orderUpdateStream(pubSub: GatewayPubSub, orderId: string, source: OrderUpdateSource): Repeater<OrderStatusUpdate> {
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
