import type { App } from '../app.js';
import { orderView } from './order.views.js';
import { paymentLinkValidationView, paymentLinkView } from './payment-link.views.js';
import { unix } from '../common/time.js';
import { createPaymentLinkBody, toCreatePaymentLink, toOpenPaymentLink, toUpdatePaymentLink } from './payment-link.mappers.js';
import type { RestRoute } from './routes.js';

type IdParams = { payment_link_id: string };

/**
 * Payment links (environment-scoped): dashboard management with the JWT, and the two public calls
 * of the hosted checkout page. Handlers map the legacy body to a command (payment-link.mappers.ts),
 * call PaymentLinkService and map the result to the legacy view.
 */
export function paymentLinkRoutes(app: App): RestRoute[] {
  const createBody = createPaymentLinkBody(app.config.ORDER_MIN_IDR, app.config.ORDER_MAX_IDR);
  const view = (link: Parameters<typeof paymentLinkView>[0]) => paymentLinkView(link, app.paymentLinks.url(link));
  return [
    {
      method: 'POST',
      url: '/merchant/payment-link',
      auth: 'dashboard',
      limit: 'auth',
      handler: async (ctx, req) => ({
        status: 201,
        message: 'Payment link created',
        data: view(await app.paymentLinks.create(ctx, toCreatePaymentLink(ctx, createBody, req.body))),
      }),
    },
    {
      method: 'GET',
      url: '/merchant/payment-link',
      auth: 'dashboard',
      limit: 'auth',
      handler: async (ctx, req) => {
        const page = await app.paymentLinks.list(ctx, (req.query ?? {}) as { limit?: number; offset?: number });
        return { data: { ...page, items: page.items.map(view) } };
      },
    },
    {
      method: 'GET',
      url: '/merchant/payment-link/:payment_link_id',
      auth: 'dashboard',
      limit: 'auth',
      handler: async (ctx, req) => ({ data: view(await app.paymentLinks.get(ctx, (req.params as IdParams).payment_link_id)) }),
    },
    {
      method: 'PUT',
      url: '/merchant/payment-link',
      auth: 'dashboard',
      limit: 'auth',
      handler: async (ctx, req) => ({ message: 'Payment link updated', data: view(await app.paymentLinks.update(ctx, toUpdatePaymentLink(ctx, req.body))) }),
    },
    {
      method: 'DELETE',
      url: '/merchant/payment-link/:payment_link_id',
      auth: 'dashboard',
      limit: 'auth',
      handler: async (ctx, req) => ({
        message: 'Payment link deactivated',
        data: view(await app.paymentLinks.deactivate(ctx, (req.params as IdParams).payment_link_id)),
      }),
    },
    {
      method: 'POST',
      url: '/order/payment-link',
      auth: 'public',
      limit: 'public',
      handler: async (ctx, req) => {
        const { order, key } = await app.paymentLinks.open(ctx, toOpenPaymentLink(req.body));
        return { status: 201, message: 'Order created', data: { request: orderView(order), expired_at: unix(order.expiresAt), api_key: key } };
      },
    },
    {
      method: 'GET',
      url: '/payment-links/:payment_link_id/validate',
      auth: 'public',
      limit: 'public',
      handler: async (ctx, req) => ({ data: paymentLinkValidationView(await app.paymentLinks.validate(ctx, (req.params as IdParams).payment_link_id)) }),
    },
  ];
}
