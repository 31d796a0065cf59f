import { Field, ID, InputType, Int, ObjectType } from 'type-graphql';
import type { Environment, Network, WalletType } from '../../common/environment.js';
import { formatDecimal } from '../../common/money.js';
import { nativeAsset } from '../../chains/registry.js';
import { NetworkEnum, OrderStatusEnum, WalletTypeEnum } from '../../graphql/scalars.js';
import { PageInfo } from '../../graphql/connection.js';
import type { Deposit } from '../deposits/deposit.entity.js';
import type { Payment } from '../payments/payment.entity.js';
import type { UnattributedReceipt } from '../payments/unattributed-receipt.entity.js';
import { formatUniqueCode } from '../deposits/unique-code.js';
import type { Quote } from '../quotes/quote.entity.js';
import type { Token } from '../tokens/token.entity.js';
import type { OrderRecord } from './order.entity.js';
import type { OrderStatus } from './order.transitions.js';

@ObjectType('Token')
export class TokenType {
  @Field() symbol!: string;
  @Field() name!: string;
  @Field(() => NetworkEnum) network!: Network;
  @Field({ description: 'Contract (EVM/TRON) or mint (SOLANA) address' }) address!: string;
  @Field(() => Int) decimals!: number;
  @Field() active!: boolean;
}

@ObjectType()
export class FeeLine {
  @Field() name!: string;
  @Field() feeType!: string;
  @Field({ description: 'Percent for PERCENT fees' }) feeValue!: string;
  @Field({ description: 'IDR' }) feeAmount!: string;
  @Field({ description: 'Token units (decimal string)' }) feeAmountCrypto!: string;
  @Field() isIncluded!: boolean;
}

@ObjectType('Quote')
export class QuoteType {
  @Field(() => NetworkEnum) network!: Network;
  @Field() tokenAddress!: string;
  @Field() tokenSymbol!: string;
  @Field(() => Int) decimals!: number;
  @Field({ description: 'IDR per token, locked' }) cryptoRate!: string;
  @Field({ description: 'Market source id, or "fallback"' }) rateSource!: string;
  @Field({ description: 'IDR' }) amount!: string;
  @Field({ description: 'Token units' }) amountCrypto!: string;
  @Field(() => [FeeLine]) fees!: FeeLine[];
  @Field() totalFeeAmount!: string;
  @Field() totalFeeAmountCrypto!: string;
  @Field({ description: 'IDR the customer pays (before the unique code)' }) totalAmount!: string;
  @Field() totalAmountCrypto!: string;
  @Field() lockedAt!: Date;
}

@ObjectType('Deposit')
export class DepositType {
  @Field(() => ID, { description: 'The deposit (a refund of its payments may name it: createRefund depositId)' }) id!: string;
  @Field(() => NetworkEnum) network!: Network;
  @Field() tokenName!: string;
  @Field() tokenAddress!: string;
  @Field(() => Int, { description: 'Decimals of the token (base units per token unit = 10^decimals)' }) decimals!: number;
  @Field(() => WalletTypeEnum) walletType!: WalletType;
  @Field() destinationAddress!: string;
  @Field({ description: '3 digits' }) uniqueCode!: string;
  @Field({ description: 'Token units added for the unique code' }) uniqueCodeAmount!: string;
  @Field({ description: 'Token units before the unique code' }) amount!: string;
  @Field() amountFiat!: string;
  @Field() feeAmount!: string;
  @Field() feeAmountFiat!: string;
  @Field() feeIsIncluded!: boolean;
  @Field({ description: 'Token units to send, exactly' }) totalAmount!: string;
  @Field({ description: 'totalAmount in base units (integer string)' }) totalAmountBaseUnits!: string;
  @Field() totalAmountFiat!: string;
  @Field() expiresAt!: Date;
  @Field() status!: string;
  @Field({ description: 'Confirmed token units counted for this deposit (decimal string)' }) amountReceived!: string;
}

@ObjectType('Payment')
export class PaymentType {
  @Field(() => ID) id!: string;
  @Field({ description: 'The order it paid' }) orderNo!: string;
  @Field(() => NetworkEnum) network!: Network;
  @Field() tokenAddress!: string;
  @Field() tokenSymbol!: string;
  @Field() txHash!: string;
  @Field(() => Int, { description: 'Log index (EVM/TRON) or instruction index (SOLANA)' }) logIndex!: number;
  @Field({ description: 'Block number or slot' }) blockNumber!: string;
  @Field() from!: string;
  @Field() to!: string;
  @Field({ description: 'Token units' }) amount!: string;
  @Field({ description: 'pending | confirmed | orphaned (orphaned never counts)' }) status!: string;
  @Field({ description: 'Detected after the order expired' }) late!: boolean;
  @Field() detectedAt!: Date;
  @Field(() => Date, { nullable: true }) confirmedAt!: Date | null;
  /** Not a field: where `explorerUrl` looks the transaction up. */
  environment!: Environment;
}

