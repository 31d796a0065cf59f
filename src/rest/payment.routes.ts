import type { App } from '../app.js';
import { depositView } from '../modules/deposits/deposit.service.js';
import { renderQrPng, renderQrSvg } from '../modules/deposits/qr-image.js';
import { depositSummaryView, orderView, paymentView, quoteSummaryView } from '../modules/orders/order.views.js';
import { quoteView } from '../modules/quotes/quote.service.js';
import { tokenView } from '../modules/tokens/token.service.js';
import type { RestRoute } from './routes.js';

/**
 * The spec's order and payment flow (environment-scoped). Each handler parses nothing itself: it
 * passes the body to the same service method the GraphQL resolver calls and maps the result.
 */
export function paymentRoutes(app: App): RestRoute[] {
  return [
    {
      method: 'POST',
      url: '/merchant/fiat/order',
      auth: 'apiKey',
      limit: 'merchant',
      handler: async (ctx, req) => {
        const { order, key, url } = await app.orders.create(ctx, req.body);
        return { status: 201, message: 'Order created', data: { request: orderView(order), url, key, expired_at: Math.floor(order.expiresAt.getTime() / 1000) } };
      },
    },
    {
      method: 'POST',
      url: '/merchant/fiat/checkOrderRate',
      auth: 'checkout',
      limit: 'merchant',
      handler: async (ctx, req) => {
        const { order, quote } = await app.quotes.lock(ctx, req.body);
        return { message: 'Rate locked', data: quoteView(order, quote, quote.token) };
      },
    },
    {
      method: 'POST',
      url: '/pgqr/fiat/create',
      auth: 'checkout',
      limit: 'merchant',
      handler: async (ctx, req) => ({ status: 201, message: 'QR created', data: depositView(await app.deposits.create(ctx, req.body)) }),
    },
    {
      method: 'POST',
      url: '/merchant/fiat/getOrder',
      auth: 'checkout',
      limit: 'merchant',
      handler: async (ctx, req) => {
        const { order, quotes, deposits, payments } = await app.orders.details(ctx, await app.orders.getByNo(ctx, req.body));
        return {
          data: {
            request: orderView(order),
            expired_at: Math.floor(order.expiresAt.getTime() / 1000),
            quotes: quotes.map(quoteSummaryView),
            deposits: deposits.map(depositSummaryView),
            payments: payments.map(paymentView),
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
        const { qrValue } = await app.deposits.create(ctx, q);
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
      handler: async (ctx) => ({ data: { tokens: (await app.tokens.listActive(ctx.em, ctx.environment!)).map(tokenView) } }),
    },
  ];
}
