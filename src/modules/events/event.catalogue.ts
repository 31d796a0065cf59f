import type { Environment, Network } from '../../common/environment.js';
import type { OrderStatus } from '../orders/order.transitions.js';

/**
 * Every event of the gateway, in one place: what is recorded in `order_events` (the outbox the
 * webhooks are built from), which PostgreSQL channels announce what, and which GraphQL subscription
 * topics carry it inside one process. A new event is added here first; its payload type then
 * follows it to every writer and reader.
 */

// --- Recorded events (rows of `order_events`, written only by OrderEventWriter) ----------------------

export const ORDER_STATUS_CHANGED = 'order.status_changed';
/**
 * An order was created (REST, GraphQL or a payment link's open): written by the statement that inserts
 * the order (OrderService, one statement per group-committed batch). Feed only: no webhook.
 */
export const ORDER_CREATED = 'order.created';
/** A confirmed payment detected after expiry (reported once per payment, whatever it did to the status). */
export const PAYMENT_LATE = 'payment.late';
/** The order's deposits together received more than its value (reported once per order; settlement.rules.ts rule 6). */
export const PAYMENT_OVERPAID = 'payment.overpaid';
/**
 * A payment that had been confirmed left the canonical chain: a reorg deeper than the confirmation
 * depth (found by the watcher's re-check of confirmed blocks, or by a rescan that met the transfer in
 * another block). Reported once per reorg of the payment, whatever it did to the status.
 */
export const PAYMENT_REORGED = 'payment.reorged';
/**
 * A confirmed transfer into one of the order's deposit addresses that does not count toward it (after
 * the deposit closed, another token, or another network): reported once per receipt, never a status change.
 */
export const PAYMENT_UNATTRIBUTED = 'payment.unattributed';

/**
 * A transfer into one of the order's deposit addresses was seen on chain (recorded by the watcher, not
 * yet deep enough to count). Once per payment, in the transaction that records it. Feed only: no webhook.
 */
export const PAYMENT_DETECTED = 'payment.detected';
/** A payment became deep enough to count (its order is settled next). Once per confirmation. Feed only: no webhook. */
export const PAYMENT_CONFIRMED = 'payment.confirmed';

/** What `payment.detected` and `payment.confirmed` carry: the payment as recorded. Amount in base units. */
export interface PaymentObservedReason {
  paymentId: string;
  depositId: string;
  network: Network;
  tokenAddress: string;
  tokenSymbol: string;
  decimals: number;
  txHash: string;
  logIndex: number;
  blockNumber: string;
  fromAddress: string;
  toAddress: string;
  amount: string;
  /** Detected after the order's expiry. */
  late: boolean;
}

/** Why a status changed, stored with the event: `{ kind: 'payment_confirmed', paymentId }`, `{ kind: 'expired' }`, … */
export interface TransitionReason {
  kind: string;
  [k: string]: unknown;
}

/** The `reason` column of each event type. Amounts are decimal strings of base units. */
export interface OrderEventReasons {
  [ORDER_STATUS_CHANGED]: TransitionReason;
  /** How the order came in: its `source` (`api`: REST or GraphQL; `payment_link`: a link's open). */
  [ORDER_CREATED]: { source: string };
  [PAYMENT_LATE]: { paymentId: string; txHash: string; amount: string; withinLateWindow: boolean };
  [PAYMENT_OVERPAID]: {
    /** The deposit that completed the order, its due and confirmed units. */
    depositId: string;
    due: string;
    received: string;
    /** The excess in that deposit's base units, and in IDR at its locked rate. */
    excess: string;
    excessIdr?: string;
    /** Every deposit that received something (value is judged across all of them). */
    deposits?: { depositId: string; due: string; received: string }[];
  };
  [PAYMENT_REORGED]: {
    paymentId: string;
    depositId: string;
    txHash: string;
    logIndex: number;
    amount: string;
    /** The block it had been confirmed in. */
    blockNumber: string;
    blockHash: string;
    /** What became of it: `orphaned` (gone from the chain) or `pending` (seen again in another block, waiting for confirmations). */
    paymentStatus: string;
    reorgedAt: string;
  };
  [PAYMENT_DETECTED]: PaymentObservedReason;
  [PAYMENT_CONFIRMED]: PaymentObservedReason;
  [PAYMENT_UNATTRIBUTED]: {
    receiptId: string;
    depositId: string;
    txHash: string;
    logIndex: number;
    network: Network;
    tokenAddress: string | null;
    tokenSymbol: string;
    decimals: number;
    toAddress: string;
    amount: string;
    reason: string;
  };
}
export type OrderEventType = keyof OrderEventReasons;

