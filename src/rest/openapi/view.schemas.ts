import { z } from 'zod';
import { ENVIRONMENTS, NETWORKS } from '../../common/environment.js';
import { ORDER_STATUSES } from '../../modules/orders/order.transitions.js';
import { PAYMENT_LINK_STATUSES } from '../../modules/payment-links/payment-link.entity.js';

/*
 * The REST views (order.views.ts, merchant.views.ts, payment-link.views.ts, the sweep and settlement
 * mappers) as zod schemas, for the OpenAPI document only: strict objects, so a field added to a view
 * and not here (or removed from a view) fails the contract test (test/support/openapi-contract.ts).
 */

const unixTime = z.number().int().describe('Unix seconds');
const unixOrNull = unixTime.nullable();
const decimal = z.string().describe('A decimal number as a string (token units or IDR)');
const idr = z.string().regex(/^\d+$/).describe('Whole IDR as a string');
const network = z.enum(NETWORKS);
const environment = z.enum(ENVIRONMENTS);

export const orderSchema = z
  .object({
    order_no: z.string(),
    merchant_id: z.string().uuid(),
    amount: idr,
    currency: z.string(),
    status: z.enum(ORDER_STATUSES),
    name: z.string().nullable(),
    email: z.string().nullable(),
    source: z.string().describe('`api` or `payment_link`'),
    payment_link_id: z.string().nullable(),
    created_at: unixTime,
    expired_at: unixTime,
    paid_at: unixOrNull,
    overpaid: z.boolean(),
  })
  .meta({ id: 'Order' });

export const createdOrderSchema = z.object({
  request: orderSchema,
  url: z.string().describe('The hosted checkout page of this order (carries the scoped checkout key)'),
  key: z.string().describe('The order’s scoped checkout key: checkOrderRate, pgqr/fiat/create, getOrder and listToken for this order only'),
  expired_at: unixTime,
});

const feeLine = z.object({
  name: z.string(),
  fee_type: z.literal('PERCENT'),
  fee_value: z.string().describe('Fee rate value as a decimal string (percent for PERCENT)'),
  fee_amount: idr,
  fee_amount_crypto: decimal,
  is_included: z.boolean(),
});

export const quoteSchema = z
  .object({
    order_no: z.string(),
    currency: z.string(),
    amount: idr,
    amount_crypto: decimal,
    crypto_rate: z.string().describe('Locked rate, IDR per token unit, as a decimal string'),
    fees: z.array(feeLine),
    total_fee_amount: idr,
    total_fee_amount_crypto: decimal,
    total_amount: idr,
    total_amount_crypto: decimal,
    token_symbol: z.string(),
    token_address: z.string(),
    network,
    rate_source: z.string(),
    locked_at: unixTime,
  })
  .meta({ id: 'RateQuote' });

export const depositSchema = z
  .object({
    request: z.object({
      tokenName: z.string(),
      tokenAddress: z.string(),
      transactionID: z.string(),
      network,
      walletType: z.string(),
      order_no: z.string(),
      amount: decimal,
      amountFiat: idr,
      feeAmount: decimal,
      feeAmountFiat: idr,
      feeIsIncluded: z.boolean(),
      uniqueCode: z.string(),
      uniqueCodeAmount: decimal,
      totalAmount: decimal,
      totalAmountFiat: idr,
      expiredAt: unixTime,
      destinationAddress: z.string(),
    }),
    qrValue: z.string().describe('The payment URI shown as the QR (EIP-681 on EVM, the address on TRON, a Solana Pay URI on SOLANA)'),
  })
  .meta({ id: 'Deposit' });

const quoteSummary = z.object({
  token_address: z.string(),
  token_symbol: z.string(),
  network,
  crypto_rate: z.string().describe('Locked rate, IDR per token unit, as a decimal string'),
  rate_source: z.string(),
  fee_is_included: z.boolean(),
  amount_crypto: decimal,
  fee_amount: idr,
  fee_amount_crypto: decimal,
  total_amount: idr,
  total_amount_crypto: decimal,
  locked_at: unixTime,
});