@ObjectType('UnattributedReceipt', { description: 'A transfer into a deposit address that never counts toward the order' })
export class UnattributedReceiptType {
  @Field(() => ID, { description: 'The receipt (a refund of it names it: createRefund receiptId)' }) id!: string;
  @Field({ description: 'Deposit address it arrived at' }) address!: string;
  @Field(() => NetworkEnum, { description: 'Network it happened on' }) network!: Network;
  @Field(() => String, { nullable: true, description: 'Token that arrived; null for the network’s native coin (reason native_coin)' }) tokenAddress!:
    string | null;
  @Field({ description: 'Symbol of the token, or of the native coin (ETH, BNB, TRX, SOL)' }) tokenSymbol!: string;
  @Field({ description: 'Token units (decimal string) of the token or native coin that arrived' }) amount!: string;
  @Field() txHash!: string;
  @Field(() => Int, { description: 'Log index in the transaction; -1 for native coin sent by the transaction’s own value' }) logIndex!: number;
  @Field() from!: string;
  @Field({ description: 'late (after the deposit closed) | wrong_token | wrong_network | native_coin' }) reason!: string;
  @Field({ description: 'pending | confirmed' }) status!: string;
  @Field() detectedAt!: Date;
  @Field(() => Date, { nullable: true }) confirmedAt!: Date | null;
}

@ObjectType('Order')
export class OrderType {
  @Field() id!: string;
  @Field() orderNo!: string;
  @Field() merchantId!: string;
  @Field({ description: 'IDR, whole rupiah' }) amount!: string;
  @Field() currency!: string;
  @Field(() => OrderStatusEnum) status!: OrderStatus;
  @Field(() => String, { nullable: true }) customerName!: string | null;
  @Field(() => String, { nullable: true }) customerEmail!: string | null;
  @Field() source!: string;
  @Field(() => String, { nullable: true }) paymentLinkId!: string | null;
  @Field() createdAt!: Date;
  @Field() expiresAt!: Date;
  @Field(() => Date, { nullable: true }) paidAt!: Date | null;
  @Field({ description: 'Confirmed receipts exceeded the total due (the excess is recorded)' }) overpaid!: boolean;
  @Field({ description: 'Paid after its expiry (within the late window)' }) late!: boolean;
  @Field(() => NetworkEnum, { nullable: true, description: 'Network of the deposit that paid the order' }) paidNetwork!: Network | null;
  @Field(() => String, { nullable: true, description: 'Token (contract or mint address) of the deposit that paid the order' }) paidTokenAddress!: string | null;
  @Field(() => String, { nullable: true }) paidTokenSymbol!: string | null;
  @Field(() => String, { nullable: true, description: 'Token units received on the paying deposit (decimal string)' }) paidAmount!: string | null;
  @Field(() => String, {
    nullable: true,
    description: 'IDR actually received: confirmed payments at the locked rate (null until something arrived; docs/analytics.md "Revenue")',
  })
  receivedAmount!: string | null;
  @Field(() => String, { nullable: true, description: 'Platform fee, IDR, on the money received only (a half-paid order: half the fee)' }) fee!: string | null;
  @Field(() => String, {
    nullable: true,
    description: 'What the merchant keeps of the money received, IDR: received − fee (paid in full: amount − fee when the fee is included, else amount)',
  })
  netAmount!: string | null;
  @Field(() => [QuoteType]) quotes!: QuoteType[];
  @Field(() => [DepositType]) deposits!: DepositType[];
  @Field(() => [PaymentType], { description: 'Every transfer seen into the deposits' }) payments!: PaymentType[];
  @Field(() => [UnattributedReceiptType], {
    description: 'Transfers into the deposit addresses that never count: after the deposit closed, another token, another network',
  })
  unattributedReceipts!: UnattributedReceiptType[];
}

@ObjectType()
export class CreatedOrder {
  @Field(() => OrderType) order!: OrderType;
  @Field({ description: 'Hosted checkout page, scoped key embedded as `key`' }) url!: string;
  @Field({ description: 'Scoped checkout key (30 minutes, this order only); shown once' }) key!: string;
  @Field({ description: 'Order expiry' }) expiresAt!: Date;
  @Field({ description: 'True when an idempotency key matched an earlier request: the original order, with a fresh checkout key' }) replayed!: boolean;
}

