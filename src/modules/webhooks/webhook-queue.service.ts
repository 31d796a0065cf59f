import type { EntityManager } from '@mikro-orm/postgresql';
import type { Environment } from '../../common/environment.js';
import type { ApiKeyService } from '../merchants/api-key.service.js';
import type { RetrySchedule } from './webhook.schedule.js';
import type { WebhookResponse, WebhookSender } from './webhook.sender.js';
import type { SealedSecret, WebhookSecretService } from './webhook-secret.service.js';
import { signWebhook, standardSignature, STANDARD_HEADERS, WEBHOOK_HEADERS } from './webhook.signer.js';
import { endpointOf, json, notifyDeliveries } from './webhook.sql.js';
import { classifyAttempt, deliveryBirth, deliveryMove, type AttemptOutcome } from './webhook.transitions.js';

export interface WebhookQueueOptions {
  timeoutMs: number;
  schedule: RetrySchedule;
}

/** A delivery whose lease this process holds (claimed `pending → sending`). */
export interface ClaimedDelivery {
  id: string;
  merchantId: string;
  environment: Environment;
  kind: string;
  idempotencyKey: string;
  url: string;
  endpoint: string;
  payload: string;
  series: number;
  /** This attempt's number within the series (1-based). */
  attempt: number;
  maxAttempts: number;
  lockToken: string;
  /** The environment's Standard Webhooks secrets that sign now (live first; a rotated one during its overlap). */
  secrets: string[];
  /** The merchant's live API key for the environment, read at claim time (so a rotation applies to the next send). */
  signingKey: string | null;
}

/** One attempt's outcome, ready to be recorded. */
export interface AttemptRecord {
  delivery: ClaimedDelivery;
  response: WebhookResponse;
  outcome: Exclude<AttemptOutcome, 'lost'>;
  /** Wait before the next attempt (outcome 'retry'). */
  delayMs: number | null;
}

/** A delivery to insert already claimed (a test send): nobody else can pick it up meanwhile. */
export interface ClaimedInsert {
  id: string;
  merchantId: string;
  environment: Environment;
  kind: string;
  idempotencyKey: string;
  url: string;
  payload: string;
}

// The status writes of this file, checked against the transition table when the module loads.
const CLAIM = deliveryMove(['pending'], 'sending', 'w');
const RECORD = deliveryMove(
  ['sending'],
  {
    cases: [
      [`v.outcome = 'delivered'`, 'delivered'],
      [`v.outcome = 'retry'`, 'pending'],
    ],
    else: 'failed',
  },
  'd',
);
const SWEEP = deliveryMove(['sending'], { cases: [['d.attempts >= d.max_attempts', 'failed']], else: 'pending' }, 'd');
const BORN_CLAIMED = deliveryBirth('sending');

// What a claim (or a test send, which claims its own new row) returns.
const CLAIM_RETURNING = `w.id, w.merchant_id, w.environment, w.event, w.idempotency_key, w.url, w.endpoint, w.payload, w.series, w.attempts, w.max_attempts, w.lock_token,
  (select json_build_object('id', k.id, 'c', k.key_ciphertext) from api_keys k where k.merchant_id = w.merchant_id and k.environment = w.environment and k.revoked_at is null) as signing_key,
  (select coalesce(json_agg(json_build_object('id', s.id, 'c', s.secret_ciphertext) order by s.retires_at is null desc, s.created_at desc), '[]'::json)
     from webhook_secrets s where s.merchant_id = w.merchant_id and s.environment = w.environment and (s.retires_at is null or s.retires_at > now())) as secrets`;

interface ClaimRow {
  id: string;
  merchant_id: string;
  environment: Environment;
  event: string;
  idempotency_key: string;
  url: string;
  endpoint: string;
  payload: string;
  series: number;
  attempts: number;
  max_attempts: number;
  lock_token: string;
  signing_key: { id: string; c: string } | null;
  secrets: SealedSecret[];
}

/**
 * The delivery queue of the worker processes: claim (a lease) → attempt (no transaction open) →
 * record, and the lease requeue for leases whose worker died. Every state change is one conditional UPDATE
 * built by `deliveryMove` (webhook.transitions.ts); no transaction is held across an HTTP call.
 */
export class WebhookQueueService {
  /** The lease of a claim: covers the attempt's timeout, recording, and slack. */
  readonly leaseMs: number;

  constructor(
    private readonly apiKeys: ApiKeyService,
    private readonly secrets: WebhookSecretService,
    private readonly sender: WebhookSender,
    private readonly opts: WebhookQueueOptions,
  ) {
    this.leaseMs = opts.timeoutMs * 2 + 2000;
  }

  get schedule(): RetrySchedule {
    return this.opts.schedule;
  }

  /** Drops the sender's keep-alive connections. */
  close(): void {
    this.sender.close();
  }