const depositSummary = z.object({
  network,
  token_address: z.string(),
  token_symbol: z.string(),
  wallet_type: z.string(),
  destination_address: z.string(),
  unique_code: z.string(),
  total_amount: decimal,
  total_amount_fiat: idr,
  status: z.string(),
  expired_at: unixTime,
  amount_received: decimal,
});

const paymentSchema = z
  .object({
    network,
    token_address: z.string(),
    token_symbol: z.string(),
    tx_hash: z.string(),
    log_index: z.number().int(),
    block_number: z.string(),
    from: z.string().nullable(),
    to: z.string(),
    amount: decimal,
    status: z.enum(['pending', 'confirmed', 'orphaned']),
    late: z.boolean(),
    detected_at: unixTime,
    confirmed_at: unixOrNull,
  })
  .meta({ id: 'Payment' });

const receiptSchema = z.object({
  receipt_id: z.string().describe('Names the receipt in a refund (POST /merchant/fiat/refund receipt_id)'),
  address: z.string(),
  network,
  token_address: z.string().nullable().describe('Null for the network’s native coin (reason native_coin)'),
  token_symbol: z.string(),
  amount: decimal,
  tx_hash: z.string(),
  log_index: z.number().int(),
  from: z.string().nullable(),
  reason: z.string(),
  status: z.string(),
  detected_at: unixTime,
  confirmed_at: unixOrNull,
});

export const orderDetailsSchema = z
  .object({
    request: orderSchema,
    expired_at: unixTime,
    quotes: z.array(quoteSummary).describe('Every rate locked for the order'),
    deposits: z.array(depositSummary).describe('Every deposit address issued for the order'),
    payments: z.array(paymentSchema).describe('Every transfer seen into the order’s deposits (pending, confirmed, orphaned)'),
    unattributed_receipts: z.array(receiptSchema).describe('Transfers into the order’s addresses that never count toward it'),
  })
  .meta({ id: 'OrderDetails' });

export const tokenListSchema = z.object({
  tokens: z.array(
    z
      .object({ symbol: z.string(), name: z.string(), network, tokenAddress: z.string(), decimals: z.number().int(), active: z.boolean() })
      .meta({ id: 'Token' }),
  ),
});

export const merchantSchema = z
  .object({
    merchant_id: z.string().uuid(),
    name: z.string(),
    platform_fee_percent: z.string().describe('Percent as a decimal string, e.g. "1.0000"'),
    fee_included: z.boolean(),
    order_ttl_seconds: z.number().int().nullable().describe('null: the deployment’s default'),
    payment_tolerance_bps: z.number().int(),
    logo_url: z.string().nullable(),
    notification_url: z.object({ sandbox: z.string().nullable(), production: z.string().nullable() }),
    created_at: unixTime,
  })
  .meta({ id: 'Merchant' });

export const merchantMeSchema = merchantSchema.extend({ environment });

export const tokenPairSchema = z.object({
  token: z.string().describe('Access token (JWT): `Authorization: Bearer <token>`'),
  refresh_token: z.string(),
  token_type: z.string(),
  expires_in: z.number().int(),
  expired_at: z.number().int(),
  refresh_expired_at: z.number().int(),
});

export const meSchema = z.object({
  user: z.object({ user_id: z.string(), email: z.string(), role: z.string(), user_type: z.literal('merchant') }),
  merchant: merchantSchema,
});

