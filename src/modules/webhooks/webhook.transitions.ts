/**
 * Webhook delivery states and the only moves between them. This table is the documentation (docs/order-lifecycle.md
 * "Webhook deliveries"; a doc generator renders WEBHOOK_DELIVERY_MOVES). Every status write of a
 * delivery is a conditional UPDATE whose SET and WHERE come from `deliveryMove` below, which refuses a
 * move that is not listed here — so the SQL cannot drift from the table — and the guard in the WHERE
 * means two workers can never both make the same move.
 *
 * pending    → sending    claimed: due, not leased, endpoint below its concurrency limit (attempts + 1)
 * pending    → failed     the merchant cleared notification_url: nothing is sent to a URL they removed
 * sending    → delivered  the endpoint answered 2xx (final: never sent again)
 * sending    → pending    a retryable failure (network error, timeout, 408, 429, 5xx) with attempts left
 * sending    → failed     a permanent failure (other 3xx/4xx) or no attempts left
 * sending    → pending    lease requeue: the lease expired with no outcome recorded (worker crashed)
 * sending    → failed     lease requeue, when that lost attempt was the last one
 * delivered  → pending    redeliverWebhook: a new attempt series, same body and idempotency key
 * failed     → pending    redeliverWebhook (as above)
 *
 * A delivery is born `pending` (the outbox step) or `sending` (a test send, claimed by its own insert).
 */
export const WEBHOOK_DELIVERY_STATES = ['pending', 'sending', 'delivered', 'failed'] as const;
export type WebhookDeliveryState = (typeof WEBHOOK_DELIVERY_STATES)[number];

export interface WebhookDeliveryMove {
  from: WebhookDeliveryState;
  to: WebhookDeliveryState;
  /** Who makes the move and why (rendered into the docs). */
  when: string;
}

/** The table, one row per move (the header above says the same, for readers of this file). */
export const WEBHOOK_DELIVERY_MOVES: readonly WebhookDeliveryMove[] = [
  { from: 'pending', to: 'sending', when: 'claimed by a delivery worker: due, not leased, endpoint below its concurrency limit (attempts + 1)' },
  { from: 'pending', to: 'failed', when: 'the merchant cleared notification_url: nothing is sent to a URL they removed' },
  { from: 'sending', to: 'delivered', when: 'the endpoint answered 2xx (final: never sent again unless redelivered)' },
  {
    from: 'sending',
    to: 'pending',
    when: 'a retryable failure (network error, timeout, 408, 429, 5xx) with attempts left, or the lease requeue found the lease expired with no outcome recorded',
  },
  { from: 'sending', to: 'failed', when: 'a permanent failure (other 3xx/4xx), or no attempts left (after an answer or a lost attempt)' },
  { from: 'delivered', to: 'pending', when: 'redeliverWebhook: a new attempt series, same body and idempotency key' },
  { from: 'failed', to: 'pending', when: 'redeliverWebhook: a new attempt series, same body and idempotency key' },
];

/** States a delivery row is inserted in, and by whom. */
export const WEBHOOK_DELIVERY_INITIAL_STATES: readonly { state: WebhookDeliveryState; when: string }[] = [
  { state: 'pending', when: 'the outbox step turned an order event into a delivery' },
  { state: 'sending', when: 'sendTestWebhook: inserted already claimed, so no worker picks it up meanwhile' },
];

export const WEBHOOK_DELIVERY_TRANSITIONS: Readonly<Record<WebhookDeliveryState, readonly WebhookDeliveryState[]>> = Object.fromEntries(
  WEBHOOK_DELIVERY_STATES.map((s) => [s, [...new Set(WEBHOOK_DELIVERY_MOVES.filter((m) => m.from === s).map((m) => m.to))]]),
) as unknown as Record<WebhookDeliveryState, readonly WebhookDeliveryState[]>;

export const canMoveDelivery = (from: WebhookDeliveryState, to: WebhookDeliveryState): boolean => WEBHOOK_DELIVERY_TRANSITIONS[from].includes(to);

/** A status write that the table does not allow: a programming error, never a request's fault. */
export class IllegalDeliveryTransition extends Error {
  override readonly name = 'IllegalDeliveryTransition';
  constructor(
    readonly from: WebhookDeliveryState,
    readonly to: WebhookDeliveryState,
  ) {
    super(`webhook delivery move ${from} → ${to} is not in the transition table (webhook.transitions.ts)`);
  }
}

/** The target of a move: one state, or a CASE over SQL conditions (first match wins, then `else`). */
export type DeliveryTarget =
  WebhookDeliveryState | { cases: readonly (readonly [condition: string, state: WebhookDeliveryState])[]; else: WebhookDeliveryState };

export interface DeliveryMoveSql {
  /** `state = …` for the UPDATE's SET list. */
  set: string;
  /** `<alias>.state in (…)` for the UPDATE's WHERE: only rows in a listed source state move. */
  where: string;
  /** Every state the move can write. */
  targets: readonly WebhookDeliveryState[];
}

const literal = (s: WebhookDeliveryState) => `'${s}'`;

/**
 * The SQL of one kind of status write, from `from` to `to`: every (source, target) pair is checked
 * against the table first and an unlisted one throws IllegalDeliveryTransition. The services build
 * these once, when their module loads, so an impossible move stops the process at start instead of
 * writing a state the table does not know.
 */
export function deliveryMove(from: readonly WebhookDeliveryState[], to: DeliveryTarget, alias?: string): DeliveryMoveSql {
  const targets = typeof to === 'string' ? [to] : [...new Set([...to.cases.map(([, s]) => s), to.else])];
  if (!from.length) throw new Error('deliveryMove needs at least one source state');
  for (const f of from) for (const t of targets) if (!canMoveDelivery(f, t)) throw new IllegalDeliveryTransition(f, t);
  const value =
    typeof to === 'string' ? literal(to) : `case ${to.cases.map(([cond, s]) => `when ${cond} then ${literal(s)}`).join(' ')} else ${literal(to.else)} end`;
  const column = alias ? `${alias}.state` : 'state';
  return { set: `state = ${value}`, where: `${column} in (${from.map(literal).join(', ')})`, targets };
}

/** The state literal for a delivery's INSERT, after checking it is one a delivery may be born in. */
export function deliveryBirth(state: WebhookDeliveryState): string {
  if (!WEBHOOK_DELIVERY_INITIAL_STATES.some((i) => i.state === state))
    throw new Error(`a webhook delivery is never inserted as ${state} (webhook.transitions.ts)`);
  return literal(state);
}

/** What one attempt led to (the delivery log's `outcome`). `lost`: the lease requeue found an expired lease. */
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
