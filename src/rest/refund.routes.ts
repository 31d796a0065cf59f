import type { App } from '../app.js';
import { refundView, toCreateRefund, toListRefunds, toRefundId } from './refund.mappers.js';
import type { RestRoute } from './routes.js';

/**
 * Refunds for merchants' servers (environment-scoped, legacy style like the order routes; docs/refunds.md
 * "API"): create, get, list, cancel, a new claim link. Approval is a dashboard member's, re-authenticated (GraphQL
 * `approveRefund`), never an API key's.
 */
export function refundRoutes(app: App): RestRoute[] {
  return [
    {
      method: 'POST',
      url: '/merchant/fiat/refund',
      auth: 'merchant',
      limit: 'merchant',
      handler: async (ctx, req) => {
        const { orderNo, command } = toCreateRefund(ctx, req.body);
        const order = await app.orders.getByNo(ctx, { orderNo });
        const created = await app.refunds.create(ctx, { ...command, orderId: order.id });
        return { status: 201, message: 'Refund requested', data: { request: refundView(created.refund), claim_url: created.claimUrl } };
      },
    },
    {
      method: 'POST',
      url: '/merchant/fiat/getRefund',
      auth: 'merchant',
      limit: 'merchant',
      handler: async (ctx, req) => {
        const r = await app.refunds.get(ctx, toRefundId(ctx, req.body));
        return { message: `Refund found (status ${r.status})`, data: { request: refundView(r) } };
      },
    },
    {
      method: 'GET',
      url: '/merchant/fiat/refunds',
      auth: 'merchant',
      limit: 'merchant',
      handler: async (ctx, req) => {
        const page = await app.refunds.list(ctx, toListRefunds(ctx, req.query));
        return { data: { ...page, items: page.items.map(refundView) } };
      },
    },
    {
      method: 'POST',
      url: '/merchant/fiat/cancelRefund',
      auth: 'merchant',
      limit: 'merchant',
      handler: async (ctx, req) => ({ message: 'Refund cancelled', data: { request: refundView(await app.refunds.cancel(ctx, toRefundId(ctx, req.body))) } }),
    },
    {
      method: 'POST',
      url: '/merchant/fiat/renewRefundClaimLink',
      auth: 'merchant',
      limit: 'merchant',
      handler: async (ctx, req) => {
        const c = await app.refunds.renewClaimLink(ctx, toRefundId(ctx, req.body));
        return { message: 'New claim link issued', data: { request: refundView(c.refund), claim_url: c.claimUrl } };
      },
    },
  ];
}
