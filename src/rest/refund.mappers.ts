import { z } from 'zod';
import { requireEnvironment, requireSameMerchant } from '../common/access.js';
import type { RequestContext } from '../common/context.js';
import { formatDecimal } from '../common/money.js';
import { unix } from '../common/time.js';
import { parseInput } from '../common/validation.js';
import type { CreateRefundCommand, ListRefundsCommand, RefundIdCommand } from '../modules/refunds/refund.commands.js';
import type { RefundRecord } from '../modules/refunds/refund.service.js';
import { merchantId } from './order.mappers.js';

/*
 * The legacy REST dialect of refunds (snake_case bodies naming `merchant_id` and `order_no`, Unix
 * seconds, amounts as strings) → RefundService's commands, which validate the values themselves.
 * The environment is the path's (`/testnet` = sandbox, `/mainnet` = production).
 */

const orderNo = z.string({ message: 'must be the order number' }).min(1, 'must not be empty').max(64, 'must be at most 64 characters');
export const createRefundBody = z.object({
  merchant_id: merchantId,
  order_no: orderNo,
  kind: z.string({ message: 'must be a refund kind' }),
  amount: z.string({ message: 'must be base units as a string' }).optional(),
  receipt_id: z.string({ message: 'must be a receipt id' }).optional(),
  deposit_id: z.string({ message: 'must be a deposit id' }).optional(),
  reason: z.string({ message: 'must be text' }).optional(),
  address: z.string({ message: 'must be an address' }).optional(),
});
export const refundIdBody = z.object({ merchant_id: merchantId, refund_id: z.string({ message: 'must be a refund id' }) });

/** `POST /merchant/fiat/refund`: the order by its number (resolved by the caller), the rest as the command. */
export function toCreateRefund(ctx: RequestContext, body: unknown): { orderNo: string; command: Omit<CreateRefundCommand, 'orderId'> } {
  const b = parseInput(createRefundBody, body);
  requireSameMerchant(ctx, b.merchant_id, 'the API key');
  return {
    orderNo: b.order_no,
    command: {
      environment: requireEnvironment(ctx),
      kind: b.kind as CreateRefundCommand['kind'],
      amount: b.amount,
      receiptId: b.receipt_id,
      depositId: b.deposit_id,
      reason: b.reason,
      address: b.address,
    },
  };
}

/** `POST /merchant/fiat/getRefund`, `/cancelRefund` and `/renewRefundClaimLink` `{ merchant_id, refund_id }`. */
export function toRefundId(ctx: RequestContext, body: unknown): RefundIdCommand {
  const b = parseInput(refundIdBody, body);
  requireSameMerchant(ctx, b.merchant_id, 'the API key');
  return { environment: requireEnvironment(ctx), id: b.refund_id };
}

/** `GET /merchant/fiat/refunds?network=&status=&kind=&order_id=&limit=&offset=`. */
export function toListRefunds(ctx: RequestContext, query: unknown): ListRefundsCommand {
  const q = (query ?? {}) as Record<string, unknown>;
  const upper = (v: unknown) => (typeof v === 'string' ? v.toUpperCase() : v);
  return {
    environment: requireEnvironment(ctx),
    network: upper(q.network) as ListRefundsCommand['network'],
    status: q.status as ListRefundsCommand['status'],
    kind: q.kind as ListRefundsCommand['kind'],
    orderId: q.order_id as string | undefined,
    limit: q.limit as number | undefined,
    offset: q.offset as number | undefined,
  };
}

export const refundView = (r: RefundRecord) => ({
  refund_id: r.id,
  order_no: r.orderNo,
  receipt_id: r.receiptId,
  deposit_id: r.depositId,
  network: r.network,
  kind: r.kind,
  reason: r.reason,
  status: r.status,
  failure_reason: r.failureReason,
  token_symbol: r.tokenSymbol,
  token_address: r.tokenAddress,
  decimals: r.decimals,
  amount: formatDecimal(BigInt(r.amount), r.decimals),
  amount_units: r.amount,
  sent_amount_units: r.sentAmount,
  fee_mode: r.feeMode,
  fee_deducted_units: r.feeDeducted,
  to_address: r.toAddress,
  address_source: r.addressSource,
  source: r.source,
  from_address: r.fromAddress,
  tx_hash: r.txHash,
  requested_by: r.requestedBy,
  approved_by: r.approvedBy,
  created_at: unix(r.createdAt),
  claimed_at: unix(r.claimedAt),
  approved_at: unix(r.approvedAt),
  sent_at: unix(r.sentAt),
  confirmed_at: unix(r.confirmedAt),
  cancelled_at: unix(r.cancelledAt),
});
