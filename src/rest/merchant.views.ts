import { unix } from '../common/time.js';
import type { TokenPair } from '../modules/merchants/auth.service.js';
import type { DashboardUser } from '../modules/merchants/dashboard-user.entity.js';
import type { Merchant } from '../modules/merchants/merchant.entity.js';

/** REST (snake_case) view of a merchant; the GraphQL type maps the same entity. */
export function merchantView(m: Merchant) {
  return {
    merchant_id: m.id,
    name: m.name,
    platform_fee_percent: m.platformFeePercent,
    fee_included: m.feeIncluded,
    order_ttl_seconds: m.orderTtlSeconds,
    payment_tolerance_bps: m.settings.paymentToleranceBps ?? 0,
    logo_url: m.settings.logoUrl ?? null,
    notification_url: { sandbox: m.notificationUrlSandbox, production: m.notificationUrlProduction },
    created_at: unix(m.createdAt),
  };
}

/** The signed-in user with their role in the session's merchant. */
export function userView(u: DashboardUser, role: string) {
  return { user_id: u.id, email: u.email, role, user_type: 'merchant' };
}

/** `auth/login` and `auth/refresh`: the token pair as the spec names it. */
export function tokenPairView(p: TokenPair) {
  return {
    token: p.token,
    refresh_token: p.refreshToken,
    token_type: p.tokenType,
    expires_in: p.expiresIn,
    expired_at: p.expiredAt,
    refresh_expired_at: p.refreshExpiredAt,
  };
}
