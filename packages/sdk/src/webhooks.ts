import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Webhook verification. The gateway signs each delivery; a receiver verifies the signature over the
 * exact raw body before parsing it. Schemes are tried by their headers, so a second scheme (e.g.
 * Standard Webhooks' `webhook-id`/`webhook-timestamp`/`webhook-signature`) is one more entry in
 * WEBHOOK_SCHEMES and one more secret in WebhookSecrets; callers' code does not change.
 */

export type Headers = Record<string, string | string[] | undefined> | { get(name: string): string | null };

export interface WebhookSecrets {
  /** The merchant's API key of the order's environment: the key of the `X-Service-Signature` HMAC. */
  apiKey?: string;
}

export interface WebhookScheme {
  name: string;
  /** Whether the delivery carries this scheme's headers. */
  present(h: (name: string) => string | undefined): boolean;
  /** True when the signature is right; false when it is not or the secret for it is missing. */
  verify(rawBody: Buffer, h: (name: string) => string | undefined, secrets: WebhookSecrets): boolean;
}

const safeEqual = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/** `X-Service-Signature: sha256=<hex HMAC-SHA256(raw body, API key)>` (docs/webhooks.md). */
export const hmacSha256Scheme: WebhookScheme = {
  name: 'hmac-sha256',
  present: (h) => h('x-service-signature') !== undefined,
  verify: (raw, h, s) => {
    const got = h('x-service-signature');
    if (!s.apiKey || !got) return false;
    return safeEqual(`sha256=${createHmac('sha256', s.apiKey).update(raw).digest('hex')}`, got.trim());
  },
};

export const WEBHOOK_SCHEMES: WebhookScheme[] = [hmacSha256Scheme];

export interface VerifiedWebhook<T = WebhookBody> {
  scheme: string;
  event: T;
}

/** The body every webhook has (schema/openapi.json `webhooks`); `data` depends on the event. */
export interface WebhookBody {
  version: string;
  id: string;
  event: string;
  created_at: number;
  idempotency_key: string;
  data: Record<string, unknown> & { order_no?: string; status?: string };
}

export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
}

function headerReader(headers: Headers): (name: string) => string | undefined {
  if (typeof (headers as { get?: unknown }).get === 'function') return (n) => (headers as { get(n: string): string | null }).get(n) ?? undefined;
  const lower = new Map(Object.entries(headers as Record<string, string | string[] | undefined>).map(([k, v]) => [k.toLowerCase(), Array.isArray(v) ? v[0] : v]));
  return (n) => lower.get(n.toLowerCase());
}

/**
 * Verifies a delivery and parses its body. `rawBody` must be the bytes as received (not re-serialised
 * JSON). Throws WebhookVerificationError when no known scheme's headers are present or a present
 * scheme's signature does not verify.
 */
export function verifyWebhook<T = WebhookBody>(rawBody: string | Buffer | Uint8Array, headers: Headers, secrets: WebhookSecrets): VerifiedWebhook<T> {
  const raw = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : Buffer.from(rawBody);
  const h = headerReader(headers);
  const present = WEBHOOK_SCHEMES.filter((s) => s.present(h));
  if (present.length === 0) throw new WebhookVerificationError('No webhook signature header');
  const scheme = present.find((s) => s.verify(raw, h, secrets));
  if (!scheme) throw new WebhookVerificationError(`Webhook signature does not verify (${present.map((s) => s.name).join(', ')})`);
  return { scheme: scheme.name, event: JSON.parse(raw.toString('utf8')) as T };
}
