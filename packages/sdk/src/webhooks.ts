import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Webhook verification. The gateway signs each delivery twice: the spec's `X-Service-Signature` (HMAC
 * of the raw body with the API key) and the Standard Webhooks headers (`webhook-id`,
 * `webhook-timestamp`, `webhook-signature`, keyed with the environment's `whsec_…` secret, with a
 * signed timestamp against replays). A receiver verifies over the exact raw body before parsing it.
 * Every scheme whose headers are present and whose secret the caller gave must verify; at least one must.
 */

export type Headers = Record<string, string | string[] | undefined> | { get(name: string): string | null };

export interface WebhookSecrets {
  /** The merchant's API key of the order's environment: the key of the `X-Service-Signature` HMAC. */
  apiKey?: string;
  /** The environment's Standard Webhooks secret (`whsec_…`, GraphQL `webhookSigningSecret`): also rejects replays. */
  webhookSecret?: string;
  /** Standard Webhooks: how far `webhook-timestamp` may be from this machine's clock (default 300 s). */
  toleranceS?: number;
}

export interface WebhookScheme {
  name: string;
  /** Whether the delivery carries this scheme's headers. */
  present(h: (name: string) => string | undefined): boolean;
  /** Whether the caller gave this scheme's secret. */
  keyed(secrets: WebhookSecrets): boolean;
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
  keyed: (s) => !!s.apiKey,
  verify: (raw, h, s) => {
    const got = h('x-service-signature');
    if (!s.apiKey || !got) return false;
    return safeEqual(`sha256=${createHmac('sha256', s.apiKey).update(raw).digest('hex')}`, got.trim());
  },
};

/**
 * Standard Webhooks (https://www.standardwebhooks.com): `webhook-signature` holds `v1,<base64 HMAC-SHA256
 * of "<id>.<timestamp>.<body>">` for each secret that signs (two during a rotation); the timestamp must be
 * within the tolerance, so a captured call cannot be replayed later.
 */
export const standardWebhooksScheme: WebhookScheme = {
  name: 'standard-webhooks',
  present: (h) => h('webhook-signature') !== undefined && h('webhook-id') !== undefined && h('webhook-timestamp') !== undefined,
  keyed: (s) => !!s.webhookSecret,
  verify: (raw, h, s) => {
    const id = h('webhook-id');
    const ts = h('webhook-timestamp');
    const sigs = h('webhook-signature');
    if (!s.webhookSecret || !id || !ts || !sigs || !/^\d{1,12}$/.test(ts)) return false;
    if (Math.abs(Date.now() / 1000 - Number(ts)) > (s.toleranceS ?? 300)) return false;
    const key = Buffer.from(s.webhookSecret.startsWith('whsec_') ? s.webhookSecret.slice(6) : s.webhookSecret, 'base64');
    const expected = `v1,${createHmac('sha256', key).update(`${id}.${ts}.`).update(raw).digest('base64')}`;
    return sigs.split(' ').some((sig) => safeEqual(expected, sig.trim()));
  },
};

export const WEBHOOK_SCHEMES: WebhookScheme[] = [hmacSha256Scheme, standardWebhooksScheme];

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
  const lower = new Map(
    Object.entries(headers as Record<string, string | string[] | undefined>).map(([k, v]) => [k.toLowerCase(), Array.isArray(v) ? v[0] : v]),
  );
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
  const checked = present.filter((s) => s.keyed(secrets));
  if (checked.length === 0) throw new WebhookVerificationError(`No secret given for the schemes present (${present.map((s) => s.name).join(', ')})`);
  const failed = checked.filter((s) => !s.verify(raw, h, secrets));
  if (failed.length) throw new WebhookVerificationError(`Webhook signature does not verify (${failed.map((s) => s.name).join(', ')})`);
  return { scheme: checked.map((s) => s.name).join('+'), event: JSON.parse(raw.toString('utf8')) as T };
}