  /**
   * Claims up to `limit` due deliveries (`pending → sending`, attempts + 1, a lease of `leaseMs`),
   * oldest due first, at most `perEndpoint − inflight[endpoint]` per endpoint. The conditional UPDATE
   * over `FOR UPDATE SKIP LOCKED` rows is what keeps a delivery in flight at most once across workers.
   */
  async claim(em: EntityManager, opts: { limit: number; perEndpoint: number; inflight: Record<string, number> }): Promise<ClaimedDelivery[]> {
    if (opts.limit <= 0) return [];
    const rows = await em.execute<ClaimRow[]>(
      // Endpoints with pending work, by a skip scan of the (endpoint, next_attempt_at) index; then per
      // endpoint its oldest due rows up to its free slots; then the oldest of those overall, locked.
      `with recursive eps(endpoint) as (
         (select endpoint from webhook_deliveries where state = 'pending' order by endpoint limit 1)
         union all
         select (select d.endpoint from webhook_deliveries d where d.state = 'pending' and d.endpoint > eps.endpoint order by d.endpoint limit 1)
         from eps where eps.endpoint is not null
       ), cand as (
         select c.id, c.next_attempt_at from eps cross join lateral (
           select d.id, d.next_attempt_at from webhook_deliveries d
           where d.endpoint = eps.endpoint and d.state = 'pending' and d.next_attempt_at <= now()
           order by d.next_attempt_at
           limit greatest(${Number(opts.perEndpoint)} - coalesce((?::jsonb ->> eps.endpoint)::int, 0), 0)
         ) c where eps.endpoint is not null
       ), pick as (
         select d.id from webhook_deliveries d join cand on cand.id = d.id
         where d.state = 'pending' and d.next_attempt_at <= now()
         order by cand.next_attempt_at
         limit ${Number(opts.limit)}
         for update of d skip locked
       )
       update webhook_deliveries w
       set ${CLAIM.set}, attempts = w.attempts + 1, locked_at = now(), locked_until = now() + make_interval(secs => ${this.leaseMs / 1000}),
           lock_token = gen_random_uuid(), updated_at = now()
       from pick where w.id = pick.id and ${CLAIM.where}
       returning ${CLAIM_RETURNING}`,
      [json(opts.inflight)],
    );
    return this.toClaimed(em, rows);
  }

  /** Inserts a delivery already claimed by this process (attempt 1 of 1, our lease): for test sends. */
  async insertClaimed(em: EntityManager, d: ClaimedInsert): Promise<ClaimedDelivery> {
    const [row] = await em.execute<ClaimRow[]>(
      `insert into webhook_deliveries as w (id, merchant_id, environment, event, idempotency_key, url, endpoint, payload, max_attempts, state, attempts, locked_at, locked_until, lock_token)
       values (?, ?, ?, ?, ?, ?, ?, ?, 1, ${BORN_CLAIMED}, 1, now(), now() + make_interval(secs => ${this.leaseMs / 1000}), gen_random_uuid())
       returning ${CLAIM_RETURNING}`,
      [d.id, d.merchantId, d.environment, d.kind, d.idempotencyKey, d.url, endpointOf(d.url), d.payload],
    );
    return (await this.toClaimed(em, [row!]))[0]!;
  }

  /**
   * Opens each claimed row's keys. An environment that has never signed a delivery has no Standard
   * Webhooks secret yet: it is made here, once per merchant and environment of the batch.
   */
  private async toClaimed(em: EntityManager, rows: ClaimRow[]): Promise<ClaimedDelivery[]> {
    const made = new Map<string, Promise<string[]>>();
    return Promise.all(
      rows.map(async (r) => {
        let secrets = this.secrets.open(r.secrets);
        if (!secrets.length) {
          const key = `${r.merchant_id}:${r.environment}`;
          if (!made.has(key)) made.set(key, this.secrets.signing(em, r.merchant_id, r.environment));
          secrets = await made.get(key)!;
        }
        return this.claimedOf(r, secrets);
      }),
    );
  }

  private claimedOf(r: ClaimRow, secrets: string[]): ClaimedDelivery {
    let signingKey: string | null = null;
    if (r.signing_key) signingKey = this.apiKeys.openKey(r.signing_key.id, r.signing_key.c);
    return {
      id: r.id,
      merchantId: r.merchant_id,
      environment: r.environment,
      kind: r.event,
      idempotencyKey: r.idempotency_key,
      url: r.url,
      endpoint: r.endpoint,
      payload: r.payload,
      series: r.series,
      attempt: r.attempts,
      maxAttempts: r.max_attempts,
      lockToken: r.lock_token,
      secrets,
      signingKey,
    };
  }

  /** Signs and sends one claimed delivery and decides what happens next. Never throws; holds no transaction. */
  async attempt(d: ClaimedDelivery): Promise<AttemptRecord> {
    const response: WebhookResponse = d.signingKey
      ? await this.sender.send({
          url: d.url,
          body: d.payload,
          headers: {
            [WEBHOOK_HEADERS.signature]: signWebhook(d.signingKey, d.payload),
            [WEBHOOK_HEADERS.event]: d.kind,
            [WEBHOOK_HEADERS.idempotencyKey]: d.idempotencyKey,
            [WEBHOOK_HEADERS.deliveryId]: d.id,
            ...this.standardHeaders(d),
          },
        })
      : { status: null, error: 'the merchant has no live API key to sign with', retryAfterS: null, responseBody: null, startedAt: new Date(), latencyMs: 0 };
    let outcome = classifyAttempt(response);
    let delayMs: number | null = null;
    if (outcome === 'retry') {
      delayMs = this.opts.schedule.nextDelayMs(d.attempt, d.maxAttempts, response.retryAfterS);
      if (delayMs === null) outcome = 'failed';
    }
    return { delivery: d, response, outcome, delayMs };
  }

