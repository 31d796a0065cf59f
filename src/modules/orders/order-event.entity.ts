import { Entity, Index, ManyToOne, OptionalProps, PrimaryKey, Property, type Rel } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import type { Environment } from '../../common/environment.js';
import { Merchant } from '../merchants/merchant.entity.js';
import { Order } from './order.entity.js';
import type { OrderStatus } from './order.transitions.js';

/**
 * One row per order event (outbox): status changes, and late payments and overpayments (types in
 * the event catalogue). Inserted only by OrderEventWriter, in the transaction that causes the event;
 * read by the status stream (catch-up) and by jobs that perform side effects.
 */
@Entity({ tableName: 'order_events' })
export class OrderEvent {
  [OptionalProps]?: 'seq' | 'createdAt' | 'fromStatus';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  /** Database-assigned (bigserial); increases with each change of one order. */
  @Property({ type: 'bigint', autoincrement: true, unique: true, persist: false })
  seq!: string;

  @ManyToOne(() => Order, { fieldName: 'order_id' })
  @Index()
  order!: Rel<Order>;

  @ManyToOne(() => Merchant, { fieldName: 'merchant_id' })
  @Index()
  merchant!: Rel<Merchant>;

  @Property({ type: 'text' })
  environment!: Environment;

  /** An OrderEventType of the event catalogue (`order.status_changed`, `payment.late`, …). */
  @Property({ type: 'text' })
  type!: string;

  @Property({ type: 'text', nullable: true })
  fromStatus: OrderStatus | null = null;

  @Property({ type: 'text' })
  toStatus!: OrderStatus;

  /** Why: `{ kind: 'payment_confirmed', … }`, `{ kind: 'expired' }`, … */
  @Property({ type: 'jsonb' })
  reason!: Record<string, unknown>;

  @Property({ type: 'timestamptz' })
  createdAt: Date = new Date();
}
