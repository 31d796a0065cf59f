import { Field, InputType, Int, ObjectType, registerEnumType } from 'type-graphql';
import { PageInfo } from '../../graphql/connection.js';
import { EnvironmentEnum } from '../../graphql/scalars.js';
import type { CreatedOrder } from '../orders/order.service.js';
import { OrderType, toOrderType } from '../orders/order.types.js';
import type { CreatePaymentLinkCommand, UpdatePaymentLinkCommand } from './payment-link.commands.js';
import { paymentLinkState, type PaymentLink, type PaymentLinkStatus, type PaymentLinkUnusable } from './payment-link.entity.js';

/** Enum values are upper-case in GraphQL; the service uses the spec's `Active` / `Inactive` / `Expired`. */
export enum PaymentLinkStatusEnum {
  ACTIVE = 'Active',
  INACTIVE = 'Inactive',
  EXPIRED = 'Expired',
}
registerEnumType(PaymentLinkStatusEnum, {
  name: 'PaymentLinkStatus',
  description: 'Active; Inactive (deactivated by the merchant); Expired (derived: the validity window has passed). Only ACTIVE/INACTIVE can be set.',
});

@ObjectType()
export class PaymentLinkProductType {
  @Field() name!: string;
  @Field({ description: 'IDR, whole rupiah, as a string' }) price!: string;
  @Field(() => Int) quantity!: number;
}

@ObjectType('PaymentLink')
export class PaymentLinkType {
  @Field() id!: string;
  @Field() merchantId!: string;
  @Field(() => EnvironmentEnum) environment!: EnvironmentEnum;
  @Field() title!: string;
  @Field({ description: 'Public URL of the link' }) link!: string;
  @Field(() => [PaymentLinkProductType]) products!: PaymentLinkProductType[];
  @Field({ description: 'Σ price × quantity, IDR' }) totalPrice!: string;
  @Field() currency!: string;
  @Field(() => PaymentLinkStatusEnum) status!: PaymentLinkStatus;
  @Field(() => Int) usageCount!: number;
  @Field(() => Int) maxUsage!: number;
  @Field(() => Int, { description: 'maxUsage − usageCount' }) remaining!: number;
  @Field(() => Int, { description: 'Validity in seconds, as last set' }) expirationTime!: number;
  @Field(() => String, { nullable: true, description: 'Copied to each order: hosted checkout "Return to shop" after payment' }) successUrl!: string | null;
  @Field(() => String, { nullable: true, description: 'Copied to each order: hosted checkout "Return to shop" when not paid' }) cancelUrl!: string | null;
  @Field({ description: 'Copied to each order: go to successUrl by itself after payment' }) autoRedirect!: boolean;
  @Field({ description: 'End of validity' }) expiresAt!: Date;
  @Field() createdAt!: Date;
  @Field() updatedAt!: Date;
}

@ObjectType()
export class PaymentLinkEdge {
  @Field() cursor!: string;
  @Field(() => PaymentLinkType) node!: PaymentLinkType;
}

@ObjectType({ description: 'A page of payment links, newest first (Relay connection)' })
export class PaymentLinkConnection {
  @Field(() => [PaymentLinkEdge]) edges!: PaymentLinkEdge[];
  @Field(() => PageInfo) pageInfo!: PageInfo;
  /** Counts the environment's links (one statement), only when `totalCount` is selected. */
  count!: () => Promise<number>;
}

@ObjectType()
export class PaymentLinkValidation {
  @Field() id!: string;
  @Field(() => PaymentLinkStatusEnum) status!: PaymentLinkStatus;
  @Field({ description: 'true when the link can be opened now (Active and uses left)' }) valid!: boolean;
  @Field(() => String, {
    nullable: true,
    description: 'Why the link cannot be opened now: inactive, expired or exhausted (every use taken; status stays Active). Null when valid',
  })
  unusable!: PaymentLinkUnusable | null;
  @Field() title!: string;
  @Field(() => [PaymentLinkProductType]) products!: PaymentLinkProductType[];
  @Field() totalPrice!: string;
  @Field() currency!: string;
  @Field(() => Int) remaining!: number;
  @Field(() => Int) usageCount!: number;
  @Field(() => Int) maxUsage!: number;
  @Field({ description: 'End of validity' }) expiresAt!: Date;
}

