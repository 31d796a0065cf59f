import { z } from 'zod';
import { returnUrlFields } from '../../checkout/return-url.js';
import { merchantId } from '../orders/order.inputs.js';
import { STORED_PAYMENT_LINK_STATUSES } from './payment-link.entity.js';

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

const expirationTime = z
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

const product = (max: number) =>
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

export const createPaymentLinkInput = (minIdr: number, maxIdr: number) =>
  z
    .object({
      /** Optional (the JWT names the merchant); when sent it must be the caller's. */
      merchant_id: merchantId.optional(),
      title: displayText(L.titleMax),
      expiration_time: expirationTime,
      max_usage: z
        .number({ message: 'must be a whole number' })
        .int('must be a whole number')
        .min(1, 'must be at least 1')
        .max(L.maxUsageMax, `must be at most ${L.maxUsageMax}`),
      products: z
        .array(product(maxIdr), { message: 'must be an array of {name, price, quantity}' })
        .min(1, 'must contain at least one product')
        .max(L.productsMax, `must contain at most ${L.productsMax} products`),
      ...returnUrlFields,
    })
    .superRefine((v, ctx) => {
      // zod runs object refinements even when a field failed (with the raw, untransformed value):
      // only total up products that all parsed, or a bad price would surface as a TypeError.
      if (!Array.isArray(v.products) || !v.products.every((p) => typeof p?.price === 'bigint' && Number.isSafeInteger(p.quantity))) return;
      const total = totalOf(v.products);
      if (total < BigInt(minIdr) || total > BigInt(maxIdr)) {
        ctx.addIssue({ code: 'custom', path: ['products'], message: `total price ${total} IDR must be between ${minIdr} and ${maxIdr} IDR` });
      }
    });

export const updatePaymentLinkInput = z
  .object({
    payment_link_id: paymentLinkId,
    title: displayText(L.titleMax).optional(),
    /** Restarts the validity window from now. */
    expiration_time: expirationTime.optional(),
    status: z.enum(STORED_PAYMENT_LINK_STATUSES, { message: 'must be Active or Inactive (Expired follows from expiration_time)' }).optional(),
  })
  .refine((v) => v.title !== undefined || v.expiration_time !== undefined || v.status !== undefined, {
    message: 'nothing to change: send title, expiration_time or status',
  });

// Query strings arrive as text; GraphQL sends numbers. Out-of-range is refused, not clamped.
export const listPaymentLinksInput = z.object({
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

export const openPaymentLinkInput = z.object({ payment_link_id: paymentLinkId });