/** The webhook kinds order events turn into (the payload's `event` field). */
export type OrderWebhookKind =
  | 'transaction.success'
  | 'transaction.underpaid'
  | 'transaction.expired'
  | 'transaction.late_payment'
  | 'transaction.overpaid'
  | 'transaction.reorged'
  | 'transaction.unattributed';

/**
 * Which webhook each event becomes (null or absent: internal, sends nothing; the dashboard feed still
 * carries it). A status change depends on the status reached: Processing and a return to Created are
 * internal steps.
 */
export const ORDER_EVENT_WEBHOOKS: {
  [T in OrderEventType]: T extends typeof ORDER_STATUS_CHANGED ? Partial<Record<OrderStatus, OrderWebhookKind>> : OrderWebhookKind | null;
} = {
  [ORDER_STATUS_CHANGED]: { Success: 'transaction.success', Underpaid: 'transaction.underpaid', Expired: 'transaction.expired' },
  [PAYMENT_LATE]: 'transaction.late_payment',
  [PAYMENT_OVERPAID]: 'transaction.overpaid',
  [PAYMENT_REORGED]: 'transaction.reorged',
  [PAYMENT_UNATTRIBUTED]: 'transaction.unattributed',
  [PAYMENT_DETECTED]: null,
  [PAYMENT_CONFIRMED]: null,
  [ORDER_CREATED]: null,
};

export const ORDER_EVENT_TYPES = Object.keys(ORDER_EVENT_WEBHOOKS) as OrderEventType[];

// --- Merchant events (rows of `merchant_events`, written only by MerchantEventWriter) ---------------
// Events of a merchant environment that belong to no order. Each is also a webhook of the same name
// (docs/webhooks.md "Merchant events"); the payload below is the webhook's `data` with its keys in
// snake_case, next to `merchant_id` and `environment`.

/** A settlement address was set or replaced: sent in the transaction that writes it. */
export const SETTLEMENT_WALLET_CHANGED = 'settlement_wallet.changed';
/** A sweep's transaction confirmed: the tokens are at the settlement address. */
export const SWEEP_COMPLETED = 'sweep.completed';
/** A sweep ended without moving the tokens (they stay in the deposit address and are swept again later). */
export const SWEEP_FAILED = 'sweep.failed';

/** What `sweep.completed` and `sweep.failed` carry. Amounts in base units as decimal strings, with their decimal rendering. */
export interface SweepEventPayload {
  sweepId: string;
  network: Network;
  tokenAddress: string;
  tokenSymbol: string;
  decimals: number;
  /** Token base units moved (or meant to be moved, on failure). */
  amount: string;
  /** `amount` with `decimals` applied (`12.5`). */
  amountDecimal: string;
  /** The deposit address swept. */
  fromAddress: string;
  /** The settlement address. */
  toAddress: string;
  /** The sweep transaction; null when none was confirmed. */
  txHash: string | null;
  /** Network fee actually paid, in base units of `feeAsset` (wei, sun, lamports); null when unknown or none. */
  feePaid: string | null;
  /** `feePaid` with the native asset's decimals applied. */
  feePaidDecimal: string | null;
  /** The native asset the fee was paid in: ETH, BNB, TRX, SOL. */
  feeAsset: string;
  depositIds: string[];
  orderNos: string[];
  /** ISO 8601 time of the outcome. */
  at: string;
}

/** A refund was requested (by the merchant, its server, or automatically for a gateway-offered kind). */
export const REFUND_CREATED = 'refund.created';
/** The refund's destination is known (the customer claimed it, or the merchant entered it). */
export const REFUND_CLAIMED = 'refund.claimed';
/** The refund's transaction is signed, stored and broadcast (`txHash` set; not final yet). */
export const REFUND_SENT = 'refund.sent';
/** The refund's transaction is final on chain: the customer has the tokens. */
export const REFUND_CONFIRMED = 'refund.confirmed';
/** The refund ended without sending (`reason`); a cancelled refund sends no webhook. */
export const REFUND_FAILED = 'refund.failed';

/** What every `refund.*` event carries. Amounts in base units as decimal strings, with their decimal rendering. */
export interface RefundEventPayload {
  refundId: string;
  orderId: string;
  orderNo: string;
  /** The unattributed receipt refunded (null: the order's payments). */
  receiptId: string | null;
  kind: string;
  status: string;
  network: Network;
  tokenAddress: string;
  tokenSymbol: string;
  decimals: number;
  amount: string;
  amountDecimal: string;
  /** What the customer receives (the amount less a deducted fee); null until signed. */
  sentAmount: string | null;
  toAddress: string | null;
  fromAddress: string | null;
  txHash: string | null;
  /** Why it failed (refund.failed only). */
  reason: string | null;
  /** ISO 8601 time of the event. */
  at: string;
}