@ObjectType()
export class DepositPayload {
  @Field(() => DepositType) deposit!: DepositType;
  @Field({ description: 'QR content: EIP-681 URI, wallet deep link or Solana Pay URL' }) qrValue!: string;
}

@ObjectType()
export class OrderEdge {
  @Field() cursor!: string;
  @Field(() => OrderType) node!: OrderType;
}

@ObjectType({ description: 'A page of orders (Relay connection)' })
export class OrderConnection {
  @Field(() => [OrderEdge]) edges!: OrderEdge[];
  @Field(() => PageInfo) pageInfo!: PageInfo;
  /** Counts the filtered orders (one statement), only when `totalCount` is selected. */
  count!: () => Promise<number>;
  @Field(() => [OrderType], { deprecationReason: 'Use edges { node }' }) nodes!: OrderType[];
  @Field(() => String, { nullable: true, deprecationReason: 'Use pageInfo { endCursor hasNextPage }' }) nextCursor!: string | null;
}

@InputType()
export class CreateOrderInput {
  @Field() orderNo!: string;
  @Field({ description: 'IDR, whole rupiah, as a string' }) amount!: string;
  @Field(() => String, { nullable: true }) name?: string | null;
  @Field(() => String, { nullable: true }) email?: string | null;
  @Field(() => String, { nullable: true, description: 'Hosted checkout: "Return to shop" after payment (https in production, max 2048)' }) successUrl?:
    string | null;
  @Field(() => String, { nullable: true, description: 'Hosted checkout: "Return to shop" when not paid (https in production, max 2048)' }) cancelUrl?:
    string | null;
  @Field(() => Boolean, { nullable: true, description: 'Hosted checkout: go to successUrl by itself a few seconds after payment' }) autoRedirect?:
    boolean | null;
}

export const toTokenType = (t: Token): TokenType => ({
  symbol: t.symbol,
  name: t.name,
  network: t.network,
  address: t.address,
  decimals: t.decimals,
  active: t.active,
});

export function toQuoteType(q: Quote): QuoteType {
  const d = q.decimals;
  return {
    network: q.network,
    tokenAddress: q.token.address,
    tokenSymbol: q.token.symbol,
    decimals: d,
    cryptoRate: q.cryptoRate,
    rateSource: q.rateSource,
    amount: q.amountIdr.toString(),
    amountCrypto: formatDecimal(q.amountCrypto, d),
    fees: [
      {
        name: 'Platform fee',
        feeType: 'PERCENT',
        feeValue: q.feePercent,
        feeAmount: q.feeAmountIdr.toString(),
        feeAmountCrypto: formatDecimal(q.feeAmountCrypto, d),
        isIncluded: q.feeIncluded,
      },
    ],
    totalFeeAmount: q.feeAmountIdr.toString(),
    totalFeeAmountCrypto: formatDecimal(q.feeAmountCrypto, d),
    totalAmount: q.totalIdr.toString(),
    totalAmountCrypto: formatDecimal(q.totalCrypto, d),
    lockedAt: q.lockedAt,
  };
}

export function toDepositType(dep: Deposit, q: Quote, token: Token): DepositType {
  const d = token.decimals;
  return {
    id: dep.id,
    network: dep.network,
    tokenName: token.symbol,
    tokenAddress: token.address,
    decimals: d,
    walletType: dep.walletType,
    destinationAddress: dep.address,
    uniqueCode: formatUniqueCode(dep.uniqueCode),
    uniqueCodeAmount: formatDecimal(dep.uniqueCodeAmount, d),
    amount: formatDecimal(q.amountCrypto, d),
    amountFiat: q.amountIdr.toString(),
    feeAmount: formatDecimal(q.feeAmountCrypto, d),
    feeAmountFiat: q.feeAmountIdr.toString(),
    feeIsIncluded: q.feeIncluded,
    totalAmount: formatDecimal(dep.totalAmount, d),
    totalAmountBaseUnits: dep.totalAmount.toString(),
    totalAmountFiat: dep.totalAmountFiat.toString(),
    expiresAt: dep.expiresAt,
    status: dep.status,
    amountReceived: formatDecimal(dep.amountReceived, d),
  };
}

/** `orderNo`: the order's number (a payment holds only the order's id). */
export const toPaymentType = (p: Payment, orderNo: string): PaymentType => ({
  id: p.id,
  orderNo,
  network: p.network,
  tokenAddress: p.token.address,
  tokenSymbol: p.token.symbol,
  txHash: p.txHash,
  logIndex: p.logIndex,
  blockNumber: String(p.blockNumber),
  from: p.fromAddress,
  to: p.toAddress,
  amount: formatDecimal(p.amount, p.token.decimals),
  status: p.status,
  late: p.late,
  detectedAt: p.detectedAt,
  confirmedAt: p.confirmedAt,
  environment: p.environment,
});

