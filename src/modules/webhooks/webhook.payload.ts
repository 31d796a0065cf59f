import { unix } from '../../common/time.js';
import type { Environment, Network } from '../../common/environment.js';
import { formatDecimal } from '../../common/money.js';
import { MERCHANT_EVENT_TYPES, ORDER_EVENT_WEBHOOKS, ORDER_STATUS_CHANGED, type MerchantEventType, type OrderEventType } from '../events/event.catalogue.js';
import type { OrderStatus } from '../orders/order.transitions.js';

/**
 * The webhook body (docs/webhooks.md "Payload"). Versioned by date: fields may be added within a
 * version; renaming or removing one, or changing a meaning, needs a new version.
 */
export const WEBHOOK_PAYLOAD_VERSION = '2026-11-01';

export const WEBHOOK_EVENT_KINDS = [
  'transaction.success',
  'transaction.underpaid',
  'transaction.expired',
  'transaction.late_payment',
  'transaction.overpaid',
  'transaction.reorged',
  'transaction.unattributed',
  ...MERCHANT_EVENT_TYPES,
  'webhook.test',
] as const;
export type WebhookEventKind = (typeof WEBHOOK_EVENT_KINDS)[number];

/** Which order events become webhooks: the event catalogue's table (the rest are internal steps and send nothing). */
export function webhookKindOf(type: string, toStatus: string): WebhookEventKind | null {
  if (!Object.hasOwn(ORDER_EVENT_WEBHOOKS, type)) return null;
  const target = ORDER_EVENT_WEBHOOKS[type as OrderEventType];
  if (target === null) return null;
  const kind = typeof target === 'string' ? target : target[toStatus as OrderStatus];
  return kind ?? null;
}

/** What the builder needs, read from the database when the outbox row is consumed. */
export interface EventFacts {
  event: { id: string; seq: number; type: string; fromStatus: OrderStatus | null; toStatus: OrderStatus; reason: Record<string, unknown>; createdAt: Date };
  order: {
    id: string;
    orderNo: string;
    merchantId: string;
    environment: Environment;
    amount: bigint;
    currency: string;
    createdAt: Date;
    expiresAt: Date;
    paidAt: Date | null;
    overpaid: boolean;
    reorged: boolean;
  };
  deposits: DepositFacts[];
  /** The order's payments that were not reorganised away, oldest first. */
  payments: PaymentFacts[];
}

export interface DepositFacts {
  id: string;
  address: string;
  network: Network;
  token: { symbol: string; address: string; decimals: number };
  totalAmount: bigint;
  amountReceived: bigint;
  createdAt: Date;
}

export interface PaymentFacts {
  id: string;
  depositId: string;
  txHash: string;
  logIndex: number;
  amount: bigint;
  blockNumber: string;
  status: 'pending' | 'confirmed';
  late: boolean;
  detectedAt: Date;
  confirmedAt: Date | null;
  /** Another payment row has the same tx hash on the same network (one transaction paying several deposits). */
  txShared: boolean;
}

/**
 * received / due of a deposit compared with another's, exactly (cross-multiplied): units of two
 * deposits (6- and 18-decimal tokens) are never compared directly.
 */
const byShareReceived = (a: DepositFacts, b: DepositFacts): number => {
  const l = a.amountReceived * (b.totalAmount > 0n ? b.totalAmount : 1n);
  const r = b.amountReceived * (a.totalAmount > 0n ? a.totalAmount : 1n);
  return l === r ? 0 : l > r ? -1 : 1;
};

/**
 * The deposit an event is about: the one it names (a Success names the deposit that completed the
 * order, a payment event its payment's), else the one that received the largest share of its due,
 * else the newest.
 */
function depositOf(f: EventFacts): DepositFacts | null {
  const named = (f.event.reason.depositId as string | undefined) ?? f.payments.find((p) => p.id === f.event.reason.paymentId)?.depositId;
  const byId = named ? f.deposits.find((d) => d.id === named) : undefined;
  if (byId) return byId;
  return [...f.deposits].sort((a, b) => byShareReceived(a, b) || b.createdAt.getTime() - a.createdAt.getTime())[0] ?? null;
}

/**
 * `X-Service-Idempotency-Key`. transaction.success: the on-chain hash of the payment that completed the
 * order (the one its status change names; for older events its deposit's latest confirmed payment;
 * `<hash>:<log index>` when one transaction paid several deposits, so the key stays unique per payment). Every other event: `evt_<event id>` — stable, and never equal to
 * a success key (a late payment that completes an order produces both a late_payment and a success event).
 */
