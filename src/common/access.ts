import type { Caller, RequestContext } from './context.js';
import { ENV_PATH, type Environment } from './environment.js';
import { DomainError } from './errors.js';
import { can, PERMISSIONS, type Permission } from './permissions.js';

/**
 * Who may do what: the one place services check the caller. Transports authenticate (they build
 * `ctx.caller`); services call these before touching data, so REST, GraphQL and the CLI refuse the
 * same callers with the same codes. Roles: requirePermission against the table in permissions.ts.
 */

export type MerchantCaller = Exclude<Caller, { kind: 'anonymous' }>;
export type DashboardCaller = Extract<Caller, { kind: 'dashboard' }>;
export type ApiKeyCaller = Extract<Caller, { kind: 'apiKey' }>;

/**
 * The merchant requires a second factor and this user has none yet: the session may only enrol one
 * (and read who it is, re-authenticate, log out). Every other check below refuses it.
 */
function refuseEnrolmentPending(caller: Caller): void {
  if (caller.kind === 'dashboard' && caller.enrolmentRequired) {
    throw new DomainError('SECOND_FACTOR_ENROLMENT_REQUIRED', 'Your merchant requires a second factor: set up an authenticator app or a passkey first');
  }
}

/** Any credential that names a merchant (API key, checkout key, dashboard session). */
export function requireMerchant(ctx: Pick<RequestContext, 'caller'>): MerchantCaller {
  const { caller } = ctx;
  if (caller.kind === 'anonymous') throw new DomainError('UNAUTHENTICATED', 'Authentication required');
  refuseEnrolmentPending(caller);
  return caller;
}

/**
 * A merchant credential other than a one-order checkout key (listings, dashboards, reports): an API
 * key, or a dashboard member whose role has `permission` (permissions.ts).
 */
export function requireMerchantWide(ctx: Pick<RequestContext, 'caller'>, what: string, permission?: Permission): Exclude<MerchantCaller, { kind: 'checkout' }> {
  const { caller } = ctx;
  if (caller.kind === 'anonymous' || caller.kind === 'checkout') throw new DomainError('FORBIDDEN', `${what} needs a merchant credential`);
  refuseEnrolmentPending(caller);
  if (permission && caller.kind === 'dashboard') refuseRole(caller, permission);
  return caller;
}

/** The merchant's server: only its API key creates orders. */
export function requireApiKey(ctx: Pick<RequestContext, 'caller'>): ApiKeyCaller {
  const { caller } = ctx;
  if (caller.kind === 'apiKey') return caller;
  if (caller.kind === 'checkout') throw new DomainError('SCOPE_DENIED', 'A checkout key cannot create orders');
  throw new DomainError('UNAUTHENTICATED', 'A merchant API key is required');
}

/**
 * A dashboard session. `elsewhere`, when given, is the FORBIDDEN message for other credentials (a
 * feature that exists only in the dashboard); without it any other caller is simply not signed in.
 */
export function requireDashboard(ctx: Pick<RequestContext, 'caller'>, elsewhere?: string): DashboardCaller {
  const caller = requireDashboardSession(ctx, elsewhere);
  refuseEnrolmentPending(caller);
  return caller;
}

/**
 * Any dashboard session, including one that must still enrol a second factor (the merchant's policy):
 * only for the user's own sign-in matters (who am I, re-authenticate, log out, manage second factors).
 */
export function requireDashboardSession(ctx: Pick<RequestContext, 'caller'>, elsewhere?: string): DashboardCaller {
  const { caller } = ctx;
  if (caller.kind === 'dashboard') return caller;
  if (elsewhere && caller.kind !== 'anonymous') throw new DomainError('FORBIDDEN', elsewhere);
  throw new DomainError('UNAUTHENTICATED', 'Dashboard login required');
}

/**
 * The user's own second factors (enrol, remove, regenerate recovery codes): any role, on a session
 * fresh from `reauthenticate` — password, and the second factor when the user has one.
 */
export function requireFreshSession(ctx: Pick<RequestContext, 'caller'>, action: string): DashboardCaller {
  const caller = requireDashboardSession(ctx);
  refuseStale(caller, action);
  return caller;
}

