import type { App } from '../app.js';
import { exportRoutes } from './export.routes.js';
import { faucetRoutes } from './faucet.routes.js';
import { merchantRoutes } from './merchant.routes.js';
import { paymentLinkRoutes } from './payment-link.routes.js';
import { paymentRoutes } from './payment.routes.js';
import type { RestRoute } from './routes.js';
import { refundRoutes } from './refund.routes.js';
import { settlementWalletRoutes } from './settlement-wallet.routes.js';
import { sweepRoutes } from './sweep.routes.js';

/** Every environment-scoped REST route (mounted under `/api/v2/testnet` and `/api/v2/mainnet`); the OpenAPI document is generated from the same list. */
export function environmentRoutes(app: App): RestRoute[] {
  return [
    ...merchantRoutes(app),
    ...paymentRoutes(app),
    ...refundRoutes(app),
    ...paymentLinkRoutes(app),
    ...settlementWalletRoutes(app),
    ...sweepRoutes(app),
    ...faucetRoutes(app),
    ...exportRoutes(app),
  ];
}