export function idempotencyKeyOf(kind: WebhookEventKind, f: EventFacts): string {
  if (kind === 'transaction.success') {
    const named = f.payments.find((p) => p.id === f.event.reason.paymentId);
    if (named) return named.txShared ? `${named.txHash}:${named.logIndex}` : named.txHash;
    const dep = depositOf(f);
    const confirmed = f.payments.filter((p) => p.status === 'confirmed' && (!dep || p.depositId === dep.id));
    const last = confirmed
      .sort((a, b) => (a.confirmedAt?.getTime() ?? 0) - (b.confirmedAt?.getTime() ?? 0) || a.detectedAt.getTime() - b.detectedAt.getTime())
      .at(-1);
    if (last) return last.txShared ? `${last.txHash}:${last.logIndex}` : last.txHash;
  }
  return `evt_${f.event.id}`;
}

export interface WebhookBody {
  version: string;
  id: string;
  event: WebhookEventKind;
  created_at: number;
  idempotency_key: string;
  data: Record<string, unknown>;
}

/** Builds the body of an order event's webhook. Amounts are decimal strings; times are Unix seconds. */
export function buildEventBody(kind: WebhookEventKind, f: EventFacts, idempotencyKey: string): WebhookBody {
  const dep = depositOf(f);
  const decimalsOf = (depositId: string) => f.deposits.find((d) => d.id === depositId)?.token.decimals ?? 0;
  const crypto = (units: bigint) => (dep ? formatDecimal(units, dep.token.decimals) : null);
  const data: Record<string, unknown> = {
    order_no: f.order.orderNo,
    merchant_id: f.order.merchantId,
    environment: f.order.environment,
    status: f.event.toStatus,
    previous_status: f.event.type === ORDER_STATUS_CHANGED ? f.event.fromStatus : null,
    sequence: f.event.seq,
    amount: f.order.amount.toString(),
    currency: f.order.currency,
    network: dep?.network ?? null,
    token: dep ? { ...dep.token } : null,
    deposit_address: dep?.address ?? null,
    amount_due_crypto: dep ? crypto(dep.totalAmount) : null,
    amount_received_crypto: dep ? crypto(dep.amountReceived) : null,
    overpaid: f.order.overpaid,
    reorged: f.order.reorged,
    tx_hashes: [...new Set(f.payments.filter((p) => p.status === 'confirmed').map((p) => p.txHash))],
    payments: f.payments.map((p) => ({
      tx_hash: p.txHash,
      log_index: p.logIndex,
      network: f.deposits.find((d) => d.id === p.depositId)?.network ?? null,
      amount: formatDecimal(p.amount, decimalsOf(p.depositId)),
      block_number: p.blockNumber,
      status: p.status,
      late: p.late,
      detected_at: unix(p.detectedAt),
      confirmed_at: unix(p.confirmedAt),
    })),
    created_at: unix(f.order.createdAt),
    expired_at: unix(f.order.expiresAt),
    paid_at: unix(f.order.paidAt),
  };
  const r = f.event.reason;
  if (kind === 'transaction.late_payment') {
    const p = f.payments.find((x) => x.id === r.paymentId);
    data.late_payment = {
      tx_hash: (r.txHash as string | undefined) ?? p?.txHash ?? null,
      amount: p ? formatDecimal(p.amount, decimalsOf(p.depositId)) : null,
      within_late_window: r.withinLateWindow === true,
    };
  }
  if (kind === 'transaction.overpaid' && dep) {
    const due = BigInt(String(r.due ?? dep.totalAmount));
    const received = BigInt(String(r.received ?? dep.amountReceived));
    // Judged across the order's deposits (settlement.rules.ts rule 6): the excess is in the paid deposit's token.
    const excess = r.excess !== undefined ? BigInt(String(r.excess)) : received > due ? received - due : 0n;
    const perDeposit = Array.isArray(r.deposits) ? (r.deposits as { depositId: string; due: string; received: string }[]) : [];
    data.overpayment = {
      amount_due_crypto: crypto(due),
      amount_received_crypto: crypto(received),
      excess_crypto: crypto(excess),
      excess_idr: r.excessIdr !== undefined ? String(r.excessIdr) : null,
      deposits: perDeposit.flatMap((x) => {
        const d = f.deposits.find((y) => y.id === x.depositId);
        return d
          ? [
              {
                network: d.network,
                token: { ...d.token },
                deposit_address: d.address,
                amount_due_crypto: formatDecimal(BigInt(x.due), d.token.decimals),
                amount_received_crypto: formatDecimal(BigInt(x.received), d.token.decimals),
              },
            ]
          : [];
      }),
    };
  }
  if (kind === 'transaction.reorged') {
    const p = f.payments.find((x) => x.id === r.paymentId);
    const decimals = typeof r.depositId === 'string' ? decimalsOf(r.depositId) : 0;
    data.reorg = {
      tx_hash: (r.txHash as string | undefined) ?? null,
      log_index: typeof r.logIndex === 'number' ? r.logIndex : null,
      amount: typeof r.amount === 'string' ? formatDecimal(BigInt(r.amount), decimals) : null,
      block_number: (r.blockNumber as string | undefined) ?? null,
      block_hash: (r.blockHash as string | undefined) ?? null,
      // orphaned: gone from the chain; pending: seen again in another block, waiting for confirmations.
      payment_status: p?.status ?? (r.paymentStatus as string | undefined) ?? null,
    };
  }
  if (kind === 'transaction.unattributed') {
    // Never counted toward the order: the amount is in the units of the token that arrived, which may not be the deposit's.
    data.unattributed = {
      reason: r.reason ?? null,
      network: r.network ?? null,
      token: { symbol: r.tokenSymbol ?? null, address: r.tokenAddress ?? null, decimals: r.decimals ?? null },
      address: r.toAddress ?? null,
      tx_hash: r.txHash ?? null,
      log_index: r.logIndex ?? null,
      amount: typeof r.amount === 'string' && typeof r.decimals === 'number' ? formatDecimal(BigInt(r.amount), r.decimals) : null,
    };
  }
  return { version: WEBHOOK_PAYLOAD_VERSION, id: f.event.id, event: kind, created_at: unix(f.event.createdAt)!, idempotency_key: idempotencyKey, data };
}