const teamRole = z.enum(['owner', 'admin', 'developer', 'finance', 'viewer']);
export const membershipSchema = z.object({
  merchant_id: z.string(),
  merchant_name: z.string(),
  role: teamRole,
  joined_at: z.number().int(),
  active: z.boolean(),
});
export const teamMemberSchema = z.object({ user_id: z.string(), email: z.string(), role: teamRole, joined_at: z.number().int() });
export const teamInviteSchema = z.object({
  invite_id: z.string(),
  email: z.string(),
  role: teamRole,
  status: z.enum(['pending', 'expired', 'accepted', 'revoked']),
  invited_by: z.string().nullable(),
  created_at: z.number().int(),
  expired_at: z.number().int(),
});
export const createdInviteSchema = teamInviteSchema.extend({
  invite_url: z.string().nullable().describe('The link, only when no SMTP server is configured outside production; otherwise null (it was mailed)'),
});
export const acceptedInviteSchema = z.object({
  merchant_id: z.string(),
  merchant_name: z.string(),
  email: z.string(),
  role: teamRole,
  account_created: z.boolean(),
});

const productSchema = z.object({ name: z.string(), price: z.union([z.string(), z.number()]), quantity: z.number().int() }).loose();

export const paymentLinkSchema = z
  .object({
    payment_link_id: z.string(),
    merchant_id: z.string().uuid(),
    environment,
    title: z.string(),
    link: z.string().describe('The public checkout URL of the link'),
    products: z.array(productSchema),
    total_price: idr,
    currency: z.string(),
    status: z.enum(PAYMENT_LINK_STATUSES),
    usage_count: z.number().int(),
    max_usage: z.number().int(),
    remaining: z.number().int(),
    expiration_time: z.number().int(),
    success_url: z.string().nullable(),
    cancel_url: z.string().nullable(),
    auto_redirect: z.boolean().nullable(),
    expired_at: unixTime,
    created_at: unixTime,
    updated_at: unixTime,
  })
  .meta({ id: 'PaymentLink' });

export const paymentLinkPageSchema = z
  .object({
    items: z.array(paymentLinkSchema),
    total: z.number().int().describe('Links matching, across pages'),
    limit: z.number().int(),
    offset: z.number().int(),
  })
  .meta({ id: 'PaymentLinkPage' });

export const paymentLinkValidationSchema = z.object({
  payment_link_id: z.string(),
  status: z.enum(PAYMENT_LINK_STATUSES),
  valid: z.boolean(),
  unusable: z.enum(['inactive', 'expired', 'exhausted']).nullable().meta({ description: 'Why the link cannot be opened now; null when valid' }),
  title: z.string(),
  products: z.array(productSchema),
  total_price: idr,
  currency: z.string(),
  remaining: z.number().int(),
  usage_count: z.number().int(),
  max_usage: z.number().int(),
  expired_at: unixTime,
});

export const openedLinkSchema = z.object({
  request: orderSchema,
  expired_at: unixTime,
  api_key: z.string().describe('The new order’s scoped checkout key'),
});

const walletRecord = z.object({
  settlement_wallet_id: z.string(),
  address: z.string(),
  active_from: unixTime,
  set_at: unixTime,
  set_by: z.string().nullable(),
  replaced_at: unixOrNull,
});

export const settlementWalletSchema = z
  .object({ environment, network, current: walletRecord.nullable(), pending: walletRecord.nullable(), history: z.array(walletRecord) })
  .meta({ id: 'SettlementWallet' });

const amountPair = (name: string) => ({ [name]: decimal, [`${name}_units`]: z.string() }) as Record<string, z.ZodString>;

export const sweepBalanceSchema = z.object({
  network,
  token_symbol: z.string(),
  token_address: z.string(),
  decimals: z.number().int(),
  ...amountPair('received'),
  ...amountPair('swept'),
  ...amountPair('waiting'),
  ...amountPair('in_flight'),
  ...amountPair('held'),
  held_reason: z.string().nullable(),
});

export const sweepHoldSchema = z.object({
  deposit_id: z.string(),
  order_no: z.string(),
  network,
  token_symbol: z.string(),
  token_address: z.string(),
  ...amountPair('amount'),
  reason: z.string(),
  ...amountPair('estimated_fee'),
  fee_asset: z.string(),
  checked_at: unixTime,
});

