import type { RestRoute } from './routes.js';
import { merchantView, tokenPairView, userView } from './merchant.views.js';
import { loginChallengeView, toLogin, toRefresh, toSecondFactorProof, toSecondStep } from './auth.mappers.js';
import { DomainError } from '../common/errors.js';
import { toMerchantSettings } from './merchant.mappers.js';
import type { App } from '../app.js';
import { teamRoutes } from './team.routes.js';

/** `/api/v2/auth/*`: dashboard login, refresh rotation, logout (server-side revocation), me, memberships; the team (`/api/v2/team/*`); and the dashboard's `/api/v2/merchant/settings`. */
export function authRoutes(app: App): RestRoute[] {
  return [
    {
      method: 'POST',
      url: '/auth/login',
      auth: 'public',
      limit: 'login',
      handler: async (ctx, req) => {
        const outcome = await app.auth.login(ctx, toLogin(req.body));
        if (outcome.kind === 'session') return { message: 'Login successful', data: tokenPairView(outcome.pair) };
        // A user with a second factor: no session yet, a challenge for /auth/login/second-factor.
        throw new DomainError(
          'SECOND_FACTOR_REQUIRED',
          'Password accepted; complete the sign-in with your second factor (POST /auth/login/second-factor)',
          loginChallengeView(outcome.challenge),
        );
      },
    },
    {
      // The login's second step (GraphQL `completeLogin`): the challenge token and one second factor.
      method: 'POST',
      url: '/auth/login/second-factor',
      auth: 'public',
      limit: 'login',
      handler: async (ctx, req) => {
        const b = toSecondStep(req.body);
        return { message: 'Login successful', data: tokenPairView((await app.auth.completeLogin(ctx, b.challengeToken, b.proof)).pair) };
      },
    },
    {
      method: 'POST',
      url: '/auth/refresh',
      auth: 'public',
      limit: 'auth',
      handler: async (ctx, req) => ({ message: 'Token refreshed', data: tokenPairView(await app.auth.refresh(ctx, toRefresh(req.body))) }),
    },
    {
      method: 'POST',
      url: '/auth/logout',
      auth: 'dashboard',
      limit: 'auth',
      handler: async (ctx) => {
        await app.auth.logout(ctx);
        return { message: 'Logged out', data: {} };
      },
    },
    {
      // The password again: sensitive operations on this session for REAUTH_WINDOW_S (GraphQL `reauthenticate`).
      method: 'POST',
      url: '/auth/reauthenticate',
      auth: 'dashboard',
      limit: 'auth',
      handler: async (ctx, req) => {
        const body = (req.body ?? {}) as { password?: unknown };
        const r = await app.auth.reauthenticate(ctx, typeof body === 'object' ? body.password : undefined, toSecondFactorProof(req.body));
        return { message: 'Re-authenticated', data: { reauthenticated_until: Math.floor(r.until.getTime() / 1000), second_factor: r.secondFactor } };
      },
    },
    {
      method: 'GET',
      url: '/auth/me',
      auth: 'dashboard',
      limit: 'auth',
      handler: async (ctx) => {
        const { user, merchant, role } = await app.merchants.profile(ctx);
        return { data: { user: userView(user, role), merchant: merchantView(merchant) } };
      },
    },
    ...teamRoutes(app),
    {
      // The dashboard's merchant settings (owner/admin), the REST twin of `updateMerchantSettings`.
      method: 'PUT',
      url: '/merchant/settings',
      auth: 'dashboard',
      limit: 'merchant',
      handler: async (ctx, req) => ({ message: 'Settings saved', data: merchantView(await app.merchants.updateSettings(ctx, toMerchantSettings(req.body))) }),
    },
  ];
}
