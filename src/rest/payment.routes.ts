import type { App } from '../app.js';
import { unix } from '../common/time.js';
import { renderQrPng, renderQrSvg } from '../modules/deposits/qr-image.js';
import { createOrderBody, toCreateDeposit, toCreateOrder, toGetOrder, toLockQuote } from './order.mappers.js';
import { depositSummaryView, depositView, orderView, paymentView, quoteSummaryView, receiptView, quoteView, tokenView } from './order.views.js';
import { header, type RestRoute } from './routes.js';
import { parseIdempotencyKey } from '../modules/orders/order-idempotency.js';

/**
 * The spec's order and payment flow (environment-scoped). Each handler maps the legacy body to the
 * typed command (order.mappers.ts), calls the service method the GraphQL resolver calls, and maps
 * the result to the legacy view (order.views.ts).
 */
export function paymentRoutes(app: App): RestRoute[] {
  const createBody = createOrderBody(app.config.ORDER_MIN_IDR, app.config.ORDER_MAX_IDR);
  return [
    {
      method: 'POST',
      url: '/merchant/fiat/order',
      auth: 'apiKey',
      limit: 'merchant',
      handler: async (ctx, req) => {
        // Idempotency-Key: a retry of the same request answers with the same order (order-idempotency.ts).
        const raw = header(req, 'idempotency-key');
        const idempotencyKey = raw === undefined ? undefined : parseIdempotencyKey(raw, 'Idempotency-Key');
        const { order, key, url, replayed } = await app.orders.create(ctx, toCreateOrder(ctx, createBody, req.body), { idempotencyKey });
        return {
          status: 201,
          message: 'Order created',
          data: { request: orderView(order), url, key, expired_at: unix(order.expiresAt) },
          ...(idempotencyKey === undefined ? {} : { headers: { 'idempotent-replayed': replayed ? 'true' : 'false' } }),
        };
      },
    },
    {
      method: 'POST',
      url: '/merchant/fiat/checkOrderRate',
      auth: 'checkout',
      limit: 'merchant',
      handler: async (ctx, req) => {
        const { order, quote } = await app.quotes.lock(ctx, toLockQuote(ctx, req.body));
        return { message: 'Rate locked', data: quoteView(order, quote, quote.token) };
      },
    },
    {
      method: 'POST',
      url: '/pgqr/fiat/create',
      auth: 'checkout',
      limit: 'merchant',
      handler: async (ctx, req) => ({ status: 201, message: 'QR created', data: depositView(await app.deposits.create(ctx, toCreateDeposit(ctx, req.body))) }),
    },
    {
      method: 'POST',
      url: '/merchant/fiat/getOrder',
      auth: 'checkout',
      limit: 'merchant',
      handler: async (ctx, req) => {
        const { order, quotes, deposits, payments, receipts } = await app.orders.details(ctx, await app.orders.getByNo(ctx, toGetOrder(ctx, req.body)));
        return {
          // Never the generic "Success": a reader of `message` would take it for the order's status.
          message: `Order found (status ${order.status})`,
          data: {
            request: orderView(order),
            expired_at: unix(order.expiresAt),
            quotes: quotes.map(quoteSummaryView),
            deposits: deposits.map(depositSummaryView),
            payments: payments.map(paymentView),
            unattributed_receipts: receipts.map(receiptView),
          },
        };
      },
    },
    {
      // The deposit's QR as an image for checkout pages: same input as pgqr/fiat/create, as query parameters.
      method: 'GET',
      url: '/pgqr/fiat/qr',
      auth: 'checkout',
      limit: 'merchant',
      handler: async (ctx, req) => {
        const q = (req.query ?? {}) as Record<string, string>;
        const { qrValue } = await app.deposits.create(ctx, toCreateDeposit(ctx, q));
        return q.format === 'svg'
          ? { raw: { contentType: 'image/svg+xml', body: await renderQrSvg(qrValue) } }
          : { raw: { contentType: 'image/png', body: await renderQrPng(qrValue) } };
      },
    },
    {
      method: 'GET',
      url: '/listToken',
      auth: 'checkout',
      limit: 'merchant',
      handler: async (ctx) => ({ data: { tokens: (await app.tokens.list(ctx)).map(tokenView) } }),
    },
  ];
}
