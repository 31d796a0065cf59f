/* eslint-disable */
/** Internal type. DO NOT USE DIRECTLY. */
type Exact<T extends { [key: string]: unknown }> = { [K in keyof T]: T[K] };
/** Internal type. DO NOT USE DIRECTLY. */
export type Incremental<T> = T | { [P in keyof T]?: P extends ' $fragmentName' | '__typename' ? T[P] : never };
import type { DocumentTypeDecoration } from '@graphql-typed-document-node/core';
export type CreatePaymentLinkInput = {
  /** Copied to each order: go to successUrl by itself after payment */
  autoRedirect?: boolean | null | undefined;
  /** Copied to each order: hosted checkout "Return to shop" when not paid */
  cancelUrl?: string | null | undefined;
  /** Validity in seconds (60 s to 365 days) */
  expirationTime: number;
  /** 1 to 1,000,000 */
  maxUsage: number;
  /** 1 to 50 products */
  products: Array<PaymentLinkProductInput>;
  /** Copied to each order: hosted checkout "Return to shop" after payment */
  successUrl?: string | null | undefined;
  title: string;
};

/** Sandbox (testnets) or production (mainnets) */
export type Environment =
  | 'PRODUCTION'
  | 'SANDBOX';

/** OK; LOW (below the threshold or short of what waiting sweeps need: they wait, nothing fails); UNFUNDED (holds nothing) */
export type GasTankState =
  | 'LOW'
  | 'OK'
  | 'UNFUNDED';

export type MerchantSettingsInput = {
  /** true: the merchant bears the fee (MDR); false: the customer pays amount + fee */
  feeIncluded?: boolean | null | undefined;
  /** Logo in the hosted checkout header: absolute http(s) URL (https in production), at most 512 characters; null removes it */
  logoUrl?: string | null | undefined;
  /** Order lifetime in seconds (60–604800); null restores the default */
  orderTtlSeconds?: number | null | undefined;
  /** Under-payment accepted as paid, basis points of the amount due (0–500) */
  paymentToleranceBps?: number | null | undefined;
};

export type Network =
  | 'BINANCE'
  | 'ETHEREUM'
  | 'SOLANA'
  | 'TRON';

/** DAY or HOUR (local to timeZone, by creation time), STATUS, NETWORK / TOKEN (paying) */
export type OrderStatsGroup =
  | 'DAY'
  | 'HOUR'
  | 'NETWORK'
  | 'STATUS'
  | 'TOKEN';

/** Created → Processing → Success; Underpaid / Expired at expiry (docs/order-lifecycle.md) */
export type OrderStatus =
  | 'Created'
  | 'Expired'
  | 'Processing'
  | 'Success'
  | 'Underpaid';

export type PaymentLinkProductInput = {
  name: string;
  /** IDR, whole rupiah, as a string */
  price: string;
  quantity: number;
};

/** Active; Inactive (deactivated by the merchant); Expired (derived: the validity window has passed). Only ACTIVE/INACTIVE can be set. */
export type PaymentLinkStatus =
  | 'ACTIVE'
  | 'EXPIRED'
  | 'INACTIVE';

/** A second factor: exactly one of a TOTP code, a recovery code or a passkey assertion */
export type SecondFactorInput = {
  /** The WebAuthn assertion: `PublicKeyCredential.toJSON()` of `navigator.credentials.get` called with the passkey options */
  passkey?: Record<string, unknown> | null | undefined;
  /** One of the recovery codes (xxxx-xxxx-xxxx-xxxx); each works once */
  recoveryCode?: string | null | undefined;
  /** The 6-digit code of the authenticator app */
  totpCode?: string | null | undefined;
};

export type SweepSettingsInput = {
  enabled?: boolean | null | undefined;
  /** 300 (5 min) … 604800 (7 days) */
  intervalSeconds?: number | null | undefined;
};

/** planned → (funding → funded →) sending → sent → confirmed, or failed (docs/sweeps.md) */
export type SweepStatus =
  | 'confirmed'
  | 'failed'
  | 'funded'
  | 'funding'
  | 'planned'
  | 'sending'
  | 'sent';

export type TeamInviteStatus =
  | 'ACCEPTED'
  | 'EXPIRED'
  | 'PENDING'
  | 'REVOKED';

/** A member’s role in a merchant’s team; what each may do is the permission table (docs/teams.md) */
export type TeamRole =
  | 'ADMIN'
  | 'DEVELOPER'
  | 'FINANCE'
  | 'OWNER'
  | 'VIEWER';

export type UpdatePaymentLinkInput = {
  /** Restarts the validity window from now */
  expirationTime?: number | null | undefined;
  id: string;
  /** ACTIVE or INACTIVE */
  status?: PaymentLinkStatus | null | undefined;
  title?: string | null | undefined;
};

export type WalletType =
  | 'METAMASK'
  | 'PHANTOM'
  | 'TRUSTWALLET'
  | 'WALLETCONNECT';

