import { z } from 'zod';
import { requireEnvironment, requirePermission, requireSameMerchant } from '../common/access.js';
import type { RequestContext } from '../common/context.js';
import { parseInput } from '../common/validation.js';
import {
  changesSomething,
  expirationTime,
  linkStatus,
  maxUsage,
  paymentLinkId,
  products,
  title,
  totalWithin,
  type CreatePaymentLinkCommand,
  type OpenPaymentLinkCommand,
  type UpdatePaymentLinkCommand,
} from '../modules/payment-links/payment-link.commands.js';
import { assertReturnUrls, autoRedirect, returnUrl } from '../modules/orders/return-urls.js';
import { LEGACY_URL_NAMES, merchantId } from './order.mappers.js';

/*
 * The legacy REST dialect of payment links → PaymentLinkService's commands. Bodies are checked under
 * their snake_case names with the commands' own rules; the service is then given the values as
 * sent (it validates them again, cheaply, as it does for every transport).
 */

export const createPaymentLinkBody = (minIdr: number, maxIdr: number) =>
  z
    .object({
      /** Optional (the JWT names the merchant); when sent it must be the caller's. */
      merchant_id: merchantId.optional(),
      title,
      expiration_time: expirationTime,
      max_usage: maxUsage,
      products: products(maxIdr),
      success_url: returnUrl,
      cancel_url: returnUrl,
      auto_redirect: autoRedirect,
    })
    .superRefine(totalWithin(minIdr, maxIdr));
export const updatePaymentLinkBody = z
  .object({ payment_link_id: paymentLinkId, title: title.optional(), expiration_time: expirationTime.optional(), status: linkStatus.optional() })
  .refine(...changesSomething);
export const openPaymentLinkBody = z.object({ payment_link_id: paymentLinkId });

type Raw = Record<string, unknown>;

/** `POST /merchant/payment-link`. Access is checked before the body, as the service does, so a viewer learns FORBIDDEN first. */
export function toCreatePaymentLink(ctx: RequestContext, schema: ReturnType<typeof createPaymentLinkBody>, body: unknown): CreatePaymentLinkCommand {
  requirePermission(ctx, 'paymentLinks.manage', 'Payment links are managed from the dashboard');
  requireEnvironment(ctx);
  const b = parseInput(schema, body);
  if (b.merchant_id !== undefined) requireSameMerchant(ctx, b.merchant_id, 'the signed-in merchant');
  const urls = { successUrl: b.success_url, cancelUrl: b.cancel_url, autoRedirect: b.auto_redirect };
  assertReturnUrls(requireEnvironment(ctx), urls, LEGACY_URL_NAMES);
  const raw = body as Raw;
  return {
    title: raw.title as string,
    expirationTime: raw.expiration_time as number,
    maxUsage: raw.max_usage as number,
    products: raw.products as CreatePaymentLinkCommand['products'],
    ...urls,
  };
}

/** `PUT /merchant/payment-link`. */
export function toUpdatePaymentLink(ctx: RequestContext, body: unknown): UpdatePaymentLinkCommand {
  requirePermission(ctx, 'paymentLinks.manage', 'Payment links are managed from the dashboard');
  parseInput(updatePaymentLinkBody, body);
  const raw = body as Raw;
  return {
    id: raw.payment_link_id as string,
    title: raw.title as string | undefined,
    expirationTime: raw.expiration_time as number | undefined,
    status: raw.status as UpdatePaymentLinkCommand['status'],
  };
}

/** `POST /order/payment-link` (public). */
export function toOpenPaymentLink(body: unknown): OpenPaymentLinkCommand {
  return { id: parseInput(openPaymentLinkBody, body).payment_link_id };
}
