import { z } from 'zod';
import type { ErrorCode } from '../../common/errors.js';
import { NETWORKS } from '../../common/environment.js';
import { loginBody, refreshBody, secondFactorBody, secondStepBody } from '../auth.mappers.js';
import { settingsBody } from '../merchant.mappers.js';
import { checkOrderRateBody, createOrderBody, createQrBody, getOrderBody } from '../order.mappers.js';
import { createPaymentLinkBody, openPaymentLinkBody, updatePaymentLinkBody } from '../payment-link.mappers.js';
import { createRefundBody, refundIdBody } from '../refund.mappers.js';
import { setSettlementWalletBody } from '../settlement-wallet.mappers.js';
import { acceptInviteBody, changeRoleBody, inviteBody, switchMerchantBody } from '../team.mappers.js';
import * as v from './view.schemas.js';

/**
 * What the route table (src/rest/*.routes.ts) cannot say about a route, keyed `METHOD url` as the
 * route declares it: its request and response schemas (zod), its own error codes, a summary. The
 * OpenAPI document (openapi.document.ts) is generated from the route table plus these entries; a
 * route without an entry fails the generator, so every new route is documented in the same change.
 */
export interface RouteDoc {
  /** Base of the operationId (environment routes get `Testnet`/`Mainnet` appended). */
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  body?: z.ZodType;
  query?: z.ZodType;
  /** The envelope's `data` on success. */
  data?: z.ZodType;
  /** A non-JSON success body (QR image, CSV): content types. */
  raw?: string[];
  /** Error codes this route answers besides the ones its auth mode, body and rate limit bring. */
  errors: ErrorCode[];
  /** The route takes an `Idempotency-Key` header. */
  idempotencyKey?: boolean;
}

export interface DocLimits {
  orderMinIdr: number;
  orderMaxIdr: number;
}

const network = z.enum(NETWORKS);
const page = { limit: z.coerce.number().int().min(1).max(100).optional(), offset: z.coerce.number().int().min(0).optional() };
const ORDER_FLOW: ErrorCode[] = ['MERCHANT_MISMATCH', 'ORDER_NOT_FOUND'];
const QUOTE_ERRORS: ErrorCode[] = [
  ...ORDER_FLOW,
  'ORDER_CLOSED',
  'ORDER_EXPIRED',
  'TOKEN_NOT_FOUND',
  'TOKEN_NOT_SUPPORTED',
  'NETWORK_NOT_WATCHED',
  'RATE_UNAVAILABLE',
];
const DEPOSIT_ERRORS: ErrorCode[] = [...QUOTE_ERRORS, 'QUOTE_NOT_LOCKED', 'WALLET_NETWORK_MISMATCH'];
const LINK_ERRORS: ErrorCode[] = ['PAYMENT_LINK_NOT_FOUND', 'MERCHANT_MISMATCH', 'NOT_FOUND'];

