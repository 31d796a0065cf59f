import type { EntityManager } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import type { Caller, RequestContext } from '../../common/context.js';
import type { Environment, Network } from '../../common/environment.js';
import { DomainError } from '../../common/errors.js';
import { parseInput } from '../../common/validation.js';
import type { ApiKeyService } from '../merchants/api-key.service.js';
import { Merchant } from '../merchants/merchant.entity.js';
import type { OrderStatus } from '../orders/order.transitions.js';
import { assertPublicHost, SsrfError, urlHost } from './ssrf.js';
import { deliveryId, listDeliveriesInput, setNotificationUrlInput } from './webhook.inputs.js';
import { buildEventBody, buildTestBody, idempotencyKeyOf, webhookKindOf, type DepositFacts, type EventFacts, type PaymentFacts, type WebhookEventKind } from './webhook.payload.js';
import type { RetrySchedule } from './webhook.schedule.js';
import type { WebhookResponse, WebhookSender } from './webhook.sender.js';
import { signWebhook, WEBHOOK_HEADERS } from './webhook.signer.js';
import { classifyAttempt, type AttemptOutcome, type WebhookDeliveryState } from './webhook.transitions.js';

/** NOTIFY channel that wakes delivery workers: 'outbox' (an order event committed) or 'deliveries' (due work). */
export const WEBHOOKS_CHANNEL = 'webhooks';