export const sweepSchema = z
  .object({
    sweep_id: z.string(),
    network,
    deposit_id: z.string(),
    token_symbol: z.string(),
    token_address: z.string(),
    to_address: z.string(),
    amount: decimal.nullable(),
    amount_units: z.string().nullable(),
    status: z.string(),
    failure_reason: z.string().nullable(),
    trigger: z.string(),
    tx_hash: z.string().nullable(),
    fee_paid_units: z.string(),
    fee_asset: z.string().nullable().meta({ description: 'The native coin the fee was paid in; null until the sweep has paid one' }),
    created_at: unixTime,
    updated_at: unixTime,
    sent_at: unixOrNull,
    confirmed_at: unixOrNull,
  })
  .meta({ id: 'Sweep' });

export const sweepPageSchema = z.object({ items: z.array(sweepSchema), total: z.number().int(), limit: z.number().int(), offset: z.number().int() });
export const sweepRequestsSchema = z.object({
  requests: z.array(z.object({ sweep_request_id: z.string(), network, deposit_ids: z.array(z.string()).nullable(), created_at: unixTime })),
});
export const sweepSettingsSchema = z.object({ environment, interval_seconds: z.number().int(), enabled: z.boolean(), updated_at: unixOrNull });

export const networksSchema = z.object({
  networks: z.array(
    z.object({
      name: network,
      chain_id: z.number().int().nullable(),
      rpc_url: z.string().nullable(),
      confirmations: z.number().int(),
      tokens: z.array(z.object({ symbol: z.string(), name: z.string(), address: z.string(), decimals: z.number().int() })),
    }),
  ),
});

export const faucetSchema = z.object({ address: z.string(), network, transfers: z.array(z.object({}).loose()), warnings: z.array(z.string()) });

/** `data` of every error answer: the stable code plus details (field messages, retry hints). */
export const errorDataSchema = (codes: readonly string[]) => z.object({ code: z.enum(codes as [string, ...string[]]) }).loose();

export const refundSchema = z
  .object({
    refund_id: z.string(),
    order_no: z.string(),
    receipt_id: z.string().nullable().describe('The unattributed receipt refunded; null: the order’s payments'),
    deposit_id: z.string(),
    network,
    kind: z.string().describe('overpayment_excess | late_receipt | wrong_token | partial_payment | merchant'),
    reason: z.string().nullable(),
    status: z.string().describe('requested → claimed → approved → sending → confirmed, or cancelled / failed'),
    failure_reason: z.string().nullable(),
    token_symbol: z.string(),
    token_address: z.string(),
    decimals: z.number().int(),
    amount: decimal,
    amount_units: z.string(),
    sent_amount_units: z.string().nullable().describe('What the customer receives (amount less a deducted fee); null until signed'),
    fee_mode: z.string().describe('tank | deduct'),
    fee_deducted_units: z.string(),
    to_address: z.string().nullable(),
    address_source: z.string().nullable().describe('claim | merchant'),
    source: z.string().nullable().describe('deposit | refund_wallet'),
    from_address: z.string().nullable(),
    tx_hash: z.string().nullable(),
    requested_by: z.string(),
    approved_by: z.string().nullable(),
    created_at: unixTime,
    claimed_at: unixOrNull,
    approved_at: unixOrNull,
    sent_at: unixOrNull,
    confirmed_at: unixOrNull,
    cancelled_at: unixOrNull,
  })
  .meta({ id: 'Refund' });
export const createdRefundSchema = z.object({
  request: refundSchema,
  claim_url: z.string().nullable().describe('The customer’s claim link (shown once); null when the address was given'),
});
export const refundPageSchema = z.object({ items: z.array(refundSchema), total: z.number().int(), limit: z.number().int(), offset: z.number().int() });
