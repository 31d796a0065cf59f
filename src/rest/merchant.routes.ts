import type { App } from '../app.js';
import { merchantView } from './merchant.views.js';
import type { RestRoute } from './routes.js';

/** Environment-scoped merchant routes (header `api-key`). */
export function merchantRoutes(app: App): RestRoute[] {
  return [
    {
      method: 'GET',
      url: '/merchant/me',
      auth: 'apiKey',
      limit: 'merchant',
      // Lets a merchant server check its key and base URL before going live.
      handler: async (ctx) => ({ data: { ...merchantView(await app.merchants.mine(ctx)), environment: ctx.environment } }),
    },
  ];
}