@ObjectType()
export class OpenedPaymentLink {
  @Field(() => OrderType, { description: "The order made from the link (the spec's `request`)" }) order!: OrderType;
  @Field({ description: 'Scoped checkout key (30 minutes, this order only); the REST `api_key`. Shown once.' }) checkoutKey!: string;
  @Field({ description: 'Order expiry' }) expiresAt!: Date;
}

@InputType()
export class PaymentLinkProductInput {
  @Field() name!: string;
  @Field({ description: 'IDR, whole rupiah, as a string' }) price!: string;
  @Field(() => Int) quantity!: number;
}

@InputType()
export class CreatePaymentLinkInput {
  @Field() title!: string;
  @Field(() => Int, { description: 'Validity in seconds (60 s to 365 days)' }) expirationTime!: number;
  @Field(() => Int, { description: '1 to 1,000,000' }) maxUsage!: number;
  @Field(() => [PaymentLinkProductInput], { description: '1 to 50 products' }) products!: PaymentLinkProductInput[];
  @Field(() => String, { nullable: true, description: 'Copied to each order: hosted checkout "Return to shop" after payment' }) successUrl?: string | null;
  @Field(() => String, { nullable: true, description: 'Copied to each order: hosted checkout "Return to shop" when not paid' }) cancelUrl?: string | null;
  @Field(() => Boolean, { nullable: true, description: 'Copied to each order: go to successUrl by itself after payment' }) autoRedirect?: boolean | null;
}

@InputType()
export class UpdatePaymentLinkInput {
  @Field() id!: string;
  @Field(() => String, { nullable: true }) title?: string | null;
  @Field(() => Int, { nullable: true, description: 'Restarts the validity window from now' }) expirationTime?: number | null;
  @Field(() => PaymentLinkStatusEnum, { nullable: true, description: 'ACTIVE or INACTIVE' }) status?: PaymentLinkStatus | null;
}

/** GraphQL input → the service's command; absent optional fields stay absent. */
export const createCommandOf = (i: CreatePaymentLinkInput): CreatePaymentLinkCommand => ({
  title: i.title,
  expirationTime: i.expirationTime,
  maxUsage: i.maxUsage,
  products: i.products.map((p) => ({ name: p.name, price: p.price, quantity: p.quantity })),
  successUrl: i.successUrl,
  cancelUrl: i.cancelUrl,
  autoRedirect: i.autoRedirect,
});

export const updateCommandOf = (i: UpdatePaymentLinkInput): UpdatePaymentLinkCommand => ({
  id: i.id,
  title: i.title ?? undefined,
  expirationTime: i.expirationTime ?? undefined,
  // EXPIRED is an enum value GraphQL accepts; the service refuses it with the REST message.
  status: (i.status ?? undefined) as UpdatePaymentLinkCommand['status'],
});

export function toPaymentLinkType(link: PaymentLink, url: string, now = new Date()): PaymentLinkType {
  const { status, remaining } = paymentLinkState(link, now);
  return {
    id: link.id,
    merchantId: link.merchant.id,
    environment: link.environment as EnvironmentEnum,
    title: link.title,
    link: url,
    products: link.products,
    totalPrice: link.totalPrice.toString(),
    currency: link.currency,
    status,
    usageCount: link.usageCount,
    maxUsage: link.maxUsage,
    remaining,
    expirationTime: link.expirationTime,
    successUrl: link.successUrl,
    cancelUrl: link.cancelUrl,
    autoRedirect: link.autoRedirect,
    expiresAt: link.expiresAt,
    createdAt: link.createdAt,
    updatedAt: link.updatedAt,
  };
}

export function toPaymentLinkValidation(link: PaymentLink, now = new Date()): PaymentLinkValidation {
  const { status, remaining, valid, unusable } = paymentLinkState(link, now);
  return {
    id: link.id,
    status,
    valid,
    unusable,
    title: link.title,
    products: link.products,
    totalPrice: link.totalPrice.toString(),
    currency: link.currency,
    remaining,
    usageCount: link.usageCount,
    maxUsage: link.maxUsage,
    expiresAt: link.expiresAt,
  };
}

export function toOpenedPaymentLink({ order, key }: CreatedOrder): OpenedPaymentLink {
  return { order: toOrderType(order), checkoutKey: key, expiresAt: order.expiresAt };
}