/** FOLLOWING the chain; LAGGING behind its head (payments are seen late); DOWN (no poll completed lately: payments wait until it recovers, none is lost); UNKNOWN (no watcher reported yet) */
export type WatcherState =
  | 'DOWN'
  | 'FOLLOWING'
  | 'LAGGING'
  | 'UNKNOWN';

/** pending → sending → delivered | pending (retry) | failed (docs/webhooks.md) */
export type WebhookDeliveryState =
  | 'DELIVERED'
  | 'FAILED'
  | 'PENDING'
  | 'SENDING';

export type DashApiKeysQueryVariables = Exact<{ [key: string]: never; }>;


export type DashApiKeysQuery = { apiKeys: Array<{ id: string, environment: Environment, hint: string, createdAt: string, lastUsedAt: string | null }> };

export type DashRotateApiKeyMutationVariables = Exact<{
  environment: Environment;
}>;


export type DashRotateApiKeyMutation = { rotateApiKey: { id: string, environment: Environment, apiKey: string, hint: string } };

export type DashSetNotificationUrlMutationVariables = Exact<{
  environment: Environment;
  url?: string | null | undefined;
}>;


export type DashSetNotificationUrlMutation = { setNotificationUrl: { environment: Environment, notificationUrl: string | null } };

export type DashSendTestWebhookMutationVariables = Exact<{
  environment: Environment;
}>;


export type DashSendTestWebhookMutation = { sendTestWebhook: { id: string, state: WebhookDeliveryState } };

export type DashWebhookDeliveriesQueryVariables = Exact<{
  environment: Environment;
  orderNo?: string | null | undefined;
  first?: number | null | undefined;
}>;


export type DashWebhookDeliveriesQuery = { webhookDeliveries: { totalCount: number, edges: Array<{ node: { id: string, event: string, orderNo: string | null, state: WebhookDeliveryState, attemptCount: number, lastStatus: number | null, lastError: string | null, createdAt: string, url: string } }> } };

export type DashRedeliverWebhookMutationVariables = Exact<{
  id: string | number;
}>;


export type DashRedeliverWebhookMutation = { redeliverWebhook: { id: string, state: WebhookDeliveryState } };

export type DashAttentionQueryVariables = Exact<{
  environment: Environment;
}>;


export type DashAttentionQuery = { sweepHolds: Array<{ depositId: string, orderNo: string, network: Network, tokenSymbol: string, reason: string, amount: { decimal: string } }>, webhookDeliveries: { totalCount: number }, settlementWallets: Array<{ network: Network, pending: { address: string, activeFrom: string } | null }> };

export type DashNetworkHealthQueryVariables = Exact<{
  environment: Environment;
}>;


export type DashNetworkHealthQuery = { networkHealth: Array<{ network: Network, watcher: WatcherState, lastBlock: string | null, blocksBehind: number | null, secondsSincePoll: number | null, providersUp: number, providersDown: number, gasTank: GasTankState | null, sweepsWaitingForGas: number | null }> };

export type DashLinkFragment = { id: string, title: string, link: string, status: PaymentLinkStatus, totalPrice: string, currency: string, maxUsage: number, usageCount: number, remaining: number, expirationTime: number, expiresAt: string, products: Array<{ name: string, price: string, quantity: number }> };

export type DashPaymentLinksQueryVariables = Exact<{
  environment: Environment;
  first?: number | null | undefined;
}>;


export type DashPaymentLinksQuery = { paymentLinks: { totalCount: number, edges: Array<{ node: { id: string, title: string, link: string, status: PaymentLinkStatus, totalPrice: string, currency: string, maxUsage: number, usageCount: number, remaining: number, expirationTime: number, expiresAt: string, products: Array<{ name: string, price: string, quantity: number }> } }> } };

export type DashCreatePaymentLinkMutationVariables = Exact<{
  environment: Environment;
  input: CreatePaymentLinkInput;
}>;


export type DashCreatePaymentLinkMutation = { createPaymentLink: { id: string, title: string, link: string, status: PaymentLinkStatus, totalPrice: string, currency: string, maxUsage: number, usageCount: number, remaining: number, expirationTime: number, expiresAt: string, products: Array<{ name: string, price: string, quantity: number }> } };

export type DashUpdatePaymentLinkMutationVariables = Exact<{
  environment: Environment;
  input: UpdatePaymentLinkInput;
}>;


export type DashUpdatePaymentLinkMutation = { updatePaymentLink: { id: string, title: string, link: string, status: PaymentLinkStatus, totalPrice: string, currency: string, maxUsage: number, usageCount: number, remaining: number, expirationTime: number, expiresAt: string, products: Array<{ name: string, price: string, quantity: number }> } };

export type DashOrdersQueryVariables = Exact<{
  environment: Environment;
  first?: number | null | undefined;
  after?: string | null | undefined;
  statuses?: Array<OrderStatus> | OrderStatus | null | undefined;
  network?: Network | null | undefined;
  tokenAddress?: string | null | undefined;
  createdFrom?: string | null | undefined;
  createdTo?: string | null | undefined;
  search?: string | null | undefined;
  overpaid?: boolean | null | undefined;
}>;