export function routeDocs(limits: DocLimits): Record<string, RouteDoc> {
  return {
    // --- auth (global) ---
    'POST /auth/login': {
      operationId: 'login',
      tag: 'Auth',
      summary: 'Dashboard sign-in: an access token (JWT) and a refresh token',
      description:
        'A user with a second factor gets no tokens here: 403 SECOND_FACTOR_REQUIRED whose `data` carries `challenge_token` (valid 5 minutes, 5 wrong answers), `challenge_expired_at` (Unix seconds) and `methods` (totp, passkey, recovery_code); POST /auth/login/second-factor finishes the sign-in.',
      body: loginBody,
      data: v.tokenPairSchema,
      errors: ['INVALID_CREDENTIALS', 'NO_MEMBERSHIP', 'SECOND_FACTOR_REQUIRED'],
    },
    'POST /auth/login/second-factor': {
      operationId: 'loginSecondFactor',
      tag: 'Auth',
      summary:
        'The login’s second step: the challenge token and one of totp_code, recovery_code or passkey (a WebAuthn assertion; its options come from GraphQL loginPasskeyOptions)',
      body: secondStepBody,
      data: v.tokenPairSchema,
      errors: ['CHALLENGE_EXPIRED', 'INVALID_SECOND_FACTOR', 'SECOND_FACTOR_REUSED', 'NO_MEMBERSHIP'],
    },
    'POST /auth/refresh': {
      operationId: 'refreshToken',
      tag: 'Auth',
      summary: 'Rotate the refresh token (a reused one revokes the session)',
      body: refreshBody,
      data: v.tokenPairSchema,
      errors: ['INVALID_TOKEN', 'SESSION_REVOKED', 'REFRESH_TOKEN_REUSED'],
    },
    'POST /auth/reauthenticate': {
      operationId: 'reauthenticate',
      tag: 'Auth',
      summary:
        'Give the password again — and the second factor, when the user has one: sensitive operations on this session (rotate an API key, notification URL, sweep schedule, …) for REAUTH_WINDOW_S',
      body: secondFactorBody.extend({ password: z.string() }),
      data: z.object({
        reauthenticated_until: z.number().int().meta({ description: 'Unix seconds' }),
        second_factor: z.enum(['totp', 'recovery_code', 'passkey']).nullable().meta({ description: 'The second factor given, or null for a user without one' }),
      }),
      errors: ['INVALID_PASSWORD', 'SECOND_FACTOR_REQUIRED', 'INVALID_SECOND_FACTOR', 'SECOND_FACTOR_REUSED', 'CHALLENGE_EXPIRED'],
    },
    'POST /auth/logout': { operationId: 'logout', tag: 'Auth', summary: 'Revoke the session server-side', data: z.object({}), errors: [] },
    'GET /auth/me': { operationId: 'me', tag: 'Auth', summary: 'The signed-in user and their merchant', data: v.meSchema, errors: ['MERCHANT_NOT_FOUND'] },
    'GET /auth/memberships': {
      operationId: 'memberships',
      tag: 'Team',
      summary: 'The merchants the signed-in user belongs to, with the role in each (`active`: this session’s)',
      data: z.array(v.membershipSchema),
      errors: [],
    },
    'POST /auth/switch-merchant': {
      operationId: 'switchMerchant',
      tag: 'Team',
      summary: 'A new token pair acting for another of the user’s merchants; the current session stays valid',
      body: switchMerchantBody,
      data: v.tokenPairSchema,
      errors: ['NOT_A_MEMBER'],
    },
    'GET /team/members': {
      operationId: 'teamMembers',
      tag: 'Team',
      summary: 'Members of the session’s merchant (team.read)',
      data: z.array(v.teamMemberSchema),
      errors: [],
    },
    'PUT /team/members/:user_id': {
      operationId: 'changeTeamMemberRole',
      tag: 'Team',
      summary: 'A member’s new role (team.manage; to or from owner: team.ownership); needs reauthenticate',
      body: changeRoleBody,
      data: v.teamMemberSchema,
      errors: ['MEMBER_NOT_FOUND', 'LAST_OWNER'],
    },
    'DELETE /team/members/:user_id': {
      operationId: 'removeTeamMember',
      tag: 'Team',
      summary: 'Remove a member; their sessions for this merchant end at once (team.manage; an owner: team.ownership); needs reauthenticate',
      data: v.teamMemberSchema,
      errors: ['VALIDATION_FAILED', 'MEMBER_NOT_FOUND', 'LAST_OWNER'],
    },
    'GET /team/invites': {
      operationId: 'teamInvites',
      tag: 'Team',
      summary: 'Invites neither accepted nor revoked, newest first (team.read)',
      data: z.array(v.teamInviteSchema),
      errors: [],
    },
    'POST /team/invites': {
      operationId: 'inviteTeamMember',
      tag: 'Team',
      summary: 'Mail a single-use invite link giving a role (team.manage; an owner invite: team.ownership); needs reauthenticate',
      body: inviteBody,
      data: v.createdInviteSchema,
      errors: ['ALREADY_A_MEMBER', 'MAIL_FAILED', 'MAIL_UNAVAILABLE'],
    },
    'DELETE /team/invites/:invite_id': {
      operationId: 'revokeTeamInvite',
      tag: 'Team',
      summary: 'Revoke a pending invite (team.manage); needs reauthenticate',
      data: v.teamInviteSchema,
      errors: ['VALIDATION_FAILED', 'INVITE_NOT_FOUND'],
    },
    'POST /team/invites/accept': {
      operationId: 'acceptTeamInvite',
      tag: 'Team',
      summary: 'Accept an invite with the token from its link: a new email gets an account with `password`, an existing account gives its own password',
      body: acceptInviteBody,
      data: v.acceptedInviteSchema,
      errors: ['INVALID_INVITE', 'INVITE_USED', 'INVITE_REVOKED', 'INVITE_EXPIRED', 'INVALID_PASSWORD'],
    },
    'PUT /merchant/settings': {
      operationId: 'updateMerchantSettings',
      tag: 'Merchant',
      summary: 'Change the merchant’s settings (owner or admin)',
      body: settingsBody,
      data: v.merchantSchema,
      errors: ['MERCHANT_NOT_FOUND'],
    },

    // --- merchant server (environment) ---
    'GET /merchant/me': {
      operationId: 'merchantMe',
      tag: 'Merchant',
      summary: 'The merchant the API key belongs to, and the path’s environment',
      data: v.merchantMeSchema,
      errors: ['MERCHANT_NOT_FOUND'],
    },
    'POST /merchant/fiat/order': {
      operationId: 'createOrder',
      tag: 'Orders',
      summary: 'Create an order priced in IDR',
      description: `Amount between ${limits.orderMinIdr} and ${limits.orderMaxIdr} IDR. Answers the order, its hosted checkout URL and its scoped checkout key. With \`Idempotency-Key\` a retry of the same body answers the same order (\`Idempotent-Replayed: true\`); the same key with another body is IDEMPOTENCY_KEY_REUSED; a second request with a key whose first request is still being processed is IDEMPOTENCY_KEY_IN_FLIGHT (409, retry later).`,
      body: createOrderBody(limits.orderMinIdr, limits.orderMaxIdr),
      data: v.createdOrderSchema,
      errors: ['MERCHANT_MISMATCH', 'DUPLICATE_ORDER_NO', 'IDEMPOTENCY_KEY_REUSED', 'IDEMPOTENCY_KEY_IN_FLIGHT', 'CONFLICT', 'NO_NETWORK_WATCHED'],
      idempotencyKey: true,
    },
    'POST /merchant/fiat/checkOrderRate': {
      operationId: 'checkOrderRate',
      tag: 'Orders',
      summary: 'Lock the rate of an order for a token on a network (the fee lines and totals)',
      body: checkOrderRateBody,
      data: v.quoteSchema,
      errors: QUOTE_ERRORS,
    },
    'POST /pgqr/fiat/create': {
      operationId: 'createQr',
      tag: 'Orders',
      summary: 'Issue the deposit address and payment QR for the locked rate',
      body: createQrBody,
      data: v.depositSchema,
      errors: DEPOSIT_ERRORS,
    },
    'POST /merchant/fiat/getOrder': {
      operationId: 'getOrder',
      tag: 'Orders',
      summary: 'An order with its rate locks, deposits, payments and unattributed receipts',
      body: getOrderBody,
      data: v.orderDetailsSchema,
      errors: ORDER_FLOW,
    },
    'GET /pgqr/fiat/qr': {
      operationId: 'qrImage',
      tag: 'Orders',
      summary: 'The deposit’s QR as an image (PNG, or SVG with format=svg)',
      query: createQrBody.extend({
        format: z.enum(['png', 'svg']).optional(),
        key: z.string().optional().describe('The scoped checkout key, when not sent as the api-key header'),
      }),
      raw: ['image/png', 'image/svg+xml'],
      errors: [...DEPOSIT_ERRORS, 'VALIDATION_FAILED'],
    },
    'GET /listToken': { operationId: 'listToken', tag: 'Orders', summary: 'The tokens an order can be paid in', data: v.tokenListSchema, errors: [] },

    // --- payment links ---
    'POST /merchant/payment-link': {
      operationId: 'createPaymentLink',
      tag: 'Payment links',
      summary: 'Create a payment link (owner or admin)',
      body: createPaymentLinkBody(limits.orderMinIdr, limits.orderMaxIdr),
      data: v.paymentLinkSchema,
      errors: ['MERCHANT_MISMATCH'],
    },
    'GET /merchant/payment-link': {
      operationId: 'listPaymentLinks',
      tag: 'Payment links',
      summary: 'The merchant’s payment links in this environment, newest first',
      query: z.object(page),
      data: v.paymentLinkPageSchema,
      errors: ['VALIDATION_FAILED'],
    },
    'GET /merchant/payment-link/:payment_link_id': {
      operationId: 'getPaymentLink',
      tag: 'Payment links',
      summary: 'One payment link',
      data: v.paymentLinkSchema,
      errors: [...LINK_ERRORS, 'VALIDATION_FAILED'],
    },
    'PUT /merchant/payment-link': {
      operationId: 'updatePaymentLink',
      tag: 'Payment links',
      summary: 'Change a payment link’s title, expiry or status',
      body: updatePaymentLinkBody,
      data: v.paymentLinkSchema,
      errors: [...LINK_ERRORS, 'PAYMENT_LINK_EXPIRED'],
    },
    'DELETE /merchant/payment-link/:payment_link_id': {
      operationId: 'deactivatePaymentLink',
      tag: 'Payment links',
      summary: 'Deactivate a payment link',
      data: v.paymentLinkSchema,
      errors: [...LINK_ERRORS, 'VALIDATION_FAILED'],
    },
    'POST /order/payment-link': {
      operationId: 'openPaymentLink',
      tag: 'Payment links',
      summary: 'Open an order from a public payment link (the hosted checkout page calls this)',
      body: openPaymentLinkBody,
      data: v.openedLinkSchema,
      errors: ['PAYMENT_LINK_NOT_FOUND', 'PAYMENT_LINK_INACTIVE', 'PAYMENT_LINK_EXPIRED', 'PAYMENT_LINK_EXHAUSTED', 'NO_NETWORK_WATCHED'],
    },
    'GET /payment-links/:payment_link_id/validate': {
      operationId: 'validatePaymentLink',
      tag: 'Payment links',
      summary: 'Whether a payment link can be opened, and what it sells',
      data: v.paymentLinkValidationSchema,
      errors: ['PAYMENT_LINK_NOT_FOUND', 'VALIDATION_FAILED'],
    },

    // --- settlement wallets ---
    'GET /merchant/settlement-wallets': {
      operationId: 'listSettlementWallets',
      tag: 'Settlement wallets',
      summary: 'Settlement addresses per network, with pending changes and history',
      data: z.array(v.settlementWalletSchema),
      errors: [],
    },
    'GET /merchant/settlement-wallets/:network': {
      operationId: 'getSettlementWallet',
      tag: 'Settlement wallets',
      summary: 'The settlement address of one network',
      data: v.settlementWalletSchema,
      errors: ['VALIDATION_FAILED'],
    },
    'PUT /merchant/settlement-wallets/:network': {
      operationId: 'setSettlementWallet',
      tag: 'Settlement wallets',
      summary: 'Set the settlement address of a network (account password required; takes effect after the hold)',
      body: setSettlementWalletBody,
      data: v.settlementWalletSchema.extend({ changed: z.boolean() }),
      errors: ['INVALID_PASSWORD', 'INVALID_SETTLEMENT_ADDRESS', 'SETTLEMENT_ADDRESS_REFUSED'],
    },

    // --- refunds ---
    'POST /merchant/fiat/refund': {
      operationId: 'createRefund',
      tag: 'Refunds',
      summary: 'Request a refund of an order (its payments in one deposit) or of one of its unattributed receipts',
      description:
        'Never more than received less earlier refunds (REFUND_EXCEEDS_RECEIVED). Without `address`, `claim_url` is the customer’s claim link (shown once). Approval is a dashboard member’s, re-authenticated (docs/refunds.md).',
      body: createRefundBody,
      data: v.createdRefundSchema,
      errors: [
        'ORDER_NOT_FOUND',
        'NOT_FOUND',
        'REFUND_EXCEEDS_RECEIVED',
        'REFUND_NOT_OFFERED',
        'REFUND_ADDRESS_REFUSED',
        'MERCHANT_MISMATCH',
        'WRONG_ENVIRONMENT',
      ],
    },
    'POST /merchant/fiat/getRefund': {
      operationId: 'getRefund',
      tag: 'Refunds',
      summary: 'One refund',
      body: refundIdBody,
      data: z.object({ request: v.refundSchema }),
      errors: ['REFUND_NOT_FOUND', 'MERCHANT_MISMATCH'],
    },
    'GET /merchant/fiat/refunds': {
      operationId: 'listRefunds',
      tag: 'Refunds',
      summary: 'Refunds, newest first',
      query: z.object({ network: network.optional(), status: z.string().optional(), kind: z.string().optional(), order_id: z.string().optional(), ...page }),
      data: v.refundPageSchema,
      errors: ['VALIDATION_FAILED'],
    },
    'POST /merchant/fiat/cancelRefund': {
      operationId: 'cancelRefund',
      tag: 'Refunds',
      summary: 'Cancel a refund not yet signed',
      body: refundIdBody,
      data: z.object({ request: v.refundSchema }),
      errors: ['REFUND_NOT_FOUND', 'REFUND_STATE', 'MERCHANT_MISMATCH'],
    },
    'POST /merchant/fiat/renewRefundClaimLink': {
      operationId: 'renewRefundClaimLink',
      tag: 'Refunds',
      summary: 'A new claim link for a refund still waiting for the customer’s address (the old link stops working)',
      body: refundIdBody,
      data: v.createdRefundSchema,
      errors: ['REFUND_NOT_FOUND', 'REFUND_STATE', 'MERCHANT_MISMATCH'],
    },

    // --- sweeps ---
    'POST /merchant/sweeps': {
      operationId: 'sweepNow',
      tag: 'Sweeps',
      summary: 'Ask for a sweep of paid deposits now (all networks, one, or named deposits)',
      body: z.object({ network: network.optional(), deposit_ids: z.array(z.string()).optional() }),
      data: v.sweepRequestsSchema,
      errors: ['NOT_FOUND'],
    },
    'GET /merchant/sweeps': {
      operationId: 'listSweeps',
      tag: 'Sweeps',
      summary: 'Sweep history, newest first',
      query: z.object({ network: network.optional(), status: z.string().optional(), ...page }),
      data: v.sweepPageSchema,
      errors: ['VALIDATION_FAILED'],
    },
    'GET /merchant/sweeps/balances': {
      operationId: 'sweepBalances',
      tag: 'Sweeps',
      summary: 'Received, swept, waiting, in-flight and held amounts per token',
      data: z.array(v.sweepBalanceSchema),
      errors: [],
    },
    'GET /merchant/sweeps/held': {
      operationId: 'sweepHolds',
      tag: 'Sweeps',
      summary: 'Deposits held back from sweeping, and why',
      query: z.object({ network: network.optional(), limit: page.limit }),
      data: z.object({ items: z.array(v.sweepHoldSchema) }),
      errors: ['VALIDATION_FAILED'],
    },
    'GET /merchant/sweeps/settings': { operationId: 'sweepSettings', tag: 'Sweeps', summary: 'The sweep schedule', data: v.sweepSettingsSchema, errors: [] },
    'PUT /merchant/sweeps/settings': {
      operationId: 'setSweepSettings',
      tag: 'Sweeps',
      summary: 'Change the sweep schedule (owner or admin)',
      body: z.object({ interval_seconds: z.number().int().optional(), enabled: z.boolean().optional() }),
      data: v.sweepSettingsSchema,
      errors: [],
    },

    // --- sandbox and catalogue ---
    'POST /faucet': {
      operationId: 'faucet',
      tag: 'Sandbox',
      summary: 'Sandbox only: test tokens and a little gas to an address',
      body: z.object({ address: z.string(), network, amount: z.string().optional() }).loose(),
      data: v.faucetSchema,
      errors: ['ROUTE_NOT_FOUND', 'NETWORK_NOT_WATCHED', 'TOKEN_NOT_FOUND'],
    },
    'GET /networks': {
      operationId: 'listNetworks',
      tag: 'Sandbox',
      summary: 'The networks this deployment watches, with chain ids, RPC URLs and tokens',
      data: v.networksSchema,
      errors: [],
    },

    // --- CSV exports ---
    'GET /merchant/export/orders.csv': {
      operationId: 'exportOrders',
      tag: 'Exports',
      summary: 'Orders as CSV, with the GraphQL `orders` filters as query parameters',
      query: z
        .object({
          status: z.string().optional(),
          created_from: z.string().optional(),
          created_to: z.string().optional(),
          paid_from: z.string().optional(),
          paid_to: z.string().optional(),
          network: z.string().optional(),
          token_address: z.string().optional(),
          payment_link_id: z.string().optional(),
          overpaid: z.enum(['true', 'false']).optional(),
          tz: z.string().optional(),
        })
        .loose(),
      raw: ['text/csv'],
      errors: ['VALIDATION_FAILED'],
    },
    'GET /merchant/export/payments.csv': {
      operationId: 'exportPayments',
      tag: 'Exports',
      summary: 'Payments as CSV, with the GraphQL `payments` filters as query parameters',
      query: z
        .object({
          status: z.string().optional(),
          detected_from: z.string().optional(),
          detected_to: z.string().optional(),
          network: z.string().optional(),
          token_address: z.string().optional(),
          tz: z.string().optional(),
        })
        .loose(),
      raw: ['text/csv'],
      errors: ['VALIDATION_FAILED'],
    },
    'GET /merchant/export/audit.csv': {
      operationId: 'exportAuditTrail',
      tag: 'Exports',
      summary: 'The merchant’s audit trail as CSV (owners and admins), newest first; `action` (comma-separated), `from`, `to` (ISO-8601 or Unix seconds)',
      query: z.object({ action: z.string().optional(), from: z.string().optional(), to: z.string().optional() }),
      raw: ['text/csv'],
      errors: ['VALIDATION_FAILED', 'FORBIDDEN'],
    },
  };
}
