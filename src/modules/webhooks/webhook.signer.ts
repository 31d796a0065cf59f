import { hmacSha256Hex, safeEqual } from '../../common/crypto.js';

/** Header names (spec "Webhook signature"; the operator's name replaced by a neutral word). */
export const WEBHOOK_HEADERS = {
  signature: 'X-Service-Signature',
  event: 'X-Service-Event',
  idempotencyKey: 'X-Service-Idempotency-Key',
  deliveryId: 'X-Service-Delivery-Id',
} as const;

/** `sha256=<hex HMAC-SHA256 of the raw body keyed with the merchant's API key>`. */
export function signWebhook(apiKey: string, rawBody: string | Buffer): string {
  return `sha256=${hmacSha256Hex(apiKey, rawBody)}`;
}

/** What a receiver does (docs/webhooks.md "Receiving: verify the raw body, then de-duplicate"): recompute over the exact raw bytes, compare in constant time. */
export function verifyWebhook(apiKey: string, rawBody: string | Buffer, header: string | undefined): boolean {
  return typeof header === 'string' && safeEqual(signWebhook(apiKey, rawBody), header);
}
