import { Entity, Index, ManyToOne, OptionalProps, PrimaryKey, Property, type Rel } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import type { Environment } from '../../common/environment.js';
import { AmountType } from '../../db/types.js';
import { Merchant } from '../merchants/merchant.entity.js';

/** What the merchant set: DELETE writes `Inactive`, PUT writes either. */
export type StoredPaymentLinkStatus = 'Active' | 'Inactive';
export const STORED_PAYMENT_LINK_STATUSES = ['Active', 'Inactive'] as const satisfies readonly StoredPaymentLinkStatus[];

/** What clients see. `Expired` is never stored: it is derived from `expires_at` on every read. */
export type PaymentLinkStatus = StoredPaymentLinkStatus | 'Expired';
export const PAYMENT_LINK_STATUSES = ['Active', 'Inactive', 'Expired'] as const satisfies readonly PaymentLinkStatus[];

/** One line of a link, as stored in `products` (price as a decimal string: exact, like every amount). */
export interface PaymentLinkProduct {
  name: string;
  price: string;
  quantity: number;
}

/**
 * A reusable payment link: each open creates a new order for `total_price`. `usage_count` is only
 * ever raised by one conditional UPDATE (PaymentLinkService.open), and a CHECK keeps it ≤ max_usage.
 */
@Entity({ tableName: 'payment_links' })
@Index({ properties: ['merchant', 'environment', 'createdAt'] })
export class PaymentLink {
  [OptionalProps]?: 'status' | 'currency' | 'usageCount' | 'createdAt' | 'updatedAt' | 'successUrl' | 'cancelUrl' | 'autoRedirect';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => Merchant, { fieldName: 'merchant_id' })
  merchant!: Rel<Merchant>;

  @Property({ type: 'text' })
  environment!: Environment;

  @Property({ type: 'text' })
  title!: string;

  /** Copied to each order opened from the link (hosted checkout's way back to the shop). */
  @Property({ type: 'text', nullable: true })
  successUrl: string | null = null;

  @Property({ type: 'text', nullable: true })
  cancelUrl: string | null = null;

  @Property({ type: 'boolean' })
  autoRedirect: boolean = false;

  @Property({ type: 'json' })
  products!: PaymentLinkProduct[];

  /** IDR, Σ price × quantity, computed by the service. */
  @Property({ type: AmountType })
  totalPrice!: bigint;

  @Property({ type: 'text' })
  currency: string = 'IDR';

  @Property({ type: 'text' })
  status: StoredPaymentLinkStatus = 'Active';

  /** Validity in seconds as last set by the merchant; `expiresAt` is the deadline it produced. */
  @Property({ type: 'integer' })
  expirationTime!: number;

  @Property({ type: 'timestamptz' })
  expiresAt!: Date;

  @Property({ type: 'integer' })
  maxUsage!: number;

  @Property({ type: 'integer' })
  usageCount: number = 0;

  @Property({ type: 'timestamptz' })
  createdAt: Date = new Date();

  @Property({ type: 'timestamptz', onUpdate: () => new Date() })
  updatedAt: Date = new Date();
}

/**
 * The status a client sees at `now`:
 *
 * | stored   | expires_at   | reported |
 * |----------|--------------|----------|
 * | Inactive | any          | Inactive | (the merchant's decision wins)
 * | Active   | ≤ now        | Expired  |
 * | Active   | > now        | Active   |
 *
 * A used-up link (usage_count = max_usage) stays `Active`; `remaining` 0 and `valid` false say so.
 */
export function paymentLinkStatus(link: Pick<PaymentLink, 'status' | 'expiresAt'>, now = new Date()): PaymentLinkStatus {
  if (link.status === 'Inactive') return 'Inactive';
  return link.expiresAt.getTime() <= now.getTime() ? 'Expired' : 'Active';
}

/** Uses left. */
export const remainingUses = (link: Pick<PaymentLink, 'maxUsage' | 'usageCount'>): number => Math.max(0, link.maxUsage - link.usageCount);

/** Why a link cannot be opened now: deactivated, past its deadline, or every use taken (an Active link can be exhausted). */
export type PaymentLinkUnusable = 'inactive' | 'expired' | 'exhausted';

/**
 * Status, uses left, whether the link can be opened now, and if not, why (`unusable`): a checkout page
 * must not read "Active" on a link nobody can open any more.
 */
export function paymentLinkState(link: Pick<PaymentLink, 'status' | 'expiresAt' | 'maxUsage' | 'usageCount'>, now = new Date()) {
  const status = paymentLinkStatus(link, now);
  const remaining = remainingUses(link);
  const unusable: PaymentLinkUnusable | null = status === 'Inactive' ? 'inactive' : status === 'Expired' ? 'expired' : remaining === 0 ? 'exhausted' : null;
  return { status, remaining, valid: unusable === null, unusable };
}
