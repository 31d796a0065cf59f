import { createHmac } from 'node:crypto';
import { hmacSha256Hex, safeEqual } from '../../common/crypto.js';

/** Header names (spec "Webhook signature"; the operator's name replaced by a neutral word). */
export const WEBHOOK_HEADERS = {
  signature: 'X-Service-Signature',
  event: 'X-Service-Event',
  idempotencyKey: 'X-Service-Idempotency-Key',
  deliveryId: 'X-Service-Delivery-Id',
} as const;

/**
 * Standard Webhooks headers (https://www.standardwebhooks.com), sent beside the three above: a receiver
 * verifies them with any Standard Webhooks library and rejects calls whose timestamp is too old (replays).
 */
export const STANDARD_HEADERS = {
  id: 'webhook-id',
  timestamp: 'webhook-timestamp',
  signature: 'webhook-signature',
} as const;

/** Secrets are shown and stored as `whsec_<base64 of 32 random bytes>`, the format Standard Webhooks libraries take. */
export const SECRET_PREFIX = 'whsec_';

/**
 * `webhook-signature`: `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<raw body>">` for each live secret,
 * space-separated (newest first): during a rotation's overlap a receiver holding either secret verifies.
 */
export function standardSignature(secrets: readonly string[], id: string, timestamp: number, rawBody: string | Buffer): string {
  return secrets
    .map((secret) => {
      const key = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
      const mac = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(rawBody).digest('base64');
      return `v1,${mac}`;
    })
    .join(' ');
}

/** `sha256=<hex HMAC-SHA256 of the raw body keyed with the merchant's API key>`. */
export function signWebhook(apiKey: string, rawBody: string | Buffer): string {
  return `sha256=${hmacSha256Hex(apiKey, rawBody)}`;
}

/** What a receiver does (docs/webhooks.md "Receiving: verify the raw body, then de-duplicate"): recompute over the exact raw bytes, compare in constant time. */
export function verifyWebhook(apiKey: string, rawBody: string | Buffer, header: string | undefined): boolean {
  return typeof header === 'string' && safeEqual(signWebhook(apiKey, rawBody), header);
}
