import type { App } from '../app.js';
import type { RestRoute } from './routes.js';
import { settlementWalletView, toListSettlementWallets, toSetSettlementWallet } from './settlement-wallet.mappers.js';

/**
 * Settlement wallets (environment-scoped, dashboard JWT): where paid deposits are swept, per network
 * (docs/api.md "Settlement wallets"; docs/security.md "Settlement addresses").
 */
export function settlementWalletRoutes(app: App): RestRoute[] {
  return [
    {
      method: 'GET',
      url: '/merchant/settlement-wallets',
      auth: 'dashboard',
      limit: 'auth',
      handler: async (ctx, req) => ({ data: (await app.settlementWallets.list(ctx, toListSettlementWallets(ctx, req.params))).map(settlementWalletView) }),
    },
    {
      method: 'GET',
      url: '/merchant/settlement-wallets/:network',
      auth: 'dashboard',
      limit: 'auth',
      handler: async (ctx, req) => ({ data: settlementWalletView((await app.settlementWallets.list(ctx, toListSettlementWallets(ctx, req.params)))[0]!) }),
    },
    {
      method: 'PUT',
      url: '/merchant/settlement-wallets/:network',
      auth: 'dashboard',
      limit: 'auth',
      handler: async (ctx, req) => {
        const { state, changed } = await app.settlementWallets.set(ctx, toSetSettlementWallet(ctx, req.params, req.body));
        return { message: changed ? 'Settlement wallet updated' : 'Settlement wallet unchanged', data: { changed, ...settlementWalletView(state) } };
      },
    },
  ];
}