export type DashOrdersQuery = { orders: { totalCount: number, pageInfo: { endCursor: string | null, hasNextPage: boolean }, edges: Array<{ node: { id: string, orderNo: string, status: OrderStatus, amount: string, currency: string, createdAt: string, paidAt: string | null, paidNetwork: Network | null, paidTokenSymbol: string | null, overpaid: boolean, customerName: string | null } }> } };

export type DashOrderQueryVariables = Exact<{
  environment: Environment;
  orderNo: string;
}>;


export type DashOrderQuery = { order: { id: string, orderNo: string, status: OrderStatus, amount: string, currency: string, fee: string | null, netAmount: string | null, receivedAmount: string | null, paidAmount: string | null, createdAt: string, expiresAt: string, paidAt: string | null, paidNetwork: Network | null, paidTokenSymbol: string | null, overpaid: boolean, late: boolean, source: string, customerName: string | null, customerEmail: string | null, quotes: Array<{ network: Network, tokenSymbol: string, amountCrypto: string, totalAmountCrypto: string, cryptoRate: string, totalAmount: string, totalFeeAmount: string, lockedAt: string }>, deposits: Array<{ network: Network, tokenName: string, walletType: WalletType, destinationAddress: string, totalAmount: string, amountReceived: string, status: string, expiresAt: string }>, payments: Array<{ id: string, network: Network, tokenSymbol: string, amount: string, txHash: string, explorerUrl: string | null, from: string, status: string, detectedAt: string, confirmedAt: string | null, late: boolean }> } };

export type DashTokensQueryVariables = Exact<{
  environment: Environment;
}>;


export type DashTokensQuery = { tokens: Array<{ network: Network, symbol: string, address: string }> };

export type DashMerchantEventsSubscriptionVariables = Exact<{
  environment: Environment;
}>;


export type DashMerchantEventsSubscription = { merchantEvents: { eventId: string, type: string, orderNo: string, status: OrderStatus, previousStatus: OrderStatus | null, at: string } };

export type DashOrderStatsQueryVariables = Exact<{
  environment: Environment;
  from: string;
  to: string;
  groupBy?: Array<OrderStatsGroup> | OrderStatsGroup | null | undefined;
  timeZone?: string | null | undefined;
}>;


export type DashOrderStatsQuery = { orderStats: Array<{ day: string | null, network: Network | null, count: number, paidCount: number, paidAmount: string, fee: string, netAmount: string }> };

export type DashLoginMutationVariables = Exact<{
  email: string;
  password: string;
}>;


export type DashLoginMutation = { login: { token: string, refreshToken: string, expiresAt: string } };

export type DashCompleteLoginMutationVariables = Exact<{
  challengeToken: string;
  secondFactor: SecondFactorInput;
}>;


export type DashCompleteLoginMutation = { completeLogin: { token: string, refreshToken: string, expiresAt: string } };

export type DashRefreshMutationVariables = Exact<{
  refreshToken: string;
}>;


export type DashRefreshMutation = { refreshToken: { token: string, refreshToken: string, expiresAt: string } };

export type DashLogoutMutationVariables = Exact<{ [key: string]: never; }>;


export type DashLogoutMutation = { logout: boolean };

export type DashReauthenticateMutationVariables = Exact<{
  password: string;
  secondFactor?: SecondFactorInput | null | undefined;
}>;


export type DashReauthenticateMutation = { reauthenticate: string };

export type DashMeQueryVariables = Exact<{ [key: string]: never; }>;


export type DashMeQuery = { me: { id: string, email: string, role: string, merchant: { id: string, name: string, feeIncluded: boolean, platformFeePercent: string, orderTtlSeconds: number | null, paymentToleranceBps: number, logoUrl: string | null, notificationUrlSandbox: string | null, notificationUrlProduction: string | null } } };

export type DashSettlementQueryVariables = Exact<{
  environment: Environment;
}>;


export type DashSettlementQuery = { settlementWallets: Array<{ network: Network, current: { address: string, activeFrom: string } | null, pending: { address: string, activeFrom: string } | null }>, sweepBalances: Array<{ network: Network, tokenSymbol: string, received: { decimal: string }, swept: { decimal: string }, waiting: { decimal: string }, held: { decimal: string }, inFlight: { decimal: string } }>, sweeps: { totalCount: number, edges: Array<{ node: { id: string, network: Network, tokenSymbol: string, status: SweepStatus, toAddress: string, txHash: string | null, createdAt: string, amount: { decimal: string } | null } }> } };

export type DashSetSettlementWalletMutationVariables = Exact<{
  environment: Environment;
  network: Network;
  address: string;
  password: string;
}>;


export type DashSetSettlementWalletMutation = { setSettlementWallet: { changed: boolean, setting: { network: Network, current: { address: string, activeFrom: string } | null, pending: { address: string, activeFrom: string } | null } } };

export type DashSweepNowMutationVariables = Exact<{
  environment: Environment;
  network?: Network | null | undefined;
}>;


export type DashSweepNowMutation = { sweepNow: Array<{ id: string, network: Network }> };

export type DashUpdateSettingsMutationVariables = Exact<{
  input: MerchantSettingsInput;
}>;


