import { z } from 'zod';
import { ENVIRONMENTS } from '../../common/environment.js';
import { orderNo } from '../orders/order.commands.js';
import { WEBHOOK_EVENT_KINDS } from './webhook.payload.js';
import { WEBHOOK_DELIVERY_STATES } from './webhook.transitions.js';

const environment = z.enum(ENVIRONMENTS);

export const setNotificationUrlInput = z.object({
  environment,
  /** null or "" clears the URL (no more webhooks for that environment). */
  url: z.string().trim().max(2048, 'must be at most 2048 characters').nullable(),
});
export type SetNotificationUrlCommand = z.input<typeof setNotificationUrlInput>;

export const sendTestInput = z.object({ environment });
export type SendTestCommand = z.input<typeof sendTestInput>;

export const listDeliveriesInput = z.object({
  environment,
  state: z.enum(WEBHOOK_DELIVERY_STATES).optional(),
  event: z.enum(WEBHOOK_EVENT_KINDS, { message: `must be one of ${WEBHOOK_EVENT_KINDS.join(', ')}` }).optional(),
  orderNo: orderNo.optional(),
  first: z.number().int().min(1).max(100).default(20),
  after: z.string().max(200).optional(),
});
/** `event` stays a string here: an unknown kind is refused by the schema with the list of valid ones. */
export type ListDeliveriesCommand = Omit<z.input<typeof listDeliveriesInput>, 'event'> & { event?: string };

export const deliveryId = z.string().uuid('must be a webhook delivery id');
export const deliveryRefInput = z.object({ id: deliveryId });
export type DeliveryRefCommand = z.input<typeof deliveryRefInput>;

export const rotateSecretInput = z.object({
  environment,
  /** How long the previous secret keeps signing beside the new one (0 = retire it now). */
  overlapHours: z.number().int().min(0, 'must be 0 or more').max(168, 'must be at most 168 (7 days)').default(24),
});
export type RotateSecretCommand = z.input<typeof rotateSecretInput>;

export const revealSecretInput = z.object({ environment });
export type RevealSecretCommand = z.input<typeof revealSecretInput>;
