/**
 * Webhook delivery states and the only moves between them. This table is the documentation (docs/order-lifecycle.md
 * "Webhook deliveries", generated from it); every move is one conditional UPDATE in WebhookService, so two workers can
 * never both make the same move.
 *
 * pending    → sending    claimed: due, not leased, endpoint below its concurrency limit (attempts + 1)
 * sending    → delivered  the endpoint answered 2xx (final: never sent again)
 * sending    → pending    a retryable failure (network error, timeout, 408, 429, 5xx) with attempts left
 * sending    → failed     a permanent failure (other 3xx/4xx) or no attempts left
 * sending    → pending    the sweeper: the lease expired with no outcome recorded (worker crashed)
 * delivered  → pending    redeliverWebhook: a new attempt series, same body and idempotency key
 * failed     → pending    redeliverWebhook (as above)
 */
export const WEBHOOK_DELIVERY_STATES = ['pending', 'sending', 'delivered', 'failed'] as const;
export type WebhookDeliveryState = (typeof WEBHOOK_DELIVERY_STATES)[number];

export const WEBHOOK_DELIVERY_TRANSITIONS: Record<WebhookDeliveryState, readonly WebhookDeliveryState[]> = {
  pending: ['sending'],
  sending: ['delivered', 'pending', 'failed'],
  delivered: ['pending'],
  failed: ['pending'],
};

/** What one attempt led to (the delivery log's `outcome`). `lost`: the sweeper found an expired lease. */
export type AttemptOutcome = 'delivered' | 'retry' | 'failed' | 'lost';

/** The HTTP result of one attempt: a status, or an error before any status (DNS, connect, timeout, refused address). */
export interface AttemptResult {
  status: number | null;
  error: string | null;
  /** Seconds from a `Retry-After` header (429/503), when present and sane. */
  retryAfterS?: number | null;
}

/**
 * Classifies one attempt (BTCPay's rule): 2xx delivered; network errors, timeouts, 408, 429 and 5xx
 * are worth retrying; anything else (3xx — redirects are never followed — and other 4xx) means the
 * receiver refused this request and will refuse it again, so the delivery fails at once.
 */
export function classifyAttempt(r: AttemptResult): 'delivered' | 'retry' | 'failed' {
  if (r.status === null) return 'retry';
  if (r.status >= 200 && r.status < 300) return 'delivered';
  if (r.status === 408 || r.status === 429 || r.status >= 500) return 'retry';
  return 'failed';
}
