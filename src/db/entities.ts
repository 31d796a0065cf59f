import { ApiKey } from '../modules/merchants/api-key.entity.js';
import { DashboardUser } from '../modules/merchants/dashboard-user.entity.js';
import { Merchant } from '../modules/merchants/merchant.entity.js';
import { RefreshToken, Session } from '../modules/merchants/session.entity.js';
import { Deposit } from '../modules/deposits/deposit.entity.js';
import { MerchantWallet } from '../modules/deposits/wallet.entity.js';
import { Order } from '../modules/orders/order.entity.js';
import { OrderEvent } from '../modules/orders/order-event.entity.js';
import { PaymentLink } from '../modules/payment-links/payment-link.entity.js';
import { Payment } from '../modules/payments/payment.entity.js';
import { UnattributedReceipt } from '../modules/payments/unattributed-receipt.entity.js';
import { Quote } from '../modules/quotes/quote.entity.js';
import { Token } from '../modules/tokens/token.entity.js';
import { WebhookAttempt } from '../modules/webhooks/webhook-attempt.entity.js';
import { WebhookDelivery } from '../modules/webhooks/webhook-delivery.entity.js';
import { Membership } from '../modules/teams/membership.entity.js';

/** Every MikroORM entity. The schema itself is owned by `migrations/`; a test checks they agree. */
export const entities = [
  Merchant,
  DashboardUser,
  Membership,
  Session,
  RefreshToken,
  ApiKey,
  Token,
  Order,
  Quote,
  MerchantWallet,
  Deposit,
  PaymentLink,
  OrderEvent,
  Payment,
  UnattributedReceipt,
  WebhookDelivery,
  WebhookAttempt,
];