export type DashUpdateSettingsMutation = { updateMerchantSettings: { id: string, feeIncluded: boolean, orderTtlSeconds: number | null, paymentToleranceBps: number, logoUrl: string | null } };

export type DashSweepSettingsQueryVariables = Exact<{
  environment: Environment;
}>;


export type DashSweepSettingsQuery = { sweepSettings: { enabled: boolean, intervalSeconds: number, updatedAt: string | null } };

export type DashSetSweepSettingsMutationVariables = Exact<{
  environment: Environment;
  input: SweepSettingsInput;
}>;


export type DashSetSweepSettingsMutation = { setSweepSettings: { enabled: boolean, intervalSeconds: number, updatedAt: string | null } };

export type DashTeamQueryVariables = Exact<{ [key: string]: never; }>;


export type DashTeamQuery = { teamMembers: Array<{ userId: string, email: string, role: TeamRole, joinedAt: string }>, teamInvites: Array<{ id: string, email: string, role: TeamRole, status: TeamInviteStatus, invitedBy: string | null, expiresAt: string }>, me: { id: string, email: string } };

export type DashInviteTeamMemberMutationVariables = Exact<{
  email: string;
  role: TeamRole;
}>;


export type DashInviteTeamMemberMutation = { inviteTeamMember: { inviteUrl: string | null, invite: { id: string, email: string, role: TeamRole, status: TeamInviteStatus } } };

export type DashRevokeTeamInviteMutationVariables = Exact<{
  inviteId: string;
}>;


export type DashRevokeTeamInviteMutation = { revokeTeamInvite: { id: string, status: TeamInviteStatus } };

export type DashChangeTeamMemberRoleMutationVariables = Exact<{
  userId: string;
  role: TeamRole;
}>;


export type DashChangeTeamMemberRoleMutation = { changeTeamMemberRole: { userId: string, role: TeamRole } };

export type DashRemoveTeamMemberMutationVariables = Exact<{
  userId: string;
}>;


export type DashRemoveTeamMemberMutation = { removeTeamMember: { userId: string } };

export type DashAcceptTeamInviteMutationVariables = Exact<{
  token: string;
  password: string;
}>;


export type DashAcceptTeamInviteMutation = { acceptTeamInvite: { email: string, merchantName: string, role: TeamRole, accountCreated: boolean } };

export type DashSecondFactorStatusQueryVariables = Exact<{ [key: string]: never; }>;


export type DashSecondFactorStatusQuery = { secondFactorStatus: { totpEnabled: boolean, totpPending: boolean, recoveryCodesRemaining: number, requiredByMerchant: boolean, enrolmentRequired: boolean, passkeys: Array<{ id: string, name: string, createdAt: string, lastUsedAt: string | null }> } };

export type DashBeginTotpEnrolmentMutationVariables = Exact<{ [key: string]: never; }>;


export type DashBeginTotpEnrolmentMutation = { beginTotpEnrolment: { secret: string, qrCodeDataUrl: string } };

export type DashConfirmTotpEnrolmentMutationVariables = Exact<{
  code: string;
}>;


export type DashConfirmTotpEnrolmentMutation = { confirmTotpEnrolment: { recoveryCodes: Array<string> | null } };

export type DashRegenerateRecoveryCodesMutationVariables = Exact<{ [key: string]: never; }>;


export type DashRegenerateRecoveryCodesMutation = { regenerateRecoveryCodes: Array<string> };

export type DashDisableTotpMutationVariables = Exact<{ [key: string]: never; }>;


export type DashDisableTotpMutation = { disableTotp: boolean };

export type DashSetSecondFactorPolicyMutationVariables = Exact<{
  required: boolean;
}>;


export type DashSetSecondFactorPolicyMutation = { setSecondFactorPolicy: boolean };

export type DashPasskeyRegistrationOptionsMutationVariables = Exact<{ [key: string]: never; }>;


export type DashPasskeyRegistrationOptionsMutation = { passkeyRegistrationOptions: Record<string, unknown> };

export type DashRegisterPasskeyMutationVariables = Exact<{
  name?: string | null | undefined;
  response: Record<string, unknown>;
}>;


export type DashRegisterPasskeyMutation = { registerPasskey: { recoveryCodes: Array<string> | null, passkey: { id: string, name: string, createdAt: string } } };

export type DashRemovePasskeyMutationVariables = Exact<{
  id: string;
}>;


export type DashRemovePasskeyMutation = { removePasskey: boolean };

export type DashLoginPasskeyOptionsMutationVariables = Exact<{
  challengeToken: string;
}>;


export type DashLoginPasskeyOptionsMutation = { loginPasskeyOptions: Record<string, unknown> };

export type DashReauthPasskeyOptionsMutationVariables = Exact<{ [key: string]: never; }>;


export type DashReauthPasskeyOptionsMutation = { reauthPasskeyOptions: Record<string, unknown> };

