import type { Network } from '../common/environment.js';
import { formatDecimal } from '../common/money.js';
import { unix } from '../common/time.js';
import { nativeAsset } from '../chains/registry.js';
import type { Deposit } from '../modules/deposits/deposit.entity.js';
import type { DepositResult } from '../modules/deposits/deposit.service.js';
import { formatUniqueCode } from '../modules/deposits/unique-code.js';
import type { Order, OrderRecord } from '../modules/orders/order.entity.js';
import type { Payment } from '../modules/payments/payment.entity.js';
import type { UnattributedReceipt } from '../modules/payments/unattributed-receipt.entity.js';
import { PLATFORM_FEE_NAME } from '../modules/quotes/fee.math.js';
import type { Quote } from '../modules/quotes/quote.entity.js';
import type { Token } from '../modules/tokens/token.entity.js';

/*
 * The legacy REST dialect's views of the order flow (snake_case, Unix seconds, money as strings):
 * the shapes the spec's merchants already parse. Services return entities; only REST maps them here.
 */

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
    overpaid: o.overpaid ?? false,
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
    /** Confirmed receipts counted for this deposit, in token units. */
    amount_received: formatDecimal(d.amountReceived, d.token.decimals),
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

/** A transfer into one of the order's deposit addresses that never counts toward it (not reorganised away). */
export function receiptView(r: UnattributedReceipt) {
  return {
    receipt_id: r.id,
    address: r.toAddress,
    network: r.network,
    token_address: r.token?.address ?? null,
    token_symbol: r.token?.symbol ?? nativeAsset(r.network).symbol,
    amount: formatDecimal(r.amount, r.token?.decimals ?? nativeAsset(r.network).decimals),
    tx_hash: r.txHash,
    log_index: r.logIndex,
    from: r.fromAddress,
    reason: r.reason,
    status: r.status,
    detected_at: unix(r.detectedAt),
    confirmed_at: unix(r.confirmedAt),
  };
}

/** REST `data` of checkOrderRate: every field of the spec's Rate quote and fee line tables (money as strings). */
export function quoteView(order: Order, quote: Quote, token: Token) {
  const d = quote.decimals;
  return {
    order_no: order.orderNo,
    currency: order.currency,
    amount: quote.amountIdr.toString(),
    amount_crypto: formatDecimal(quote.amountCrypto, d),
    crypto_rate: quote.cryptoRate,
    fees: [
      {
        name: PLATFORM_FEE_NAME,
        fee_type: 'PERCENT',
        fee_value: quote.feePercent,
        fee_amount: quote.feeAmountIdr.toString(),
        fee_amount_crypto: formatDecimal(quote.feeAmountCrypto, d),
        is_included: quote.feeIncluded,
      },
    ],
    total_fee_amount: quote.feeAmountIdr.toString(),
    total_fee_amount_crypto: formatDecimal(quote.feeAmountCrypto, d),
    total_amount: quote.totalIdr.toString(),
    total_amount_crypto: formatDecimal(quote.totalCrypto, d),
    token_symbol: token.symbol,
    token_address: token.address,
    network: quote.network as Network,
    rate_source: quote.rateSource,
    locked_at: unix(quote.lockedAt),
  };
}

/** REST `data` of pgqr/fiat/create: the spec's QR and deposit record plus `qrValue`. */
export function depositView(r: DepositResult) {
  const { order, deposit, quote, token } = r;
  const d = token.decimals;
  return {
    request: {
      tokenName: token.symbol,
      tokenAddress: token.address,
      transactionID: order.orderNo,
      network: deposit.network,
      walletType: deposit.walletType,
      order_no: order.orderNo,
      amount: formatDecimal(quote.amountCrypto, d),
      amountFiat: quote.amountIdr.toString(),
      feeAmount: formatDecimal(quote.feeAmountCrypto, d),
      feeAmountFiat: quote.feeAmountIdr.toString(),
      feeIsIncluded: quote.feeIncluded,
      uniqueCode: formatUniqueCode(deposit.uniqueCode),
      uniqueCodeAmount: formatDecimal(deposit.uniqueCodeAmount, d),
      totalAmount: formatDecimal(deposit.totalAmount, d),
      totalAmountFiat: deposit.totalAmountFiat.toString(),
      expiredAt: unix(deposit.expiresAt),
      destinationAddress: deposit.address,
    },
    qrValue: r.qrValue,
  };
}

/** One entry of listToken. */
export function tokenView(t: Token) {
  return { symbol: t.symbol, name: t.name, network: t.network, tokenAddress: t.address, decimals: t.decimals, active: t.active };
}
