import { Entity, Index, ManyToOne, OptionalProps, PrimaryKey, Property, type Rel } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import type { Environment } from '../../common/environment.js';
import { Merchant } from '../merchants/merchant.entity.js';
import { OrderEvent } from '../orders/order-event.entity.js';
import { Order } from '../orders/order.entity.js';
import type { WebhookDeliveryState } from './webhook.transitions.js';

/**
 * One webhook to one merchant URL (docs/webhooks.md). Written by the outbox dispatcher (unique per
 * order event), by `sendTestWebhook`, and moved through webhook.transitions.ts by conditional UPDATEs
 * in the webhook services only: the row is the lease that keeps a delivery in flight at most once.
 */
@Entity({ tableName: 'webhook_deliveries' })
@Index({ properties: ['merchant', 'environment', 'createdAt', 'id'] })
export class WebhookDelivery {
  [OptionalProps]?:
    | 'state'
    | 'series'
    | 'attempts'
    | 'nextAttemptAt'
    | 'lockedAt'
    | 'lockedUntil'
    | 'lockToken'
    | 'lastStatus'
    | 'lastError'
    | 'lastAttemptAt'
    | 'deliveredAt'
    | 'failedAt'
    | 'createdAt'
    | 'updatedAt'
    | 'order'
    | 'event';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => Merchant, { fieldName: 'merchant_id' })
  merchant!: Rel<Merchant>;

  @Property({ type: 'text' })
  environment!: Environment;

  @ManyToOne(() => Order, { fieldName: 'order_id', nullable: true, deleteRule: 'no action' })
  @Index()
  order: Rel<Order> | null = null;

  /** The order event it reports (null for test events). Unique: dispatching an event twice is a no-op. */
  @ManyToOne(() => OrderEvent, { fieldName: 'event_id', nullable: true, unique: true, deleteRule: 'no action' })
  event: Rel<OrderEvent> | null = null;

  /** `X-Service-Event`: `transaction.success`, `transaction.underpaid`, … */
  @Property({ type: 'text', fieldName: 'event' })
  kind!: string;

  /** `X-Service-Idempotency-Key`: fixed at creation, reused by every retry and redelivery. */
  @Property({ type: 'text' })
  idempotencyKey!: string;

  @Property({ type: 'text' })
  url!: string;

  /** `scheme://host:port` of `url`: the unit of per-endpoint concurrency. */
  @Property({ type: 'text' })
  endpoint!: string;

  /** The exact JSON body that is signed and sent. */
  @Property({ type: 'text' })
  payload!: string;

  @Property({ type: 'text' })
  state: WebhookDeliveryState = 'pending';

  /** 1 + the number of `redeliverWebhook` calls: each starts a new attempt series. */
  @Property({ type: 'integer' })
  series: number = 1;

  /** Attempts made in the current series. */
  @Property({ type: 'integer' })
  attempts: number = 0;

  @Property({ type: 'integer' })
  maxAttempts!: number;

  @Property({ type: 'timestamptz' })
  nextAttemptAt: Date = new Date();

  @Property({ type: 'timestamptz', nullable: true })
  lockedAt: Date | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  lockedUntil: Date | null = null;

  @Property({ type: 'uuid', nullable: true })
  lockToken: string | null = null;

  @Property({ type: 'integer', nullable: true })
  lastStatus: number | null = null;

  @Property({ type: 'text', nullable: true })
  lastError: string | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  lastAttemptAt: Date | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  deliveredAt: Date | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  failedAt: Date | null = null;

  @Property({ type: 'timestamptz' })
  createdAt: Date = new Date();

  @Property({ type: 'timestamptz' })
  updatedAt: Date = new Date();
}
