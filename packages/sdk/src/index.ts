export { GatewayClient, GatewayError, createGatewayClient } from './client';
export type {
  CreateOrderInput,
  CreateQrInput,
  CreatedOrder,
  Deposit,
  GatewayClientOptions,
  LockRateInput,
  Merchant,
  Network,
  OrderDetails,
  RateQuote,
  TokenList,
} from './client';
export { retryAfterMs, retryingFetch, type RetryOptions } from './retry';
export {
  WEBHOOK_SCHEMES,
  WebhookVerificationError,
  hmacSha256Scheme,
  standardWebhooksScheme,
  verifyWebhook,
  type VerifiedWebhook,
  type WebhookBody,
  type WebhookScheme,
  type WebhookSecrets,
} from './webhooks';
export type { components, paths } from './openapi';
