import type { EntityManager } from '@mikro-orm/postgresql';
import type { Environment } from '../../common/environment.js';
import type { WebhookEventKind } from './webhook.payload.js';
import { date, json, ms } from './webhook.sql.js';
import type { AttemptOutcome, WebhookDeliveryState } from './webhook.transitions.js';

/**
 * How much of a receiver's answer (or of an attempt's error) a merchant is shown. Stored excerpts are
 * longer (webhook.sender.ts) for operators; what leaves through the dashboard is capped and cleaned,
 * because the URL may point at a service the merchant could not otherwise read (private URLs allowed).
 */
export const MERCHANT_EXCERPT_BYTES = 512;

// C0/C1 controls, and the invisible format characters that reorder or hide text (bidi overrides, zero-width).
const UNSAFE_CHARS = /[\p{Cc}\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/gu;

/** Cut to MERCHANT_EXCERPT_BYTES as bytes (a cut character becomes U+FFFD), line breaks and tabs as spaces, other controls removed. */
export function merchantExcerpt(text: string | null): string | null {
  if (text === null) return null;
  const cut = Buffer.from(text, 'utf8').subarray(0, MERCHANT_EXCERPT_BYTES).toString('utf8');
  return cut.replace(/[\t\n\r]+/g, ' ').replace(UNSAFE_CHARS, '');
}

export interface WebhookAttemptView {
  series: number;
  number: number;
  url: string;
  startedAt: Date;
  latencyMs: number | null;
  httpStatus: number | null;
  error: string | null;
  responseBody: string | null;
  outcome: AttemptOutcome;
}

export interface WebhookDeliveryView {
  /** Keyset position of this row in the log (for `after`). */
  cursor: string;
  id: string;
  environment: Environment;
  event: string;
  state: WebhookDeliveryState;
  orderNo: string | null;
  idempotencyKey: string;
  url: string;
  series: number;
  attempts: number;
  maxAttempts: number;
  nextAttemptAt: Date | null;
  lastStatus: number | null;
  lastError: string | null;
  deliveredAt: Date | null;
  failedAt: Date | null;
  createdAt: Date;
  payload: string;
  attemptLog: WebhookAttemptView[];
}

/** Delivery rows (deliveries aliased `w`, orders `o`) with their attempts, as the dashboard shows them. */
export async function deliveryViews(em: EntityManager, whereAndOrder: string, params: unknown[]): Promise<WebhookDeliveryView[]> {
  const rows = await em.execute<DeliveryRow[]>(
    `select w.id, w.environment, w.event, w.state, o.order_no, w.idempotency_key, w.url, w.series, w.attempts, w.max_attempts,
            ${ms('w.next_attempt_at')} as next_ms, w.last_status, w.last_error, ${ms('w.delivered_at')} as delivered_ms,
            ${ms('w.failed_at')} as failed_ms, ${ms('w.created_at')} as created_ms, (extract(epoch from w.created_at) * 1000000)::bigint::text as created_us, w.payload
     from webhook_deliveries w left join orders o on o.id = w.order_id
     where ${whereAndOrder}`,
    params,
  );
  if (!rows.length) return [];
  const attempts = await em.execute<AttemptRow[]>(
    `select delivery_id, series, number, url, ${ms('started_at')} as started_ms, latency_ms, http_status, error, response_body, outcome
     from webhook_attempts where delivery_id in (select jsonb_array_elements_text(?::jsonb)::uuid) order by started_at, created_at`,
    [json(rows.map((r) => r.id))],
  );
  const byDelivery = new Map<string, WebhookAttemptView[]>();
  for (const a of attempts) {
    const list = byDelivery.get(a.delivery_id) ?? (byDelivery.set(a.delivery_id, []), byDelivery.get(a.delivery_id)!);
    list.push({
      series: a.series,
      number: a.number,
      url: a.url,
      startedAt: new Date(a.started_ms),
      latencyMs: a.latency_ms,
      httpStatus: a.http_status,
      error: merchantExcerpt(a.error),
      responseBody: merchantExcerpt(a.response_body),
      outcome: a.outcome,
    });
  }
  return rows.map((r) => ({
    cursor: Buffer.from(`${r.created_us}|${r.id}`).toString('base64url'),
    id: r.id,
    environment: r.environment,
    event: r.event,
    state: r.state,
    orderNo: r.order_no,
    idempotencyKey: r.idempotency_key,
    url: r.url,
    series: r.series,
    attempts: r.attempts,
    maxAttempts: r.max_attempts,
    nextAttemptAt: r.state === 'pending' ? date(r.next_ms) : null,
    lastStatus: r.last_status,
    lastError: merchantExcerpt(r.last_error),
    deliveredAt: date(r.delivered_ms),
    failedAt: date(r.failed_ms),
    createdAt: new Date(r.created_ms),
    payload: r.payload,
    attemptLog: byDelivery.get(r.id) ?? [],
  }));
}

interface DeliveryRow {
  id: string;
  environment: Environment;
  event: WebhookEventKind;
  state: WebhookDeliveryState;
  order_no: string | null;
  idempotency_key: string;
  url: string;
  series: number;
  attempts: number;
  max_attempts: number;
  next_ms: number;
  last_status: number | null;
  last_error: string | null;
  delivered_ms: number | null;
  failed_ms: number | null;
  created_ms: number;
  created_us: string;
  payload: string;
}

interface AttemptRow {
  delivery_id: string;
  series: number;
  number: number;
  url: string;
  started_ms: number;
  latency_ms: number | null;
  http_status: number | null;
  error: string | null;
  response_body: string | null;
  outcome: AttemptOutcome;
}