export interface WebhookServiceOptions {
  /** WEBHOOK_ALLOW_PRIVATE_URLS resolved: false → URLs must resolve to public addresses (save and send). */
  allowPrivateUrls: boolean;
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

/** A timestamptz as epoch milliseconds (a JS number) from raw SQL. */
const ms = (col: string) => `(extract(epoch from ${col}) * 1000)::float8`;
const date = (v: number | null): Date | null => (v === null ? null : new Date(v));
/** Text lists go to SQL as one JSON parameter: MikroORM inlines parameters and would expand a JS array. */
const json = (v: unknown) => JSON.stringify(v);

/** `scheme://host:port`: the unit of per-endpoint concurrency and of keep-alive pooling. */
export function endpointOf(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.hostname}:${u.port || (u.protocol === 'https:' ? '443' : '80')}`;
  } catch {
    return url;
  }
}

const urlColumn = (env: string) => `case ${env} when 'production' then m.notification_url_production else m.notification_url_sandbox end`;

// What a claim (or a test send, which claims its own new row) returns.
const CLAIM_RETURNING = `w.id, w.merchant_id, w.environment, w.event, w.idempotency_key, w.url, w.endpoint, w.payload, w.series, w.attempts, w.max_attempts, w.lock_token,
  (select json_build_object('id', k.id, 'c', k.key_ciphertext) from api_keys k where k.merchant_id = w.merchant_id and k.environment = w.environment and k.revoked_at is null) as signing_key`;

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
}

/**
 * Webhooks: notification URL settings, the outbox → deliveries step, the claim/attempt/record cycle of
 * delivery workers, the sweeper, and the dashboard's delivery log, redelivery and test sends.
 * Every state change is one conditional UPDATE (webhook.transitions.ts); no transaction is held
 * across an HTTP call.
 */
export class WebhookService {
  /** The lease of a claim: covers the attempt's timeout, recording, and slack. */
  readonly leaseMs: number;

  constructor(
    private readonly apiKeys: ApiKeyService,
    private readonly sender: WebhookSender,
    private readonly opts: WebhookServiceOptions,
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

  // ----------------------------------------------------------------------------------------------
  // Settings

  /**
   * Validates a notification URL for an environment: absolute http(s), https in production, no
   * credentials or fragment, and (unless private URLs are allowed) every address the host resolves
   * to is public. Returns the normalised URL.
   */
  async checkUrl(environment: Environment, raw: string): Promise<string> {
    const reject = (why: string): never => {
      throw new DomainError('NOTIFICATION_URL_REJECTED', `notification_url ${why}`);
    };
    const url = URL.canParse(raw) ? new URL(raw) : reject('must be an absolute http(s) URL');
    if (url.protocol !== 'https:' && url.protocol !== 'http:') reject('must be an http(s) URL');
    if (environment === 'production' && url.protocol !== 'https:') reject('must use https in production');
    if (url.username || url.password) reject('must not contain credentials');
    if (url.hash) reject('must not contain a fragment');
    if (!this.opts.allowPrivateUrls) {
      try {
        await assertPublicHost(urlHost(url));
      } catch (e) {
        if (e instanceof SsrfError) reject(`refused: ${e.message}`);
        throw e;
      }
    }
    return url.toString();
  }

  /** Dashboard: the caller's merchant (owners and admins only). */
  async updateNotificationUrl(ctx: RequestContext, input: unknown): Promise<Merchant> {
    const merchantId = dashboardMerchant(ctx.caller, true);
    return this.setNotificationUrl(ctx.em, merchantId, input);
  }

  /**
   * Sets or clears (null / "") the URL of one environment. Pending deliveries follow the new URL;
   * clearing it fails them (nothing is sent to a URL the merchant removed).
   */
  async setNotificationUrl(em: EntityManager, merchantId: string, input: unknown): Promise<Merchant> {
    const data = parseInput(setNotificationUrlInput, input);
    const url = data.url ? await this.checkUrl(data.environment, data.url) : null;
    return em.transactional(async (tx) => {
      const merchant = await tx.findOne(Merchant, merchantId);
      if (!merchant) throw new DomainError('MERCHANT_NOT_FOUND', 'Merchant not found');
      if (data.environment === 'production') merchant.notificationUrlProduction = url;
      else merchant.notificationUrlSandbox = url;
      await tx.flush();
      if (url) {
        await tx.execute(`update webhook_deliveries set url = ?, endpoint = ?, updated_at = now() where merchant_id = ? and environment = ? and state = 'pending'`, [url, endpointOf(url), merchantId, data.environment]);
      } else {
        await tx.execute(
          `update webhook_deliveries set state = 'failed', failed_at = now(), last_error = 'notification_url was removed', updated_at = now()
           where merchant_id = ? and environment = ? and state = 'pending'`,
          [merchantId, data.environment],
        );
      }
      return merchant;
    });
  }

  // ----------------------------------------------------------------------------------------------
  // Outbox → deliveries

  /**
   * Consumes up to `limit` queued order events: each that maps to a webhook kind, for a merchant with a
   * URL for the event's environment, becomes one delivery whose body is built now, from the database.
   * The queue rows are deleted in the same transaction (SKIP LOCKED: several workers share the queue;
   * a crash rolls everything back). Returns how many queue rows were consumed.
   */
  async dispatchOutbox(em: EntityManager, limit = 500): Promise<number> {
    return em.transactional(async (tx) => {
      const queued = await tx.execute<{ event_id: string }[]>(
        `delete from webhook_outbox where event_id in (select event_id from webhook_outbox order by seq limit ${Number(limit)} for update skip locked) returning event_id`,
      );
      if (!queued.length) return 0;
      const events = await tx.execute<EventRow[]>(
        `select e.id, e.seq, e.type, e.from_status, e.to_status, e.reason, ${ms('e.created_at')} as created_ms,
                o.id as order_id, o.order_no, o.merchant_id, o.environment, o.amount, o.currency, o.overpaid,
                ${ms('o.created_at')} as order_created_ms, ${ms('o.expires_at')} as expires_ms, ${ms('o.paid_at')} as paid_ms,
                ${urlColumn('e.environment')} as url
         from order_events e join orders o on o.id = e.order_id join merchants m on m.id = e.merchant_id
         where e.id in (select jsonb_array_elements_text(?::jsonb)::uuid)`,
        [json(queued.map((q) => q.event_id))],
      );
      const wanted = events.flatMap((e) => {
        const kind = webhookKindOf(e.type, e.to_status);
        return kind && e.url ? [{ e, kind, url: e.url }] : [];
      });
      if (!wanted.length) return queued.length;
      const facts = await this.loadFacts(tx, [...new Set(wanted.map((w) => w.e.order_id))]);
      const rows = wanted.map(({ e, kind, url }) => {
        const f: EventFacts = {
          event: { id: e.id, seq: Number(e.seq), type: e.type, fromStatus: e.from_status, toStatus: e.to_status, reason: e.reason ?? {}, createdAt: new Date(e.created_ms) },
          order: {
            id: e.order_id,
            orderNo: e.order_no,
            merchantId: e.merchant_id,
            environment: e.environment,
            amount: BigInt(e.amount),
            currency: e.currency,
            createdAt: new Date(e.order_created_ms),
            expiresAt: new Date(e.expires_ms),
            paidAt: date(e.paid_ms),
            overpaid: e.overpaid,
          },
          ...(facts.get(e.order_id) ?? { deposits: [], payments: [] }),
        };
        const key = idempotencyKeyOf(kind, f);
        return {
          id: randomUUID(),
          merchant_id: e.merchant_id,
          environment: e.environment,
          order_id: e.order_id,
          event_id: e.id,
          event: kind,
          idempotency_key: key,
          url,
          endpoint: endpointOf(url),
          payload: JSON.stringify(buildEventBody(kind, f, key)),
          max_attempts: this.opts.schedule.maxAttempts,
        };
      });
      const inserted = await tx.execute<{ id: string }[]>(
        `insert into webhook_deliveries (id, merchant_id, environment, order_id, event_id, event, idempotency_key, url, endpoint, payload, max_attempts)
         select v.* from jsonb_to_recordset(?::jsonb) as v(id uuid, merchant_id uuid, environment text, order_id uuid, event_id uuid, event text,
           idempotency_key text, url text, endpoint text, payload text, max_attempts int)
         on conflict (event_id) do nothing returning id`,
        [json(rows)],
      );
      if (inserted.length) await tx.execute(`select pg_notify(?, 'deliveries')`, [WEBHOOKS_CHANNEL]);
      return queued.length;
    });
  }

  /** Deposits (with tokens) and live payments of some orders: two queries for the whole batch. */
  private async loadFacts(tx: EntityManager, orderIds: string[]): Promise<Map<string, Pick<EventFacts, 'deposits' | 'payments'>>> {
    const ids = json(orderIds);
    const [deposits, payments] = await Promise.all([
      tx.execute<DepositRow[]>(
        `select d.id, d.order_id, d.address, d.network, d.total_amount, d.amount_received, ${ms('d.created_at')} as created_ms, t.symbol, t.address as token_address, t.decimals
         from deposits d join tokens t on t.id = d.token_id where d.order_id in (select jsonb_array_elements_text(?::jsonb)::uuid)`,
        [ids],
      ),
      tx.execute<PaymentRow[]>(
        `select p.id, p.order_id, p.deposit_id, p.tx_hash, p.log_index, p.amount, p.block_number::text as block_number, p.status, p.late,
                ${ms('p.detected_at')} as detected_ms, ${ms('p.confirmed_at')} as confirmed_ms,
                exists (select 1 from payments q where q.environment = p.environment and q.network = p.network and q.tx_hash = p.tx_hash and q.id <> p.id) as tx_shared
         from payments p where p.order_id in (select jsonb_array_elements_text(?::jsonb)::uuid) and p.status <> 'orphaned'
         order by p.detected_at, p.log_index`,
        [ids],
      ),
    ]);
    const out = new Map<string, Pick<EventFacts, 'deposits' | 'payments'>>();
    const of = (orderId: string) => out.get(orderId) ?? (out.set(orderId, { deposits: [], payments: [] }), out.get(orderId)!);
    for (const d of deposits) {
      of(d.order_id).deposits.push({
        id: d.id,
        address: d.address,
        network: d.network,
        token: { symbol: d.symbol, address: d.token_address, decimals: d.decimals },
        totalAmount: BigInt(d.total_amount),
        amountReceived: BigInt(d.amount_received),
        createdAt: new Date(d.created_ms),
      } satisfies DepositFacts);
    }
    for (const p of payments) {
      of(p.order_id).payments.push({
        id: p.id,
        depositId: p.deposit_id,
        txHash: p.tx_hash,
        logIndex: p.log_index,
        amount: BigInt(p.amount),
        blockNumber: p.block_number,
        status: p.status,
        late: p.late,
        detectedAt: new Date(p.detected_ms),
        confirmedAt: date(p.confirmed_ms),
        txShared: p.tx_shared,
      } satisfies PaymentFacts);
    }
    return out;
  }

  // ----------------------------------------------------------------------------------------------
  // Delivery: claim → attempt (no transaction open) → record

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
       set state = 'sending', attempts = w.attempts + 1, locked_at = now(), locked_until = now() + make_interval(secs => ${this.leaseMs / 1000}),
           lock_token = gen_random_uuid(), updated_at = now()
       from pick where w.id = pick.id and w.state = 'pending'
       returning ${CLAIM_RETURNING}`,
      [json(opts.inflight)],
    );
    return rows.map((r) => this.toClaimed(r));
  }

  private toClaimed(r: ClaimRow): ClaimedDelivery {
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

  /**
   * Records attempts in one statement: the delivery moves on (`sending → delivered | pending | failed`)
   * only if its lease is still ours (same lock token); the attempt is logged either way (it happened).
   * Returns the ids whose lease had been lost (the sweeper gave them to another attempt).
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
           state = case v.outcome when 'delivered' then 'delivered' when 'retry' then 'pending' else 'failed' end,
           next_attempt_at = case when v.outcome = 'retry' then now() + make_interval(secs => v.delay_s) else d.next_attempt_at end,
           locked_at = null, locked_until = null, lock_token = null,
           last_status = v.http_status, last_error = v.error, last_attempt_at = v.started_at,
           delivered_at = case when v.outcome = 'delivered' then now() else d.delivered_at end,
           failed_at = case when v.outcome = 'failed' then now() else null end,
           updated_at = now()
         from v where d.id = v.id and d.state = 'sending' and d.lock_token = v.token
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
   * The sweeper: leases that expired with no outcome recorded (the worker died between sending and
   * recording, or hung) go back to `pending` — due at once, same body and idempotency key, so the
   * receiver may see the request twice (at-least-once) — or to `failed` when no attempts are left.
   * Each is logged as a `lost` attempt. Returns how many were re-queued or failed.
   */
  async sweep(em: EntityManager): Promise<number> {
    const rows = await em.execute<{ id: string }[]>(
      `with s as (
         select id, locked_at from webhook_deliveries where state = 'sending' and locked_until < now() for update skip locked
       ), lost as (
         update webhook_deliveries d set
           state = case when d.attempts >= d.max_attempts then 'failed' else 'pending' end,
           failed_at = case when d.attempts >= d.max_attempts then now() else null end,
           next_attempt_at = now(), locked_at = null, locked_until = null, lock_token = null,
           last_status = null, last_error = 'no outcome recorded before the lease expired (worker stopped or crashed)', updated_at = now()
         from s where d.id = s.id
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
    if (rows.length) await em.execute(`select pg_notify(?, 'deliveries')`, [WEBHOOKS_CHANNEL]);
    return rows.length;
  }

  // ----------------------------------------------------------------------------------------------
  // Dashboard: delivery log, redelivery, test event

  /** The delivery log of the caller's merchant, newest first, with every attempt; keyset pagination. */
  async list(ctx: RequestContext, input: unknown): Promise<{ deliveries: WebhookDeliveryView[]; nextCursor: string | null }> {
    const merchantId = dashboardMerchant(ctx.caller, false);
    const f = parseInput(listDeliveriesInput, input);
    const where = ['w.merchant_id = ?', 'w.environment = ?'];
    const params: unknown[] = [merchantId, f.environment];
    const filter = (sql: string, value: unknown) => {
      where.push(sql);
      params.push(value);
    };
    if (f.state) filter('w.state = ?', f.state);
    if (f.event) filter('w.event = ?', f.event);
    if (f.orderNo) filter('o.order_no = ?', f.orderNo);
    if (f.after) {
      const c = decodeCursor(f.after);
      // Microseconds, exactly: a millisecond cursor would skip rows created within the same millisecond.
      where.push(`(w.created_at, w.id) < (timestamptz 'epoch' + ? * interval '1 microsecond', ?)`);
      params.push(c.createdUs, c.id);
    }
    const rows = await this.views(ctx.em, `${where.join(' and ')} order by w.created_at desc, w.id desc limit ${f.first + 1}`, params);
    const page = rows.slice(0, f.first);
    const last = page[page.length - 1];
    return { deliveries: page, nextCursor: rows.length > f.first && last ? last.cursor : null };
  }

  async get(ctx: RequestContext, id: unknown): Promise<WebhookDeliveryView> {
    const merchantId = dashboardMerchant(ctx.caller, false);
    const [view] = await this.views(ctx.em, 'w.id = ? and w.merchant_id = ?', [parseInput(deliveryId, id), merchantId]);
    if (!view) throw new DomainError('WEBHOOK_DELIVERY_NOT_FOUND', 'Webhook delivery not found');
    return view;
  }

  /**
   * Starts a new attempt series for a delivered or failed delivery (`→ pending`, due now): the same body
   * and idempotency key, to the merchant's current URL, signed with the current key when sent. The only
   * way a delivered webhook is ever sent again. A delivery still queued or in flight is left alone.
   */
  async redeliver(ctx: RequestContext, id: unknown): Promise<WebhookDeliveryView> {
    const merchantId = dashboardMerchant(ctx.caller, true);
    const deliveryIdValue = parseInput(deliveryId, id);
    const current = await this.get(ctx, deliveryIdValue);
    const url = await this.currentUrl(ctx.em, merchantId, current.environment);
    const moved = await ctx.em.transactional(async (tx) => {
      const rows = await tx.execute<{ id: string }[]>(
        `update webhook_deliveries set state = 'pending', series = series + 1, attempts = 0,
           max_attempts = case when event = 'webhook.test' then 1 else ? end,
           next_attempt_at = now(), url = ?, endpoint = ?, last_error = null, last_status = null, failed_at = null, updated_at = now()
         where id = ? and merchant_id = ? and state in ('delivered', 'failed') returning id`,
        [this.opts.schedule.maxAttempts, url, endpointOf(url), deliveryIdValue, merchantId],
      );
      if (rows.length) await tx.execute(`select pg_notify(?, 'deliveries')`, [WEBHOOKS_CHANNEL]);
      return rows.length > 0;
    });
    if (!moved) throw new DomainError('CONFLICT', 'This delivery is already queued or being sent');
    return this.get(ctx, deliveryIdValue);
  }

  /**
   * Sends a signed `webhook.test` event to the environment's URL now, from this process, and returns
   * the delivery with its attempt. One attempt, no retries (redeliverWebhook repeats it).
   */
  async sendTest(ctx: RequestContext, environment: unknown): Promise<WebhookDeliveryView> {
    const merchantId = dashboardMerchant(ctx.caller, true);
    const env = parseInput(listDeliveriesInput.shape.environment, environment);
    const url = await this.currentUrl(ctx.em, merchantId, env);
    const id = randomUUID();
    const body = buildTestBody(id, merchantId, env, new Date());
    // Inserted already claimed (`sending`, attempt 1, our lease): no worker can pick it up meanwhile.
    const [row] = await ctx.em.execute<ClaimRow[]>(
      `insert into webhook_deliveries as w (id, merchant_id, environment, event, idempotency_key, url, endpoint, payload, max_attempts, state, attempts, locked_at, locked_until, lock_token)
       values (?, ?, ?, ?, ?, ?, ?, ?, 1, 'sending', 1, now(), now() + make_interval(secs => ${this.leaseMs / 1000}), gen_random_uuid())
       returning ${CLAIM_RETURNING}`,
      [id, merchantId, env, body.event, body.idempotency_key, url, endpointOf(url), JSON.stringify(body)],
    );
    await this.record(ctx.em, [await this.attempt(this.toClaimed(row!))]);
    return this.get(ctx, id);
  }

  private async currentUrl(em: EntityManager, merchantId: string, environment: Environment): Promise<string> {
    const m = await em.findOne(Merchant, merchantId);
    const url = environment === 'production' ? m?.notificationUrlProduction : m?.notificationUrlSandbox;
    if (!url) throw new DomainError('NOTIFICATION_URL_REJECTED', `No notification_url is set for ${environment}`);
    return url;
  }

  private async views(em: EntityManager, whereAndOrder: string, params: unknown[]): Promise<WebhookDeliveryView[]> {
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
      list.push({ series: a.series, number: a.number, url: a.url, startedAt: new Date(a.started_ms), latencyMs: a.latency_ms, httpStatus: a.http_status, error: a.error, responseBody: a.response_body, outcome: a.outcome });
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
      lastError: r.last_error,
      deliveredAt: date(r.delivered_ms),
      failedAt: date(r.failed_ms),
      createdAt: new Date(r.created_ms),
      payload: r.payload,
      attemptLog: byDelivery.get(r.id) ?? [],
    }));
  }
}

/** The dashboard caller's merchant; `write` refuses viewers. */
function dashboardMerchant(caller: Caller, write: boolean): string {
  if (caller.kind !== 'dashboard') throw new DomainError('UNAUTHENTICATED', 'Dashboard login required');
  if (write && caller.role === 'viewer') throw new DomainError('FORBIDDEN', 'Only owners and admins can change webhooks');
  return caller.merchantId;
}

/** Page cursor: `<created_at in epoch microseconds>|<id>` (base64url). */
function decodeCursor(s: string): { createdUs: string; id: string } {
  const [createdUs, id] = Buffer.from(s, 'base64url').toString('utf8').split('|');
  if (!id || !createdUs || !/^\d{1,20}$/.test(createdUs) || !/^[0-9a-f-]{36}$/.test(id)) throw new DomainError('VALIDATION_FAILED', 'Invalid cursor');
  return { createdUs, id };
}

interface EventRow {
  id: string;
  seq: string;
  type: string;
  from_status: OrderStatus | null;
  to_status: OrderStatus;
  reason: Record<string, unknown> | null;
  created_ms: number;
  order_id: string;
  order_no: string;
  merchant_id: string;
  environment: Environment;
  amount: string;
  currency: string;
  overpaid: boolean;
  order_created_ms: number;
  expires_ms: number;
  paid_ms: number | null;
  url: string | null;
}

interface DepositRow {
  id: string;
  order_id: string;
  address: string;
  network: Network;
  total_amount: string;
  amount_received: string;
  created_ms: number;
  symbol: string;
  token_address: string;
  decimals: number;
}

interface PaymentRow {
  id: string;
  order_id: string;
  deposit_id: string;
  tx_hash: string;
  log_index: number;
  amount: string;
  block_number: string;
  status: 'pending' | 'confirmed';
  late: boolean;
  detected_ms: number;
  confirmed_ms: number | null;
  tx_shared: boolean;
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