export class TypedDocumentString<TResult, TVariables>
  extends String
  implements DocumentTypeDecoration<TResult, TVariables>
{
  __apiType?: NonNullable<DocumentTypeDecoration<TResult, TVariables>['__apiType']>;
  private value: string;
  public __meta__?: Record<string, any> | undefined;

  constructor(value: string, __meta__?: Record<string, any> | undefined) {
    super(value);
    this.value = value;
    this.__meta__ = __meta__;
  }

  override toString(): string & DocumentTypeDecoration<TResult, TVariables> {
    return this.value;
  }
}
export const DashLinkFragmentDoc = new TypedDocumentString(`
    fragment DashLink on PaymentLink {
  id
  title
  link
  status
  totalPrice
  currency
  maxUsage
  usageCount
  remaining
  expirationTime
  expiresAt
  products {
    name
    price
    quantity
  }
}
    `, {"fragmentName":"DashLink"}) as unknown as TypedDocumentString<DashLinkFragment, unknown>;
export const DashApiKeysDocument = new TypedDocumentString(`
    query DashApiKeys {
  apiKeys {
    id
    environment
    hint
    createdAt
    lastUsedAt
  }
}
    `) as unknown as TypedDocumentString<DashApiKeysQuery, DashApiKeysQueryVariables>;
export const DashRotateApiKeyDocument = new TypedDocumentString(`
    mutation DashRotateApiKey($environment: Environment!) {
  rotateApiKey(environment: $environment) {
    id
    environment
    apiKey
    hint
  }
}
    `) as unknown as TypedDocumentString<DashRotateApiKeyMutation, DashRotateApiKeyMutationVariables>;
export const DashSetNotificationUrlDocument = new TypedDocumentString(`
    mutation DashSetNotificationUrl($environment: Environment!, $url: String) {
  setNotificationUrl(environment: $environment, url: $url) {
    environment
    notificationUrl
  }
}
    `) as unknown as TypedDocumentString<DashSetNotificationUrlMutation, DashSetNotificationUrlMutationVariables>;
export const DashSendTestWebhookDocument = new TypedDocumentString(`
    mutation DashSendTestWebhook($environment: Environment!) {
  sendTestWebhook(environment: $environment) {
    id
    state
  }
}
    `) as unknown as TypedDocumentString<DashSendTestWebhookMutation, DashSendTestWebhookMutationVariables>;
export const DashWebhookDeliveriesDocument = new TypedDocumentString(`
    query DashWebhookDeliveries($environment: Environment!, $orderNo: String, $first: Int) {
  webhookDeliveries(environment: $environment, orderNo: $orderNo, first: $first) {
    totalCount
    edges {
      node {
        id
        event
        orderNo
        state
        attemptCount
        lastStatus
        lastError
        createdAt
        url
      }
    }
  }
}
    `) as unknown as TypedDocumentString<DashWebhookDeliveriesQuery, DashWebhookDeliveriesQueryVariables>;
export const DashRedeliverWebhookDocument = new TypedDocumentString(`
    mutation DashRedeliverWebhook($id: ID!) {
  redeliverWebhook(id: $id) {
    id
    state
  }
}
    `) as unknown as TypedDocumentString<DashRedeliverWebhookMutation, DashRedeliverWebhookMutationVariables>;
export const DashAttentionDocument = new TypedDocumentString(`
    query DashAttention($environment: Environment!) {
  sweepHolds(environment: $environment) {
    depositId
    orderNo
    network
    tokenSymbol
    reason
    amount {
      decimal
    }
  }
  webhookDeliveries(environment: $environment, status: FAILED, first: 1) {
    totalCount
  }
  settlementWallets(environment: $environment) {
    network
    pending {
      address
      activeFrom
    }
  }
}
    `) as unknown as TypedDocumentString<DashAttentionQuery, DashAttentionQueryVariables>;
export const DashNetworkHealthDocument = new TypedDocumentString(`
    query DashNetworkHealth($environment: Environment!) {
  networkHealth(environment: $environment) {
    network
    watcher
    lastBlock
    blocksBehind
    secondsSincePoll
    providersUp
    providersDown
    gasTank
    sweepsWaitingForGas
  }
}
    `) as unknown as TypedDocumentString<DashNetworkHealthQuery, DashNetworkHealthQueryVariables>;
