import { formatDecimal } from '../../common/money.js';
import type { Deposit } from '../deposits/deposit.entity.js';
import type { Payment } from '../payments/payment.entity.js';
import type { Quote } from '../quotes/quote.entity.js';
import type { OrderRecord } from './order.entity.js';

const unix = (d: Date | null) => (d ? Math.floor(d.getTime() / 1000) : null);

/** The spec's Order object (`request`), plus the documented extra fields. */
export function orderView(o: OrderRecord) {
  return {
    order_no: o.orderNo,
    merchant_id: o.merchant.id,
    amount: o.amount.toString(),
    currency: o.currency,
    status: o.status,
    name: o.customerName,
    email: o.customerEmail,
    source: o.source,
    payment_link_id: o.paymentLinkId,
    created_at: unix(o.createdAt),
    expired_at: unix(o.expiresAt),
    paid_at: unix(o.paidAt),
  };
}

export function quoteSummaryView(q: Quote) {
  return {
    token_address: q.token.address,
    token_symbol: q.token.symbol,
    network: q.network,
    crypto_rate: q.cryptoRate,
    rate_source: q.rateSource,
    fee_is_included: q.feeIncluded,
    amount_crypto: formatDecimal(q.amountCrypto, q.decimals),
    fee_amount: q.feeAmountIdr.toString(),
    fee_amount_crypto: formatDecimal(q.feeAmountCrypto, q.decimals),
    total_amount: q.totalIdr.toString(),
    total_amount_crypto: formatDecimal(q.totalCrypto, q.decimals),
    locked_at: unix(q.lockedAt),
  };
}

export function depositSummaryView(d: Deposit) {
  return {
    network: d.network,
    token_address: d.token.address,
    token_symbol: d.token.symbol,
    wallet_type: d.walletType,
    destination_address: d.address,
    unique_code: String(d.uniqueCode).padStart(3, '0'),
    total_amount: formatDecimal(d.totalAmount, d.token.decimals),
    total_amount_fiat: d.totalAmountFiat.toString(),
    status: d.status,
    expired_at: unix(d.expiresAt),
  };
}

/** Every transfer seen into the order's deposits, counted or not (pending, confirmed, orphaned). */
export function paymentView(p: Payment) {
  return {
    network: p.network,
    token_address: p.token.address,
    token_symbol: p.token.symbol,
    tx_hash: p.txHash,
    log_index: p.logIndex,
    block_number: p.blockNumber,
    from: p.fromAddress,
    to: p.toAddress,
    amount: formatDecimal(p.amount, p.token.decimals),
    status: p.status,
    late: p.late,
    detected_at: unix(p.detectedAt),
    confirmed_at: unix(p.confirmedAt),
  };
}