  /** `webhook-id` is the delivery (the same on every retry and redelivery, for receivers' de-duplication); the timestamp is this attempt's. */
  private standardHeaders(d: ClaimedDelivery): Record<string, string> {
    const timestamp = Math.floor(Date.now() / 1000);
    return {
      [STANDARD_HEADERS.id]: d.id,
      [STANDARD_HEADERS.timestamp]: String(timestamp),
      [STANDARD_HEADERS.signature]: standardSignature(d.secrets, d.id, timestamp, d.payload),
    };
  }

  /**
   * Records attempts in one statement: the delivery moves on (`sending → delivered | pending | failed`)
   * only if its lease is still ours (same lock token); the attempt is logged either way (it happened).
   * Returns the ids whose lease had been lost (the lease requeue gave them to another attempt).
   */
  async record(em: EntityManager, records: AttemptRecord[]): Promise<string[]> {
    if (!records.length) return [];
    const rows = records.map((r) => ({
      id: r.delivery.id,
      token: r.delivery.lockToken,
      series: r.delivery.series,
      number: r.delivery.attempt,
      url: r.delivery.url,
      started_at: r.response.startedAt.toISOString(),
      latency_ms: r.response.latencyMs,
      http_status: r.response.status,
      error: r.response.error,
      response_body: r.response.responseBody?.replaceAll('\0', '') ?? null,
      outcome: r.outcome,
      delay_s: r.delayMs === null ? null : r.delayMs / 1000,
    }));
    const kept = await em.execute<{ id: string }[]>(
      `with v as (
         select * from jsonb_to_recordset(?::jsonb) as v(id uuid, token uuid, series int, number int, url text, started_at timestamptz,
           latency_ms int, http_status int, error text, response_body text, outcome text, delay_s float8)
       ), u as (
         update webhook_deliveries d set
           ${RECORD.set},
           next_attempt_at = case when v.outcome = 'retry' then now() + make_interval(secs => v.delay_s) else d.next_attempt_at end,
           locked_at = null, locked_until = null, lock_token = null,
           last_status = v.http_status, last_error = v.error, last_attempt_at = v.started_at,
           delivered_at = case when v.outcome = 'delivered' then now() else d.delivered_at end,
           failed_at = case when v.outcome = 'failed' then now() else null end,
           updated_at = now()
         from v where d.id = v.id and ${RECORD.where} and d.lock_token = v.token
         returning d.id
       ), log as (
         insert into webhook_attempts (id, delivery_id, series, number, url, started_at, latency_ms, http_status, error, response_body, outcome)
         select gen_random_uuid(), v.id, v.series, v.number, v.url, v.started_at, v.latency_ms, v.http_status, v.error, v.response_body, v.outcome from v
       )
       select id from u`,
      [json(rows)],
    );
    const ok = new Set(kept.map((k) => k.id));
    return records.map((r) => r.delivery.id).filter((id) => !ok.has(id));
  }

  /**
   * The lease requeue: leases that expired with no outcome recorded (the worker died between sending and
   * recording, or hung) go back to `pending` — due at once, same body and idempotency key, so the
   * receiver may see the request twice (at-least-once) — or to `failed` when no attempts are left.
   * Each is logged as a `lost` attempt. Returns how many were re-queued or failed.
   */
  async requeueExpiredLeases(em: EntityManager): Promise<number> {
    const rows = await em.execute<{ id: string }[]>(
      `with s as (
         select id, locked_at from webhook_deliveries where state = 'sending' and locked_until < now() for update skip locked
       ), lost as (
         update webhook_deliveries d set
           ${SWEEP.set},
           failed_at = case when d.attempts >= d.max_attempts then now() else null end,
           next_attempt_at = now(), locked_at = null, locked_until = null, lock_token = null,
           last_status = null, last_error = 'no outcome recorded before the lease expired (worker stopped or crashed)', updated_at = now()
         from s where d.id = s.id and ${SWEEP.where}
         returning d.id, d.series, d.attempts, d.url, s.locked_at, d.state
       ), log as (
         insert into webhook_attempts (id, delivery_id, series, number, url, started_at, error, outcome)
         select gen_random_uuid(), id, series, attempts, url, locked_at,
                'no outcome recorded before the lease expired (worker stopped or crashed); ' || case when state = 'failed' then 'no attempts left' else 'retrying with the same idempotency key' end,
                'lost'
         from lost
       )
       select id from lost`,
    );
    if (rows.length) await notifyDeliveries(em);
    return rows.length;
  }
}