export const DashPaymentLinksDocument = new TypedDocumentString(`
    query DashPaymentLinks($environment: Environment!, $first: Int) {
  paymentLinks(environment: $environment, first: $first) {
    totalCount
    edges {
      node {
        ...DashLink
      }
    }
  }
}
    fragment DashLink on PaymentLink {
  id
  title
  link
  status
  totalPrice
  currency
  maxUsage
  usageCount
  remaining
  expirationTime
  expiresAt
  products {
    name
    price
    quantity
  }
}`) as unknown as TypedDocumentString<DashPaymentLinksQuery, DashPaymentLinksQueryVariables>;
export const DashCreatePaymentLinkDocument = new TypedDocumentString(`
    mutation DashCreatePaymentLink($environment: Environment!, $input: CreatePaymentLinkInput!) {
  createPaymentLink(environment: $environment, input: $input) {
    ...DashLink
  }
}
    fragment DashLink on PaymentLink {
  id
  title
  link
  status
  totalPrice
  currency
  maxUsage
  usageCount
  remaining
  expirationTime
  expiresAt
  products {
    name
    price
    quantity
  }
}`) as unknown as TypedDocumentString<DashCreatePaymentLinkMutation, DashCreatePaymentLinkMutationVariables>;
export const DashUpdatePaymentLinkDocument = new TypedDocumentString(`
    mutation DashUpdatePaymentLink($environment: Environment!, $input: UpdatePaymentLinkInput!) {
  updatePaymentLink(environment: $environment, input: $input) {
    ...DashLink
  }
}
    fragment DashLink on PaymentLink {
  id
  title
  link
  status
  totalPrice
  currency
  maxUsage
  usageCount
  remaining
  expirationTime
  expiresAt
  products {
    name
    price
    quantity
  }
}`) as unknown as TypedDocumentString<DashUpdatePaymentLinkMutation, DashUpdatePaymentLinkMutationVariables>;
export const DashOrdersDocument = new TypedDocumentString(`
    query DashOrders($environment: Environment!, $first: Int, $after: String, $statuses: [OrderStatus!], $network: Network, $tokenAddress: String, $createdFrom: DateTime, $createdTo: DateTime, $search: String, $overpaid: Boolean) {
  orders(
    environment: $environment
    first: $first
    after: $after
    statuses: $statuses
    network: $network
    tokenAddress: $tokenAddress
    createdFrom: $createdFrom
    createdTo: $createdTo
    search: $search
    overpaid: $overpaid
  ) {
    totalCount
    pageInfo {
      endCursor
      hasNextPage
    }
    edges {
      node {
        id
        orderNo
        status
        amount
        currency
        createdAt
        paidAt
        paidNetwork
        paidTokenSymbol
        overpaid
        customerName
      }
    }
  }
}
    `) as unknown as TypedDocumentString<DashOrdersQuery, DashOrdersQueryVariables>;
export const DashOrderDocument = new TypedDocumentString(`
    query DashOrder($environment: Environment!, $orderNo: String!) {
  order(environment: $environment, orderNo: $orderNo) {
    id
    orderNo
    status
    amount
    currency
    fee
    netAmount
    receivedAmount
    paidAmount
    createdAt
    expiresAt
    paidAt
    paidNetwork
    paidTokenSymbol
    overpaid
    late
    source
    customerName
    customerEmail
    quotes {
      network
      tokenSymbol
      amountCrypto
      totalAmountCrypto
      cryptoRate
      totalAmount
      totalFeeAmount
      lockedAt
    }
    deposits {
      network
      tokenName
      walletType
      destinationAddress
      totalAmount
      amountReceived
      status
      expiresAt
    }
    payments {
      id
      network
      tokenSymbol
      amount
      txHash
      explorerUrl
      from
      status
      detectedAt
      confirmedAt
      late
    }
  }
}
    `) as unknown as TypedDocumentString<DashOrderQuery, DashOrderQueryVariables>;
export const DashTokensDocument = new TypedDocumentString(`
    query DashTokens($environment: Environment!) {
  tokens(environment: $environment) {
    network
    symbol
    address
  }
}
    `) as unknown as TypedDocumentString<DashTokensQuery, DashTokensQueryVariables>;
export const DashMerchantEventsDocument = new TypedDocumentString(`
    subscription DashMerchantEvents($environment: Environment!) {
  merchantEvents(environment: $environment) {
    eventId
    type
    orderNo
    status
    previousStatus
    at
  }
}
    `) as unknown as TypedDocumentString<DashMerchantEventsSubscription, DashMerchantEventsSubscriptionVariables>;
export const DashOrderStatsDocument = new TypedDocumentString(`
    query DashOrderStats($environment: Environment!, $from: DateTime!, $to: DateTime!, $groupBy: [OrderStatsGroup!], $timeZone: String) {
  orderStats(
    environment: $environment
    from: $from
    to: $to
    groupBy: $groupBy
    timeZone: $timeZone
  ) {
    day
    network
    count
    paidCount
    paidAmount
    fee
    netAmount
  }
}
    `) as unknown as TypedDocumentString<DashOrderStatsQuery, DashOrderStatsQueryVariables>;
export const DashLoginDocument = new TypedDocumentString(`
    mutation DashLogin($email: String!, $password: String!) {
  login(email: $email, password: $password) {
    token
    refreshToken
    expiresAt
  }
}
    `) as unknown as TypedDocumentString<DashLoginMutation, DashLoginMutationVariables>;
export const DashCompleteLoginDocument = new TypedDocumentString(`
    mutation DashCompleteLogin($challengeToken: String!, $secondFactor: SecondFactorInput!) {
  completeLogin(challengeToken: $challengeToken, secondFactor: $secondFactor) {
    token
    refreshToken
    expiresAt
  }
}
    `) as unknown as TypedDocumentString<DashCompleteLoginMutation, DashCompleteLoginMutationVariables>;
export const DashRefreshDocument = new TypedDocumentString(`
    mutation DashRefresh($refreshToken: String!) {
  refreshToken(refreshToken: $refreshToken) {
    token
    refreshToken
    expiresAt
  }
}
    `) as unknown as TypedDocumentString<DashRefreshMutation, DashRefreshMutationVariables>;
