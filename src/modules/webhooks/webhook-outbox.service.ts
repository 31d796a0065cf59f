import type { EntityManager } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import type { Environment, Network } from '../../common/environment.js';
import type { OrderStatus } from '../orders/order.transitions.js';
import type { MerchantEventType } from '../events/event.catalogue.js';
import {
  buildEventBody,
  buildMerchantEventBody,
  idempotencyKeyOf,
  webhookKindOf,
  type DepositFacts,
  type EventFacts,
  type PaymentFacts,
} from './webhook.payload.js';
import { date, endpointOf, json, ms, notifyDeliveries, urlColumn } from './webhook.sql.js';
import { deliveryBirth } from './webhook.transitions.js';

const BORN_PENDING = deliveryBirth('pending');

/**
 * The outbox → deliveries step: order events queued in `webhook_outbox` (by a trigger, in the order's
 * own transaction) become webhook deliveries whose bodies are built from the database at that moment;
 * merchant events queued in `merchant_event_outbox` (same kind of trigger) become deliveries of their
 * recorded payload. From then on both are the same rows of `webhook_deliveries` (claims, retries, log,
 * redelivery).
 */
export class WebhookOutboxService {
  constructor(
    /** Attempts a new delivery gets (the retry schedule's length + 1). */
    private readonly maxAttempts: number,
  ) {}

  /**
   * Consumes up to `limit` queued order events: each that maps to a webhook kind, for a merchant with a
   * URL for the event's environment, becomes one delivery whose body is built now, from the database.
   * The queue rows are deleted in the same transaction (SKIP LOCKED: several workers share the queue;
   * a crash rolls everything back). Then the same for up to `limit` queued merchant events, in the same
   * transaction. Returns how many queue rows were consumed.
   */
  async dispatchOutbox(em: EntityManager, limit = 500): Promise<number> {
    return em.transactional(async (tx) => (await this.dispatchOrderEvents(tx, limit)) + (await this.dispatchMerchantEvents(tx, limit)));
  }

  /** Consumes up to `limit` queued merchant events, in `tx`: one delivery each for a merchant with a URL for the event's environment. */
  private async dispatchMerchantEvents(tx: EntityManager, limit: number): Promise<number> {
    const queued = await tx.execute<{ event_id: string }[]>(
      `delete from merchant_event_outbox where event_id in (select event_id from merchant_event_outbox order by seq limit ${Number(limit)} for update skip locked) returning event_id`,
    );
    if (!queued.length) return 0;
    const events = await tx.execute<MerchantEventRow[]>(
      `select e.id, e.merchant_id, e.environment, e.type, e.payload, e.idempotency_key, ${ms('e.created_at')} as created_ms, ${urlColumn('e.environment')} as url
       from merchant_events e join merchants m on m.id = e.merchant_id
       where e.id in (select jsonb_array_elements_text(?::jsonb)::uuid)`,
      [json(queued.map((q) => q.event_id))],
    );
    const rows = events.flatMap((e) =>
      e.url
        ? [
            {
              id: randomUUID(),
              merchant_id: e.merchant_id,
              environment: e.environment,
              merchant_event_id: e.id,
              event: e.type,
              idempotency_key: e.idempotency_key,
              url: e.url,
              endpoint: endpointOf(e.url),
              payload: JSON.stringify(
                buildMerchantEventBody({
                  id: e.id,
                  merchantId: e.merchant_id,
                  environment: e.environment,
                  type: e.type,
                  payload: e.payload,
                  idempotencyKey: e.idempotency_key,
                  createdAt: new Date(e.created_ms),
                }),
              ),
              max_attempts: this.maxAttempts,
            },
          ]
        : [],
    );
    if (!rows.length) return queued.length;
    const inserted = await tx.execute<{ id: string }[]>(
      `insert into webhook_deliveries (id, merchant_id, environment, merchant_event_id, event, idempotency_key, url, endpoint, payload, max_attempts, state)
       select v.*, ${BORN_PENDING} from jsonb_to_recordset(?::jsonb) as v(id uuid, merchant_id uuid, environment text, merchant_event_id uuid, event text,
         idempotency_key text, url text, endpoint text, payload text, max_attempts int)
       on conflict (merchant_event_id) do nothing returning id`,
      [json(rows)],
    );
    if (inserted.length) await notifyDeliveries(tx);
    return queued.length;
  }

  /** Consumes up to `limit` queued order events, in `tx`. */
  private async dispatchOrderEvents(tx: EntityManager, limit: number): Promise<number> {
    const queued = await tx.execute<{ event_id: string }[]>(
      `delete from webhook_outbox where event_id in (select event_id from webhook_outbox order by seq limit ${Number(limit)} for update skip locked) returning event_id`,
    );
    if (!queued.length) return 0;
    const events = await tx.execute<EventRow[]>(
      `select e.id, e.seq, e.type, e.from_status, e.to_status, e.reason, ${ms('e.created_at')} as created_ms,
              o.id as order_id, o.order_no, o.merchant_id, o.environment, o.amount, o.currency, o.overpaid, o.reorged,
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
        event: {
          id: e.id,
          seq: Number(e.seq),
          type: e.type,
          fromStatus: e.from_status,
          toStatus: e.to_status,
          reason: e.reason ?? {},
          createdAt: new Date(e.created_ms),
        },
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
          reorged: e.reorged,
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
        max_attempts: this.maxAttempts,
      };
    });
    const inserted = await tx.execute<{ id: string }[]>(
      `insert into webhook_deliveries (id, merchant_id, environment, order_id, event_id, event, idempotency_key, url, endpoint, payload, max_attempts, state)
       select v.*, ${BORN_PENDING} from jsonb_to_recordset(?::jsonb) as v(id uuid, merchant_id uuid, environment text, order_id uuid, event_id uuid, event text,
         idempotency_key text, url text, endpoint text, payload text, max_attempts int)
       on conflict (event_id) do nothing returning id`,
      [json(rows)],
    );
    if (inserted.length) await notifyDeliveries(tx);
    return queued.length;
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
}

interface MerchantEventRow {
  id: string;
  merchant_id: string;
  environment: Environment;
  type: MerchantEventType;
  payload: Record<string, unknown>;
  idempotency_key: string;
  created_ms: number;
  url: string | null;
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
  reorged: boolean;
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