export interface MerchantEventPayloads {
  [SETTLEMENT_WALLET_CHANGED]: {
    settlementWalletId: string;
    network: Network;
    /** The address sweeps went to until this change (null when none was active yet). */
    previousAddress: string | null;
    /** A newly set address still in its hold that this change replaced (it never received sweeps); null when none. */
    replacedPendingAddress: string | null;
    /** The address set now. */
    address: string;
    /** ISO 8601: sweeps go to `address` from then on (the hold, SETTLEMENT_HOLD_SECONDS). */
    activeFrom: string;
    /** The dashboard user who made the change. */
    changedBy: { userId: string; email: string };
    /** ISO 8601 time of the change. */
    at: string;
  };
  [SWEEP_COMPLETED]: SweepEventPayload;
  [SWEEP_FAILED]: SweepEventPayload & { reason: string };
  [REFUND_CREATED]: RefundEventPayload;
  [REFUND_CLAIMED]: RefundEventPayload;
  [REFUND_SENT]: RefundEventPayload;
  [REFUND_CONFIRMED]: RefundEventPayload;
  [REFUND_FAILED]: RefundEventPayload;
}
export type MerchantEventType = keyof MerchantEventPayloads;

/** Every merchant event type; each is sent as the webhook of the same name. */
export const MERCHANT_EVENT_TYPES = [
  SETTLEMENT_WALLET_CHANGED,
  SWEEP_COMPLETED,
  SWEEP_FAILED,
  REFUND_CREATED,
  REFUND_CLAIMED,
  REFUND_SENT,
  REFUND_CONFIRMED,
  REFUND_FAILED,
] as const satisfies readonly MerchantEventType[];

// --- PostgreSQL NOTIFY channels (sent inside the writing transaction, so delivered on commit) -------

/**
 * Every `order_events` row (status changes and payment.* events); payload {@link OrderFeedNotification}
 * as JSON (`order.created`: only `eventId` and `feed`, the merchant topic), sent by OrderEventWriter's
 * insert itself, so no event is recorded without it. Readers take it as a hint (order-update.stream.ts).
 */
export const ORDER_EVENTS_CHANNEL = 'order_events';
/** The webhook queue has work: payload `outbox` (events to turn into deliveries) or `deliveries` (due now). */
export const WEBHOOKS_CHANNEL = 'webhooks';
/** An API key was rotated; payload {@link ApiKeyRevokedNotification} as JSON. */
export const API_KEY_REVOKED_CHANNEL = 'api_key_revoked';

/**
 * An order's status as a plain DTO: the NOTIFY payload of a change (small on purpose: PostgreSQL
 * limits payloads to 8000 bytes), and the shape of the status stream's snapshot and catch-up.
 */
export interface OrderStatusUpdate {
  /** The `order_events` row; null only for the current status of an order that never changed. */
  eventId: string | null;
  /** Per-order ordering of events (see the order_events migration); 0 before the first change. */
  seq: number;
  orderId: string;
  orderNo: string;
  merchantId: string;
  environment: Environment;
  status: OrderStatus;
  previousStatus: OrderStatus | null;
  /** ISO 8601 time of the change (of the order's creation when it never changed). */
  at: string;
}

/** An order status change as `pg_notify('order_events', …)` carries it: always a real event. */
export type OrderEventNotification = OrderStatusUpdate & { eventId: string };

/**
 * What `pg_notify('order_events', …)` carries for any event: `status` is the order's status after it
 * (`previousStatus` before; equal when the event changed no status), `reason` the event's recorded
 * reason (null when too large for a notification: PostgreSQL refuses payloads over 8000 bytes).
 */
export type OrderFeedNotification = OrderEventNotification & { type: OrderEventType; reason: Record<string, unknown> | null };

export interface ApiKeyRevokedNotification {
  merchantId: string;
  environment: Environment;
}

// --- GraphQL subscription topics (one process's PubSub, fed from ORDER_EVENTS_CHANNEL) --------------

export type SubscriptionTopics = {
  /** One order's committed status changes, keyed by order id. */
  ORDER_UPDATED: [orderId: string, payload: OrderEventNotification];
  /** The LISTEN connection came back: notifications may have been missed, subscribers catch up from `order_events`. */
  ORDER_EVENTS_RESYNC: [];
  /** Every committed order and payment event of one merchant environment, keyed `<merchantId>:<environment>` (the dashboard feed). */
  MERCHANT_EVENT: [merchantEnvironment: string, payload: OrderFeedNotification];
};

/** The MERCHANT_EVENT topic key of a merchant environment. */
export const merchantTopic = (merchantId: string, environment: Environment): string => `${merchantId}:${environment}`;