export const DashLogoutDocument = new TypedDocumentString(`
    mutation DashLogout {
  logout
}
    `) as unknown as TypedDocumentString<DashLogoutMutation, DashLogoutMutationVariables>;
export const DashReauthenticateDocument = new TypedDocumentString(`
    mutation DashReauthenticate($password: String!, $secondFactor: SecondFactorInput) {
  reauthenticate(password: $password, secondFactor: $secondFactor)
}
    `) as unknown as TypedDocumentString<DashReauthenticateMutation, DashReauthenticateMutationVariables>;
export const DashMeDocument = new TypedDocumentString(`
    query DashMe {
  me {
    id
    email
    role
    merchant {
      id
      name
      feeIncluded
      platformFeePercent
      orderTtlSeconds
      paymentToleranceBps
      logoUrl
      notificationUrlSandbox
      notificationUrlProduction
    }
  }
}
    `) as unknown as TypedDocumentString<DashMeQuery, DashMeQueryVariables>;
export const DashSettlementDocument = new TypedDocumentString(`
    query DashSettlement($environment: Environment!) {
  settlementWallets(environment: $environment) {
    network
    current {
      address
      activeFrom
    }
    pending {
      address
      activeFrom
    }
  }
  sweepBalances(environment: $environment) {
    network
    tokenSymbol
    received {
      decimal
    }
    swept {
      decimal
    }
    waiting {
      decimal
    }
    held {
      decimal
    }
    inFlight {
      decimal
    }
  }
  sweeps(environment: $environment, first: 20) {
    totalCount
    edges {
      node {
        id
        network
        tokenSymbol
        status
        amount {
          decimal
        }
        toAddress
        txHash
        createdAt
      }
    }
  }
}
    `) as unknown as TypedDocumentString<DashSettlementQuery, DashSettlementQueryVariables>;
export const DashSetSettlementWalletDocument = new TypedDocumentString(`
    mutation DashSetSettlementWallet($environment: Environment!, $network: Network!, $address: String!, $password: String!) {
  setSettlementWallet(
    environment: $environment
    network: $network
    address: $address
    password: $password
  ) {
    changed
    setting {
      network
      current {
        address
        activeFrom
      }
      pending {
        address
        activeFrom
      }
    }
  }
}
    `) as unknown as TypedDocumentString<DashSetSettlementWalletMutation, DashSetSettlementWalletMutationVariables>;
export const DashSweepNowDocument = new TypedDocumentString(`
    mutation DashSweepNow($environment: Environment!, $network: Network) {
  sweepNow(environment: $environment, network: $network) {
    id
    network
  }
}
    `) as unknown as TypedDocumentString<DashSweepNowMutation, DashSweepNowMutationVariables>;
export const DashUpdateSettingsDocument = new TypedDocumentString(`
    mutation DashUpdateSettings($input: MerchantSettingsInput!) {
  updateMerchantSettings(input: $input) {
    id
    feeIncluded
    orderTtlSeconds
    paymentToleranceBps
    logoUrl
  }
}
    `) as unknown as TypedDocumentString<DashUpdateSettingsMutation, DashUpdateSettingsMutationVariables>;
export const DashSweepSettingsDocument = new TypedDocumentString(`
    query DashSweepSettings($environment: Environment!) {
  sweepSettings(environment: $environment) {
    enabled
    intervalSeconds
    updatedAt
  }
}
    `) as unknown as TypedDocumentString<DashSweepSettingsQuery, DashSweepSettingsQueryVariables>;
export const DashSetSweepSettingsDocument = new TypedDocumentString(`
    mutation DashSetSweepSettings($environment: Environment!, $input: SweepSettingsInput!) {
  setSweepSettings(environment: $environment, input: $input) {
    enabled
    intervalSeconds
    updatedAt
  }
}
    `) as unknown as TypedDocumentString<DashSetSweepSettingsMutation, DashSetSweepSettingsMutationVariables>;
export const DashTeamDocument = new TypedDocumentString(`
    query DashTeam {
  teamMembers {
    userId
    email
    role
    joinedAt
  }
  teamInvites {
    id
    email
    role
    status
    invitedBy
    expiresAt
  }
  me {
    id
    email
  }
}
    `) as unknown as TypedDocumentString<DashTeamQuery, DashTeamQueryVariables>;
export const DashInviteTeamMemberDocument = new TypedDocumentString(`
    mutation DashInviteTeamMember($email: String!, $role: TeamRole!) {
  inviteTeamMember(email: $email, role: $role) {
    invite {
      id
      email
      role
      status
    }
    inviteUrl
  }
}
    `) as unknown as TypedDocumentString<DashInviteTeamMemberMutation, DashInviteTeamMemberMutationVariables>;
export const DashRevokeTeamInviteDocument = new TypedDocumentString(`
    mutation DashRevokeTeamInvite($inviteId: String!) {
  revokeTeamInvite(inviteId: $inviteId) {
    id
    status
  }
}
    `) as unknown as TypedDocumentString<DashRevokeTeamInviteMutation, DashRevokeTeamInviteMutationVariables>;