/** camelCase → snake_case keys, at every depth (payloads are plain JSON). */
function snakeKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(snakeKeys);
  if (v === null || typeof v !== 'object') return v;
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), snakeKeys(x)]));
}

/** A merchant event as recorded (merchant_events row). */
export interface MerchantEventFacts {
  id: string;
  merchantId: string;
  environment: Environment;
  type: MerchantEventType;
  payload: Record<string, unknown>;
  idempotencyKey: string;
  createdAt: Date;
}

/**
 * The body of a merchant event's webhook (docs/webhooks.md "Merchant events"): the same envelope as
 * order events; `data` is the recorded payload with snake_case keys, after `merchant_id` and `environment`.
 */
export function buildMerchantEventBody(e: MerchantEventFacts): WebhookBody {
  return {
    version: WEBHOOK_PAYLOAD_VERSION,
    id: e.id,
    event: e.type,
    created_at: unix(e.createdAt)!,
    idempotency_key: e.idempotencyKey,
    data: { merchant_id: e.merchantId, environment: e.environment, ...(snakeKeys(e.payload) as Record<string, unknown>) },
  };
}

/** The body of `sendTestWebhook`: marked `test`, with an order-shaped `data` so receivers can exercise their parser. */
export function buildTestBody(id: string, merchantId: string, environment: Environment, now: Date): WebhookBody {
  const t = unix(now)!;
  return {
    version: WEBHOOK_PAYLOAD_VERSION,
    id,
    event: 'webhook.test',
    created_at: t,
    idempotency_key: `evt_${id}`,
    data: {
      test: true,
      order_no: 'TEST-ORDER',
      merchant_id: merchantId,
      environment,
      status: 'Success',
      previous_status: 'Created',
      sequence: 0,
      amount: '150000',
      currency: 'IDR',
      network: 'ETHEREUM',
      token: { symbol: 'USDT', address: '0x0000000000000000000000000000000000000000', decimals: 6 },
      deposit_address: '0x0000000000000000000000000000000000000000',
      amount_due_crypto: '9.23077',
      amount_received_crypto: '9.23077',
      overpaid: false,
      reorged: false,
      tx_hashes: [],
      payments: [],
      created_at: t,
      expired_at: t + 1800,
      paid_at: t,
    },
  };
}
