import type { EntityManager } from '@mikro-orm/postgresql';
import type { Environment, Network } from '../../common/environment.js';
import { REFUND_CLAIMED, REFUND_CONFIRMED, REFUND_FAILED, REFUND_SENT, type RefundEventPayload } from '../events/event.catalogue.js';
import type { MerchantEventInput, MerchantEventWriter } from '../events/merchant-event.writer.js';
import { writeOrderRevenue } from '../payments/settlement.service.js';
import { decimalString } from '../sweeps/sweep-events.js';
import type { RefundTransitionHook } from './refund-status.service.js';

type RefundEventType = typeof REFUND_CLAIMED | typeof REFUND_SENT | typeof REFUND_CONFIRMED | typeof REFUND_FAILED | 'refund.created';

/** The `refund.*` event of a refund as it stands now in `em`'s transaction, keyed so each fact is reported once. */
export async function refundEvent<T extends RefundEventType>(em: EntityManager, refundId: string, type: T): Promise<MerchantEventInput<T>> {
  const [r] = await em.execute<Record<string, string | number | null>[]>(
    `select r.id, r.merchant_id, r.environment, r.network, r.order_id, o.order_no, r.receipt_id, r.kind, r.status, t.address as token_address, t.symbol, t.decimals,
            r.amount::text as amount, r.sent_amount::text as sent_amount, r.to_address, r.from_address, r.tx_hash, r.failure_reason
     from refunds r join orders o on o.id = r.order_id join tokens t on t.id = r.token_id where r.id = ?`,
    [refundId],
  );
  if (!r) throw new Error(`refund ${refundId} not found`);
  const decimals = Number(r.decimals);
  const payload: RefundEventPayload = {
    refundId: r.id as string,
    orderId: r.order_id as string,
    orderNo: r.order_no as string,
    receiptId: (r.receipt_id as string | null) ?? null,
    kind: r.kind as string,
    status: r.status as string,
    network: r.network as Network,
    tokenAddress: r.token_address as string,
    tokenSymbol: r.symbol as string,
    decimals,
    amount: r.amount as string,
    amountDecimal: decimalString(BigInt(r.amount as string), decimals),
    sentAmount: (r.sent_amount as string | null) ?? null,
    toAddress: (r.to_address as string | null) ?? null,
    fromAddress: (r.from_address as string | null) ?? null,
    txHash: (r.tx_hash as string | null) ?? null,
    reason: type === REFUND_FAILED ? ((r.failure_reason as string | null) ?? 'unknown') : null,
    at: new Date().toISOString(),
  };
  // a refund re-signed after a dead transaction reports each transaction it sent
  const key = type === REFUND_SENT ? `${type}:${refundId}:${payload.txHash}` : `${type}:${refundId}`;
  return { merchantId: r.merchant_id as string, environment: r.environment as Environment, type, payload: payload as never, idempotencyKey: key };
}

/**
 * The status writer's hook: claimed, sending (sent), confirmed and failed each report their webhook in
 * the move's transaction; a confirmed refund of an order's payments nets out of the order's revenue
 * (order-revenue.sql.ts) in the same transaction, the order's row locked first as the settlement does.
 */
export function refundEventsHook(writer: MerchantEventWriter): RefundTransitionHook {
  const TYPES: Partial<Record<string, RefundEventType>> = { claimed: REFUND_CLAIMED, sending: REFUND_SENT, confirmed: REFUND_CONFIRMED, failed: REFUND_FAILED };
  return async (em, row) => {
    const type = TYPES[row.status];
    if (type) await writer.record(em, await refundEvent(em, row.id, type));
    if (row.status === 'confirmed' && row.receiptId === null) {
      await em.execute(`select id from orders where id = ? for update`, [row.orderId]);
      await writeOrderRevenue(em, row.orderId);
    }
  };
}
