import { PageInfo } from '../../graphql/connection.js';
import { Field, ID, Int, ObjectType, registerEnumType } from 'type-graphql';
import { EnvironmentEnum } from '../../graphql/scalars.js';
import type { WebhookAttemptView, WebhookDeliveryView } from './webhook-delivery.view.js';

/** GraphQL enum values are upper-case; the service uses the lower-case state names. */
export enum WebhookDeliveryStateEnum {
  PENDING = 'pending',
  SENDING = 'sending',
  DELIVERED = 'delivered',
  FAILED = 'failed',
}
registerEnumType(WebhookDeliveryStateEnum, {
  name: 'WebhookDeliveryState',
  description: 'pending → sending → delivered | pending (retry) | failed (docs/webhooks.md)',
});

@ObjectType('WebhookAttempt', { description: 'One HTTP attempt of a delivery (outcome `lost`: the worker died before recording it)' })
export class WebhookAttemptType {
  @Field(() => Int, { description: 'Attempt series (1 + redeliveries)' }) series!: number;
  @Field(() => Int, { description: 'Attempt number within the series' }) number!: number;
  @Field() url!: string;
  @Field() startedAt!: Date;
  @Field(() => Int, { nullable: true, description: 'Milliseconds from start to the answer (or the error)' }) latencyMs!: number | null;
  @Field(() => Int, { nullable: true }) httpStatus!: number | null;
  @Field(() => String, { nullable: true, description: 'Network error, timeout or refusal, when there was no HTTP status' }) error!: string | null;
  @Field(() => String, { nullable: true, description: 'First 2 KiB of the answer' }) responseBody!: string | null;
  @Field({ description: 'delivered, retry, failed or lost' }) outcome!: string;
}

@ObjectType('WebhookDelivery')
export class WebhookDeliveryType {
  @Field(() => ID) id!: string;
  @Field(() => EnvironmentEnum) environment!: EnvironmentEnum;
  @Field({
    description:
      'X-Service-Event: transaction.success, transaction.underpaid, transaction.expired, transaction.late_payment, transaction.overpaid, transaction.reorged, transaction.unattributed, settlement_wallet.changed, sweep.completed, sweep.failed or webhook.test',
  })
  event!: string;
  @Field(() => WebhookDeliveryStateEnum) state!: WebhookDeliveryStateEnum;
  @Field(() => String, { nullable: true }) orderNo!: string | null;
  @Field({ description: 'X-Service-Idempotency-Key (kept by retries and redeliveries)' }) idempotencyKey!: string;
  @Field() url!: string;
  @Field(() => Int) series!: number;
  @Field(() => Int, { description: 'Attempts made in the current series' }) attemptCount!: number;
  @Field(() => Int) maxAttempts!: number;
  @Field(() => Date, { nullable: true, description: 'When the next attempt is due (pending only)' }) nextAttemptAt!: Date | null;
  @Field(() => Int, { nullable: true }) lastStatus!: number | null;
  @Field(() => String, { nullable: true }) lastError!: string | null;
  @Field(() => Date, { nullable: true }) deliveredAt!: Date | null;
  @Field(() => Date, { nullable: true }) failedAt!: Date | null;
  @Field() createdAt!: Date;
  @Field({ description: 'The exact JSON body that is signed and sent' }) payload!: string;
  @Field(() => [WebhookAttemptType], { description: 'Every attempt, oldest first' }) attempts!: WebhookAttemptType[];
}

@ObjectType()
export class WebhookDeliveryEdge {
  @Field() cursor!: string;
  @Field(() => WebhookDeliveryType) node!: WebhookDeliveryType;
}

@ObjectType({ description: 'A page of webhook deliveries (Relay connection)' })
export class WebhookDeliveryPage {
  @Field(() => [WebhookDeliveryEdge]) edges!: WebhookDeliveryEdge[];
  @Field(() => PageInfo) pageInfo!: PageInfo;
  /** Counts the filtered deliveries (one statement), only when `totalCount` is selected. */
  count!: () => Promise<number>;
  @Field(() => [WebhookDeliveryType], { deprecationReason: 'Use edges { node }' }) nodes!: WebhookDeliveryType[];
  @Field(() => String, { nullable: true, deprecationReason: 'Use pageInfo { endCursor hasNextPage }' }) nextCursor!: string | null;
}

@ObjectType()
export class NotificationSettings {
  @Field(() => EnvironmentEnum) environment!: EnvironmentEnum;
  @Field(() => String, { nullable: true }) notificationUrl!: string | null;
}

@ObjectType('WebhookSigningSecret', { description: 'The Standard Webhooks secret of an environment (webhook-signature header; docs/webhooks.md)' })
export class WebhookSigningSecretType {
  @Field(() => EnvironmentEnum) environment!: EnvironmentEnum;
  @Field({ description: 'The live secret, whsec_…: give it to a Standard Webhooks library' }) secret!: string;
  @Field() createdAt!: Date;
  @Field(() => Date, { nullable: true, description: 'While a rotation overlaps: when the previous secret stops signing' }) previousRetiresAt!: Date | null;
}

const toAttemptType = (a: WebhookAttemptView): WebhookAttemptType => ({ ...a });

export const toDeliveryType = (d: WebhookDeliveryView): WebhookDeliveryType => ({
  id: d.id,
  environment: d.environment as EnvironmentEnum,
  event: d.event,
  state: d.state as WebhookDeliveryStateEnum,
  orderNo: d.orderNo,
  idempotencyKey: d.idempotencyKey,
  url: d.url,
  series: d.series,
  attemptCount: d.attempts,
  maxAttempts: d.maxAttempts,
  nextAttemptAt: d.nextAttemptAt,
  lastStatus: d.lastStatus,
  lastError: d.lastError,
  deliveredAt: d.deliveredAt,
  failedAt: d.failedAt,
  createdAt: d.createdAt,
  payload: d.payload,
  attempts: d.attemptLog.map(toAttemptType),
});