export const toReceiptType = (r: UnattributedReceipt): UnattributedReceiptType => ({
  id: r.id,
  address: r.toAddress,
  network: r.network,
  tokenAddress: r.token?.address ?? null,
  tokenSymbol: r.token?.symbol ?? nativeAsset(r.network).symbol,
  amount: formatDecimal(r.amount, r.token?.decimals ?? nativeAsset(r.network).decimals),
  txHash: r.txHash,
  logIndex: r.logIndex,
  from: r.fromAddress,
  reason: r.reason,
  status: r.status,
  detectedAt: r.detectedAt,
  confirmedAt: r.confirmedAt,
});

export function toOrderType(
  o: OrderRecord,
  quotes: Quote[] = [],
  deposits: Deposit[] = [],
  payments: Payment[] = [],
  receipts: UnattributedReceipt[] = [],
  paidToken: Token | null = null,
): OrderType {
  const quoteOf = (dep: Deposit) => quotes.find((q) => q.id === dep.quote.id);
  return {
    id: o.id,
    orderNo: o.orderNo,
    merchantId: o.merchant.id,
    amount: o.amount.toString(),
    currency: o.currency,
    status: o.status,
    customerName: o.customerName,
    customerEmail: o.customerEmail,
    source: o.source,
    paymentLinkId: o.paymentLinkId,
    createdAt: o.createdAt,
    expiresAt: o.expiresAt,
    paidAt: o.paidAt,
    overpaid: o.overpaid ?? false,
    late: o.paidAt !== null && o.paidAt > o.expiresAt,
    paidNetwork: o.paidNetwork ?? null,
    paidTokenAddress: paidToken?.address ?? null,
    paidTokenSymbol: paidToken?.symbol ?? null,
    paidAmount: o.paidAmount != null && o.paidDecimals != null ? formatDecimal(o.paidAmount, o.paidDecimals) : null,
    receivedAmount: o.receivedIdr?.toString() ?? null,
    fee: o.feeIdr?.toString() ?? null,
    netAmount: o.netIdr?.toString() ?? null,
    quotes: quotes.map(toQuoteType),
    payments: payments.map((p) => toPaymentType(p, o.orderNo)),
    unattributedReceipts: receipts.map(toReceiptType),
    deposits: deposits.flatMap((dep) => {
      const q = quoteOf(dep);
      return q ? [toDepositType(dep, q, dep.token)] : [];
    }),
  };
}

@ObjectType()
export class TokenAmount {
  @Field(() => NetworkEnum) network!: Network;
  @Field() tokenAddress!: string;
  @Field() tokenSymbol!: string;
  @Field({ description: 'Token units (decimal string)' }) amount!: string;
}

@ObjectType({ description: 'One bucket of orderStats: its keys (null when not grouped by them) and its sums' })
export class OrderStatsBucket {
  @Field(() => String, { nullable: true, description: 'Local day (YYYY-MM-DD) in the asked time zone, when grouped by DAY' }) day!: string | null;
  @Field(() => Date, { nullable: true, description: 'Start of the local hour, when grouped by HOUR' }) hour!: Date | null;
  @Field(() => OrderStatusEnum, { nullable: true }) status!: OrderStatus | null;
  @Field(() => NetworkEnum, { nullable: true, description: 'Paying network (null: unpaid orders)' }) network!: Network | null;
  @Field(() => String, { nullable: true, description: 'Paying token (null: unpaid orders)' }) tokenAddress!: string | null;
  @Field(() => String, { nullable: true }) tokenSymbol!: string | null;
  @Field(() => Int, { description: 'Orders created in the bucket' }) count!: number;
  @Field({ description: 'IDR of every order in the bucket' }) amount!: string;
  @Field(() => Int, { description: 'Paid (Success) orders' }) paidCount!: number;
  @Field({ description: 'IDR of the paid orders' }) paidAmount!: string;
  @Field({ description: 'IDR actually received (confirmed payments, whatever the status; docs/analytics.md "Revenue")' }) receivedAmount!: string;
  @Field({ description: 'Platform fees on the money received, IDR' }) fee!: string;
  @Field({ description: 'What the merchant keeps of the money received, IDR (received − fee)' }) netAmount!: string;
  @Field(() => [TokenAmount], { description: 'Token units received, per paying token' }) tokenAmounts!: TokenAmount[];
}
