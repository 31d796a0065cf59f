import { Entity, Index, ManyToOne, OptionalProps, PrimaryKey, Property, type Rel } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import type { AttemptOutcome } from './webhook.transitions.js';
import { WebhookDelivery } from './webhook-delivery.entity.js';

/** The delivery log: one row per HTTP attempt (and one `lost` row per lease that expired without an outcome). */
@Entity({ tableName: 'webhook_attempts' })
@Index({ properties: ['delivery', 'startedAt'] })
export class WebhookAttempt {
  [OptionalProps]?: 'latencyMs' | 'httpStatus' | 'error' | 'responseBody' | 'createdAt';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => WebhookDelivery, { fieldName: 'delivery_id', deleteRule: 'cascade' })
  delivery!: Rel<WebhookDelivery>;

  @Property({ type: 'integer' })
  series!: number;

  /** 1-based within the series. */
  @Property({ type: 'integer' })
  number!: number;

  @Property({ type: 'text' })
  url!: string;

  @Property({ type: 'timestamptz' })
  startedAt!: Date;

  @Property({ type: 'integer', nullable: true })
  latencyMs: number | null = null;

  @Property({ type: 'integer', nullable: true })
  httpStatus: number | null = null;

  @Property({ type: 'text', nullable: true })
  error: string | null = null;

  /** The first bytes of the receiver's answer (capped), for the dashboard. */
  @Property({ type: 'text', nullable: true })
  responseBody: string | null = null;

  @Property({ type: 'text' })
  outcome!: AttemptOutcome;

  @Property({ type: 'timestamptz' })
  createdAt: Date = new Date();
}
