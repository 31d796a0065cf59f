/**
 * What the audit trail records: the action names, the fields whose values may be stored, and which
 * GraphQL mutation records what (test/unit/audit-coverage.test.ts fails when a mutation is in neither
 * list, so a new one cannot forget the trail). docs/security.md "Audit trail" shows the table.
 */

export const AUDIT_ACTIONS = [
  'auth.login',
  'auth.login_failed',
  'auth.logout',
  'auth.reauthenticated',
  'auth.reauthentication_failed',
  'api_key.rotated',
  'api_key.allowlist_changed',
  'merchant.created',
  'merchant.settings_changed',
  'merchant.platform_fee_changed',
  'webhook.notification_url_changed',
  'webhook.signing_secret_rotated',
  'webhook.signing_secret_viewed',
  'webhook.test_sent',
  'webhook.redelivered',
  'settlement_wallet.changed',
  'sweep.settings_changed',
  'refund.created',
  'refund.approved',
  'refund.cancelled',
  'refund.claim_link_renewed',
  'refund.settings_changed',
  'sweep.requested',
  'payment_link.created',
  'payment_link.updated',
  'payment_link.deleted',
  'export.orders_csv',
  'export.payments_csv',
  'export.audit_csv',
  'operator.reconciliation_viewed',
  'operator.gas_tanks_viewed',
  'operator.reconcile_run',
  'operator.gas_tank_ledger_recorded',
  'operator.secrets_reencrypted',
  'team.invited',
  'team.invite_revoked',
  'team.invite_accepted',
  'team.role_changed',
  'team.member_removed',
  'auth.merchant_switched',
  'second_factor.totp_enabled',
  'second_factor.totp_disabled',
  'second_factor.recovery_codes_regenerated',
  'second_factor.passkey_registered',
  'second_factor.passkey_removed',
  'merchant.second_factor_policy_changed',
] as const;

/**
 * Other modules (second factor, teams) add their names here. A string that is not in the list is
 * refused by the type checker at the call site.
 */
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/**
 * The only member names whose values `before`/`after` keep; every other member is stored as
 * `"[redacted]"` (its name stays, so a change is visible without its value). An allowlist rather than
 * a denylist: a new field carrying a secret is hidden until someone decides it is not one.
 */
export const AUDIT_VISIBLE_FIELDS: ReadonlySet<string> = new Set([
  'environment',
  'network',
  'address',
  'previousAddress',
  'pendingAddress',
  'activeFrom',
  'url',
  'cidrs',
  'email',
  'role',
  'reason',
  'code',
  'enabled',
  'schedule',
  'intervalSeconds',
  'minAmountIdr',
  'overlapHours',
  'retiresAt',
  'keyPrefix',
  'feeIncluded',
  'orderTtlSeconds',
  'paymentToleranceBps',
  'logoUrl',
  'platformFeePercent',
  'name',
  'title',
  'amountIdr',
  'maxUsage',
  'expiresAt',
  'status',
  'filters',
  'deliveryId',
  'paymentLinkId',
  'reauthUntil',
  'tables',
  'resealed',
  'key',
  'count',
  'kek',
  'rewrapped',
  'networks',
  'tokens',
  'settings',
  'id',
  'sessionId',
  'until',
  'depositIds',
  'statuses',
  'createdFrom',
  'createdTo',
  'paidFrom',
  'paidTo',
  'detectedFrom',
  'detectedTo',
  'timeZone',
  'actions',
  'from',
  'to',
  'orderId',
  'kind',
  'amount',
  'autoApproveLimit',
  'feeMode',
  'userId',
  'inviteId',
  'merchantId',
  'fromMerchantId',
  'accountCreated',
  'secondFactor',
  'required',
]);

export const REDACTED = '[redacted]';

/**
 * `s` as PostgreSQL can store it, unchanged otherwise: a lone UTF-16 surrogate (jsonb refuses it, text
 * would silently store U+FFFD and break the row's hash) and NUL (refused by both) become U+FFFD. A
 * login's email or a User-Agent is whatever a client sent.
 */
export function storableText(s: string): string {
  return s.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd').replaceAll('\u0000', '\ufffd');
}

/** `value` with every member outside AUDIT_VISIBLE_FIELDS replaced by REDACTED, at every depth. */
export function redactAudit(value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (Array.isArray(value)) return value.map(redactAudit);
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'string') return storableText(value);
  if (typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      if (v === undefined) continue;
      out[storableText(k)] = AUDIT_VISIBLE_FIELDS.has(k) ? redactAudit(v) : REDACTED;
    }
    return out;
  }
  return value;
}

/**
 * Every GraphQL mutation: the action it records, or why it records none. Order creation and the
 * shopper's steps are the payment flow itself (orders, order_events and webhooks are their record).
 */
export const MUTATION_AUDIT: Record<string, AuditAction | { exempt: string }> = {
  login: 'auth.login',
  logout: 'auth.logout',
  reauthenticate: 'auth.reauthenticated',
  refreshToken: { exempt: 'continues a recorded login; a reused refresh token revokes the session' },
  rotateApiKey: 'api_key.rotated',
  setApiKeyIpAllowlist: 'api_key.allowlist_changed',
  updateMerchantSettings: 'merchant.settings_changed',
  setNotificationUrl: 'webhook.notification_url_changed',
  rotateWebhookSigningSecret: 'webhook.signing_secret_rotated',
  sendTestWebhook: 'webhook.test_sent',
  redeliverWebhook: 'webhook.redelivered',
  setSettlementWallet: 'settlement_wallet.changed',
  setSweepSettings: 'sweep.settings_changed',
  sweepNow: 'sweep.requested',
  createRefund: 'refund.created',
  approveRefund: 'refund.approved',
  cancelRefund: 'refund.cancelled',
  renewRefundClaimLink: 'refund.claim_link_renewed',
  setRefundSettings: 'refund.settings_changed',
  claimRefund: { exempt: 'the customer gives an address through the claim link; the refund.claimed webhook and the refund row record it' },
  createPaymentLink: 'payment_link.created',
  updatePaymentLink: 'payment_link.updated',
  deletePaymentLink: 'payment_link.deleted',
  inviteTeamMember: 'team.invited',
  revokeTeamInvite: 'team.invite_revoked',
  acceptTeamInvite: 'team.invite_accepted',
  changeTeamMemberRole: 'team.role_changed',
  removeTeamMember: 'team.member_removed',
  switchMerchant: 'auth.merchant_switched',
  completeLogin: 'auth.login',
  loginPasskeyOptions: { exempt: 'issues a login challenge; the login it completes is recorded' },
  reauthPasskeyOptions: { exempt: 'issues a challenge; the re-authentication it completes is recorded' },
  passkeyRegistrationOptions: { exempt: 'issues a challenge; the registration it completes is recorded' },
  beginTotpEnrolment: { exempt: 'a pending secret, inactive until confirmed; the confirmation is recorded' },
  confirmTotpEnrolment: 'second_factor.totp_enabled',
  disableTotp: 'second_factor.totp_disabled',
  regenerateRecoveryCodes: 'second_factor.recovery_codes_regenerated',
  registerPasskey: 'second_factor.passkey_registered',
  removePasskey: 'second_factor.passkey_removed',
  setSecondFactorPolicy: 'merchant.second_factor_policy_changed',
  createOrder: { exempt: 'the payment flow (API key): recorded as the order and its events' },
  createDeposit: { exempt: 'the payment flow (checkout): recorded as the deposit' },
  lockQuote: { exempt: 'the payment flow (checkout): recorded as the quote' },
  openPaymentLink: { exempt: 'the payment flow (shopper): recorded as the order' },
};
