import { z } from 'zod';
import { pageArgs } from '../../common/cursor.js';
import { returnUrlFields } from '../orders/return-urls.js';
import { STORED_PAYMENT_LINK_STATUSES } from './payment-link.entity.js';

/*
 * PaymentLinkService's commands, validated once at the service boundary. The field rules and the
 * object-level checks are exported so the legacy REST dialect (`src/rest/payment-link.mappers.ts`)
 * checks its snake_case bodies with the same rules and messages.
 */

/** Bounds not given by the spec, chosen for a hosted checkout page and a sane jsonb row. */
export const PAYMENT_LINK_LIMITS = {
  titleMax: 200,
  productsMax: 50,
  productNameMax: 200,
  quantityMax: 10_000,
  maxUsageMax: 1_000_000,
  expirationMinS: 60,
  expirationMaxS: 365 * 86_400,
  pageSizeDefault: 20,
  pageSizeMax: 100,
  offsetMax: 1_000_000,
} as const;
const L = PAYMENT_LINK_LIMITS;

// Shown on a customer-facing page: no control characters (newlines, NUL, escapes).
const displayText = (max: number) =>
  z
    .string()
    .trim()
    .min(1, 'must not be empty')
    .max(max, `must be at most ${max} characters`)
    .regex(/^\P{Cc}*$/u, 'must not contain control characters');

/** A link id as sent by a client. Anything that is not a UUID is simply an unknown link (404), never a 500. */
export const paymentLinkId = z.string({ message: 'must be the payment link id (string)' }).max(100, 'must be the payment link id');

export const expirationTime = z
  .number({ message: 'must be a number of seconds' })
  .int('must be a whole number of seconds')
  .min(L.expirationMinS, `must be at least ${L.expirationMinS} seconds`)
  .max(L.expirationMaxS, `must be at most ${L.expirationMaxS} seconds (365 days)`);

/** Whole rupiah, as a JSON number (the spec) or a decimal string (GraphQL, exact beyond 2^31). */
const price = (max: number) =>
  z
    .union([z.number().int().min(1), z.string().regex(/^[1-9][0-9]{0,15}$/)], { error: 'must be a positive whole number of rupiah' })
    .transform((v) => BigInt(v))
    .refine((v) => v <= BigInt(max), `must be at most ${max} IDR`);

export const product = (max: number) =>
  z.object({
    name: displayText(L.productNameMax),
    price: price(max),
    quantity: z
      .number({ message: 'must be a whole number' })
      .int('must be a whole number')
      .min(1, 'must be at least 1')
      .max(L.quantityMax, `must be at most ${L.quantityMax}`),
  });

/** Σ price × quantity, in bigint so no product line can overflow. */
export const totalOf = (products: { price: bigint; quantity: number }[]): bigint => products.reduce((s, p) => s + p.price * BigInt(p.quantity), 0n);

export const title = displayText(L.titleMax);
export const maxUsage = z
  .number({ message: 'must be a whole number' })
  .int('must be a whole number')
  .min(1, 'must be at least 1')
  .max(L.maxUsageMax, `must be at most ${L.maxUsageMax}`);
export const products = (maxIdr: number) =>
  z
    .array(product(maxIdr), { message: 'must be an array of {name, price, quantity}' })
    .min(1, 'must contain at least one product')
    .max(L.productsMax, `must contain at most ${L.productsMax} products`);
export const linkStatus = z.enum(STORED_PAYMENT_LINK_STATUSES, { message: 'must be Active or Inactive (Expired follows from expiration_time)' });

/** The link's total must be a valid order amount (checked on the whole object, after the products). */
export const totalWithin =
  (minIdr: number, maxIdr: number) =>
  (v: { products?: unknown }, ctx: z.RefinementCtx): void => {
    // zod runs object refinements even when a field failed (with the raw, untransformed value):
    // only total up products that all parsed, or a bad price would surface as a TypeError.
    const list = v.products as { price: unknown; quantity: unknown }[] | undefined;
    if (!Array.isArray(list) || !list.every((p) => typeof p?.price === 'bigint' && Number.isSafeInteger(p.quantity))) return;
    const total = totalOf(list as { price: bigint; quantity: number }[]);
    if (total < BigInt(minIdr) || total > BigInt(maxIdr)) {
      ctx.addIssue({ code: 'custom', path: ['products'], message: `total price ${total} IDR must be between ${minIdr} and ${maxIdr} IDR` });
    }
  };

/** An update must change something. */
export const changesSomething = [
  (v: { title?: unknown; expiration_time?: unknown; expirationTime?: unknown; status?: unknown }) =>
    v.title !== undefined || (v.expiration_time ?? v.expirationTime) !== undefined || v.status !== undefined,
  { message: 'nothing to change: send title, expiration_time or status' },
] as const;

export const createPaymentLinkCommand = (minIdr: number, maxIdr: number) =>
  z.object({ title, expirationTime, maxUsage, products: products(maxIdr), ...returnUrlFields }).superRefine(totalWithin(minIdr, maxIdr));
export type CreatePaymentLinkCommand = z.input<ReturnType<typeof createPaymentLinkCommand>>;

export const updatePaymentLinkCommand = z
  .object({
    id: paymentLinkId,
    title: title.optional(),
    /** Restarts the validity window from now. */
    expirationTime: expirationTime.optional(),
    status: linkStatus.optional(),
  })
  .refine(...changesSomething);
export type UpdatePaymentLinkCommand = z.input<typeof updatePaymentLinkCommand>;

// Query strings arrive as text; GraphQL sends numbers. Out-of-range is refused, not clamped.
export const listPaymentLinksCommand = z.object({
  limit: z.coerce
    .number({ message: 'must be a number' })
    .int('must be a whole number')
    .min(1, 'must be at least 1')
    .max(L.pageSizeMax, `must be at most ${L.pageSizeMax}`)
    .default(L.pageSizeDefault),
  offset: z.coerce
    .number({ message: 'must be a number' })
    .int('must be a whole number')
    .min(0, 'must be at least 0')
    .max(L.offsetMax, `must be at most ${L.offsetMax}`)
    .default(0),
});

export type ListPaymentLinksCommand = z.input<typeof listPaymentLinksCommand>;

/** GraphQL's connection: newest first, keyset cursor. */
export const pagePaymentLinksCommand = z.object(pageArgs);
export type PagePaymentLinksCommand = z.input<typeof pagePaymentLinksCommand>;

export const openPaymentLinkCommand = z.object({ id: paymentLinkId });
export type OpenPaymentLinkCommand = z.input<typeof openPaymentLinkCommand>;