function refuseStale(caller: DashboardCaller, action: string): void {
  if (!caller.reauthUntil || caller.reauthUntil <= Date.now()) {
    throw new DomainError(
      'REAUTHENTICATION_REQUIRED',
      `To ${action}, confirm your password (and your second factor, when you have one) first (reauthenticate); it counts for a few minutes`,
    );
  }
}

/**
 * A dashboard member allowed `permission` by the permission table (permissions.ts): the one role
 * check for REST, GraphQL and the CLI. Other credentials: `elsewhere` (the FORBIDDEN message for a
 * dashboard-only feature) or UNAUTHENTICATED, as requireDashboard.
 */
export function requirePermission(ctx: Pick<RequestContext, 'caller'>, permission: Permission, elsewhere?: string): DashboardCaller {
  const caller = requireDashboard(ctx, elsewhere);
  refuseRole(caller, permission);
  return caller;
}

function refuseRole(caller: DashboardCaller, permission: Permission): void {
  if (!can(caller.role, permission)) {
    throw new DomainError('FORBIDDEN', `Your role (${caller.role}) cannot ${PERMISSIONS[permission].action}`, { permission, role: caller.role });
  }
}

/**
 * A sensitive operation (rotating an API key, the notification URL, the sweep schedule, team
 * changes): a member whose role has `permission` and whose session proved the password again
 * (`reauthenticate`) within `REAUTH_WINDOW_S` — and, when the user has a second factor, that factor
 * too (AuthService.authenticate computes `reauthUntil` from both). A stolen access token alone —
 * valid for its 15 minutes — cannot do these. The role is checked first, so a viewer or another
 * credential gets the same code as before. `action` completes "To …, confirm your password first".
 */
export function requireFreshAuth(ctx: Pick<RequestContext, 'caller'>, permission: Permission, action: string, elsewhere?: string): DashboardCaller {
  const caller = requirePermission(ctx, permission, elsewhere);
  refuseStale(caller, action);
  return caller;
}

/**
 * The order an already-found row may be acted on by this caller: a checkout key is valid for its
 * own order only. (Another merchant's order is never found: lookups are by the caller's merchant.)
 */
export function requireOrderScope(ctx: Pick<RequestContext, 'caller'>, orderId: string): void {
  const { caller } = ctx;
  if (caller.kind === 'checkout' && caller.orderId !== orderId) throw new DomainError('SCOPE_DENIED', 'This checkout key is valid only for its own order');
}

/**
 * A merchant id the client named (legacy REST bodies carry `merchant_id`) must be the caller's own.
 * `credential` words the message for the transport ("the API key", "the signed-in merchant").
 */
export function requireSameMerchant(ctx: Pick<RequestContext, 'caller'>, merchantId: string, credential = 'the credential'): void {
  const caller = requireMerchant(ctx);
  if (caller.merchantId !== merchantId) throw new DomainError('MERCHANT_MISMATCH', `merchant_id does not match ${credential}`);
}

/**
 * Which environment an operation runs in: the one rule for REST, GraphQL (queries, mutations,
 * subscriptions) and services. An API or checkout key belongs to one environment and acts only in it;
 * an environment the request names besides (a GraphQL argument, an input field, the REST path) is
 * ignored (`mismatch: 'ignore'`, the default: the key decides) or refused with WRONG_ENVIRONMENT
 * (`'refuse'`: the request says where it means to act, and a key of the other one must not pass
 * silently). A dashboard session spans both environments, so the request must name one.
 */
export function resolveEnvironment(caller: Caller, named: Environment | null | undefined, mismatch: 'ignore' | 'refuse' = 'ignore'): Environment {
  if ('environment' in caller) {
    if (mismatch === 'refuse' && named && named !== caller.environment) {
      const what = caller.kind === 'apiKey' ? 'API key' : 'checkout key';
      throw new DomainError(
        'WRONG_ENVIRONMENT',
        `A ${caller.environment} ${what} cannot be used in ${named} (its paths are /api/v2/${ENV_PATH[caller.environment]}/)`,
      );
    }
    return caller.environment;
  }
  if (named) return named;
  throw new DomainError('VALIDATION_FAILED', caller.kind === 'dashboard' ? 'environment is required for dashboard calls' : 'environment is required');
}

/** The environment of a request's context (resolveEnvironment with the path's or argument's environment). */
export function requireEnvironment(ctx: Pick<RequestContext, 'caller' | 'environment'>): Environment {
  return resolveEnvironment(ctx.caller, ctx.environment);
}
