import type { App } from '../app.js';
import type { RestRoute } from './routes.js';

/** The sandbox faucet and the network list (environment-scoped, no authentication). */
export function faucetRoutes(app: App): RestRoute[] {
  return [
    {
      method: 'POST',
      url: '/faucet',
      auth: 'public',
      limit: 'public',
      handler: async (ctx, req) => ({ data: await app.faucet.request(ctx, req.body) }),
    },
    {
      method: 'GET',
      url: '/networks',
      auth: 'public',
      limit: 'public',
      handler: async (ctx) => ({ data: { networks: await app.networks.list(ctx.em, app.tokens, ctx.environment!) } }),
    },
  ];
}
