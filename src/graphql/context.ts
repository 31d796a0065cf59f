import { createHash } from 'node:crypto';
import type { App } from '../app.js';
import type { Caller, RequestContext } from '../common/context.js';
import { safeEqual } from '../common/crypto.js';
import { DomainError, isDomainError } from '../common/errors.js';
import { createOrderLoaders, type OrderLoaders } from '../modules/orders/order.loaders.js';

/** GraphQL context: the request context plus the app. Built per HTTP request / per WS operation. */
export interface GqlContext extends RequestContext {
  app: App;
  /** Set when credentials were sent but rejected; the auth checker surfaces it on protected fields. */
  authError: DomainError | null;
  /** Batch loaders of the request (one query per child kind for a page of orders); never shared across requests. */
  loaders: OrderLoaders;
  /** The request carried the operator token (`x-operator-token`, config `OPERATOR_TOKEN`): operator queries only. */
  operator: boolean;
  /**
   * Runs the same authentication again with the credentials the operation came with (a fresh
   * EntityManager): the refusal when they are no longer valid (rotated, expired, revoked), else null.
   * Long-lived subscriptions call it periodically (credential-lapse.ts).
   */
  reauthenticate: () => Promise<DomainError | null>;
  /** A digest of the credentials the operation came with (never the raw key): shares re-checks between subscriptions. */
  credentialKey: string;
}

export interface Credentials {
  authorization?: string;
  apiKey?: string;
  checkoutKey?: string;
  operatorToken?: string;
}

/** Resolves whichever credential is present. Bad credentials do not fail public operations (like `login`). */
export async function buildGqlContext(
  app: App,
  creds: Credentials,
  meta: { ip: string; requestId: string; userAgent?: string | null },
  opts: { subscription?: boolean } = {},
): Promise<GqlContext> {
  let em: GqlContext['em'] | undefined = app.orm.em.fork();
  let caller: Caller = { kind: 'anonymous' };
  let authError: DomainError | null = null;
  try {
    caller = await resolveCaller(app, em, creds, meta.ip);
  } catch (e) {
    if (!isDomainError(e)) throw e;
    authError = e;
  }
  // A subscription's context lives as long as its stream (10,000 of them on one process): it keeps
  // no EntityManager or loaders of its own; one is forked only if something reads it.
  if (opts.subscription) em = undefined;
  let loaders: OrderLoaders | undefined;
  const environment = 'environment' in caller ? caller.environment : null;
  const expected = app.config.OPERATOR_TOKEN;
  const operator = !!expected && !!creds.operatorToken && safeEqual(creds.operatorToken, expected);
  const ctx: GqlContext = {
    app,
    get em() {
      return (em ??= app.orm.em.fork());
    },
    set em(value) {
      em = value;
    },
    get loaders() {
      return (loaders ??= createOrderLoaders(ctx.em));
    },
    set loaders(value) {
      loaders = value;
    },
    caller,
    environment,
    ip: meta.ip,
    requestId: meta.requestId,
    userAgent: meta.userAgent ?? null,
    ...(operator && { operatorName: 'operator-token' }),
    authError,
    operator,
    reauthenticate: () => reauthenticate(app, creds, meta.ip),
    credentialKey: createHash('sha256')
      .update(JSON.stringify([creds.authorization, creds.apiKey, creds.checkoutKey]))
      .digest('base64url'),
  };
  return ctx;
}

async function resolveCaller(app: App, em: GqlContext['em'], creds: Credentials, ip: string): Promise<Caller> {
  if (creds.authorization) {
    const m = creds.authorization.match(/^Bearer\s+(\S+)$/i);
    if (!m) throw new DomainError('UNAUTHENTICATED', 'Authorization must be "Bearer <access token>"');
    return app.auth.authenticate(em, m[1]!);
  }
  // A checkout page may send its scoped key as `x-checkout-key` or, like the REST flow, as `api-key`.
  if (creds.checkoutKey || (creds.apiKey && app.checkoutKeys.isCheckoutKey(creds.apiKey)))
    return app.checkoutKeys.authenticate(em, (creds.checkoutKey ?? creds.apiKey)!);
  if (creds.apiKey) return app.apiKeys.authenticateAny({ em }, creds.apiKey, ip);
  return { kind: 'anonymous' };
}

/** Domain refusals are a lapse; anything else (a lost database) proves nothing and counts as still valid. */
async function reauthenticate(app: App, creds: Credentials, ip: string): Promise<DomainError | null> {
  try {
    await resolveCaller(app, app.orm.em.fork(), creds, ip);
    return null;
  } catch (e) {
    return isDomainError(e) ? e : null;
  }
}