export const DashChangeTeamMemberRoleDocument = new TypedDocumentString(`
    mutation DashChangeTeamMemberRole($userId: String!, $role: TeamRole!) {
  changeTeamMemberRole(userId: $userId, role: $role) {
    userId
    role
  }
}
    `) as unknown as TypedDocumentString<DashChangeTeamMemberRoleMutation, DashChangeTeamMemberRoleMutationVariables>;
export const DashRemoveTeamMemberDocument = new TypedDocumentString(`
    mutation DashRemoveTeamMember($userId: String!) {
  removeTeamMember(userId: $userId) {
    userId
  }
}
    `) as unknown as TypedDocumentString<DashRemoveTeamMemberMutation, DashRemoveTeamMemberMutationVariables>;
export const DashAcceptTeamInviteDocument = new TypedDocumentString(`
    mutation DashAcceptTeamInvite($token: String!, $password: String!) {
  acceptTeamInvite(token: $token, password: $password) {
    email
    merchantName
    role
    accountCreated
  }
}
    `) as unknown as TypedDocumentString<DashAcceptTeamInviteMutation, DashAcceptTeamInviteMutationVariables>;
export const DashSecondFactorStatusDocument = new TypedDocumentString(`
    query DashSecondFactorStatus {
  secondFactorStatus {
    totpEnabled
    totpPending
    recoveryCodesRemaining
    requiredByMerchant
    enrolmentRequired
    passkeys {
      id
      name
      createdAt
      lastUsedAt
    }
  }
}
    `) as unknown as TypedDocumentString<DashSecondFactorStatusQuery, DashSecondFactorStatusQueryVariables>;
export const DashBeginTotpEnrolmentDocument = new TypedDocumentString(`
    mutation DashBeginTotpEnrolment {
  beginTotpEnrolment {
    secret
    qrCodeDataUrl
  }
}
    `) as unknown as TypedDocumentString<DashBeginTotpEnrolmentMutation, DashBeginTotpEnrolmentMutationVariables>;
export const DashConfirmTotpEnrolmentDocument = new TypedDocumentString(`
    mutation DashConfirmTotpEnrolment($code: String!) {
  confirmTotpEnrolment(code: $code) {
    recoveryCodes
  }
}
    `) as unknown as TypedDocumentString<DashConfirmTotpEnrolmentMutation, DashConfirmTotpEnrolmentMutationVariables>;
export const DashRegenerateRecoveryCodesDocument = new TypedDocumentString(`
    mutation DashRegenerateRecoveryCodes {
  regenerateRecoveryCodes
}
    `) as unknown as TypedDocumentString<DashRegenerateRecoveryCodesMutation, DashRegenerateRecoveryCodesMutationVariables>;
export const DashDisableTotpDocument = new TypedDocumentString(`
    mutation DashDisableTotp {
  disableTotp
}
    `) as unknown as TypedDocumentString<DashDisableTotpMutation, DashDisableTotpMutationVariables>;
export const DashSetSecondFactorPolicyDocument = new TypedDocumentString(`
    mutation DashSetSecondFactorPolicy($required: Boolean!) {
  setSecondFactorPolicy(required: $required)
}
    `) as unknown as TypedDocumentString<DashSetSecondFactorPolicyMutation, DashSetSecondFactorPolicyMutationVariables>;
export const DashPasskeyRegistrationOptionsDocument = new TypedDocumentString(`
    mutation DashPasskeyRegistrationOptions {
  passkeyRegistrationOptions
}
    `) as unknown as TypedDocumentString<DashPasskeyRegistrationOptionsMutation, DashPasskeyRegistrationOptionsMutationVariables>;
export const DashRegisterPasskeyDocument = new TypedDocumentString(`
    mutation DashRegisterPasskey($name: String, $response: JSONObject!) {
  registerPasskey(name: $name, response: $response) {
    passkey {
      id
      name
      createdAt
    }
    recoveryCodes
  }
}
    `) as unknown as TypedDocumentString<DashRegisterPasskeyMutation, DashRegisterPasskeyMutationVariables>;
export const DashRemovePasskeyDocument = new TypedDocumentString(`
    mutation DashRemovePasskey($id: String!) {
  removePasskey(id: $id)
}
    `) as unknown as TypedDocumentString<DashRemovePasskeyMutation, DashRemovePasskeyMutationVariables>;
export const DashLoginPasskeyOptionsDocument = new TypedDocumentString(`
    mutation DashLoginPasskeyOptions($challengeToken: String!) {
  loginPasskeyOptions(challengeToken: $challengeToken)
}
    `) as unknown as TypedDocumentString<DashLoginPasskeyOptionsMutation, DashLoginPasskeyOptionsMutationVariables>;
export const DashReauthPasskeyOptionsDocument = new TypedDocumentString(`
    mutation DashReauthPasskeyOptions {
  reauthPasskeyOptions
}
    `) as unknown as TypedDocumentString<DashReauthPasskeyOptionsMutation, DashReauthPasskeyOptionsMutationVariables>;