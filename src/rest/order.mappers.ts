import { z } from 'zod';
import { requireEnvironment, requireSameMerchant } from '../common/access.js';
import { assertReturnUrls, autoRedirect, returnUrl } from '../modules/orders/return-urls.js';
import type { RequestContext } from '../common/context.js';
import { parseInput } from '../common/validation.js';
import {
  customerEmail,
  customerName,
  network,
  orderAmount,
  orderNo,
  tokenAddress,
  walletType,
  type CreateDepositCommand,
  CheckedCreateOrder,
  type GetOrderCommand,
  type LockQuoteCommand,
} from '../modules/orders/order.commands.js';

/*
 * The legacy REST dialect of the order flow → the services' typed commands. Bodies are checked here
 * under their legacy names (so VALIDATION_FAILED names `transactionID`, `order_no`, … as merchants
 * have always seen), with the commands' own field rules; `merchant_id`, which the core never takes
 * (the credential names the merchant), must be the caller's.
 */

export const merchantId = z.string().uuid('must be your merchant id');

/** Return-URL fields as the legacy bodies name them (errors say `success_url`, not `successUrl`). */
export const LEGACY_URL_NAMES = { successUrl: 'success_url', cancelUrl: 'cancel_url' };

export const createOrderBody = (min: number, max: number) =>
  z.object({
    merchant_id: merchantId,
    order_no: orderNo,
    amount: orderAmount(min, max),
    name: customerName,
    email: customerEmail,
    success_url: returnUrl,
    cancel_url: returnUrl,
    auto_redirect: autoRedirect,
  });
export const getOrderBody = z.object({ merchant_id: merchantId, order_no: orderNo });
export const checkOrderRateBody = z.object({ merchant_id: merchantId, transactionID: orderNo, tokenAddress, network });
export const createQrBody = checkOrderRateBody.extend({ walletType });

/**
 * `POST /merchant/fiat/order`. The body is parsed with the command's own field validators and the
 * same bounds (`schema` is built from ORDER_MIN_IDR / ORDER_MAX_IDR, as the service's command is), so
 * the result goes to the service as already checked.
 */
export function toCreateOrder(ctx: RequestContext, schema: ReturnType<typeof createOrderBody>, body: unknown): CheckedCreateOrder {
  const b = parseInput(schema, body);
  requireSameMerchant(ctx, b.merchant_id, 'the API key');
  const urls = { successUrl: b.success_url, cancelUrl: b.cancel_url, autoRedirect: b.auto_redirect };
  assertReturnUrls(requireEnvironment(ctx), urls, LEGACY_URL_NAMES);
  return new CheckedCreateOrder({ orderNo: b.order_no, amount: b.amount, customerName: b.name, customerEmail: b.email, ...urls });
}

/** `POST /merchant/fiat/getOrder`. */
export function toGetOrder(ctx: RequestContext, body: unknown): GetOrderCommand {
  const b = parseInput(getOrderBody, body);
  requireSameMerchant(ctx, b.merchant_id);
  return { orderNo: b.order_no };
}

/** `POST /merchant/fiat/checkOrderRate`. */
export function toLockQuote(ctx: RequestContext, body: unknown): LockQuoteCommand {
  const b = parseInput(checkOrderRateBody, body);
  requireSameMerchant(ctx, b.merchant_id);
  return { orderNo: b.transactionID, network: b.network, tokenAddress: b.tokenAddress };
}

/** `POST /pgqr/fiat/create` and the query string of `GET /pgqr/fiat/qr`. */
export function toCreateDeposit(ctx: RequestContext, body: unknown): CreateDepositCommand {
  const b = parseInput(createQrBody, body);
  requireSameMerchant(ctx, b.merchant_id);
  return { orderNo: b.transactionID, network: b.network, tokenAddress: b.tokenAddress, walletType: b.walletType };
}
