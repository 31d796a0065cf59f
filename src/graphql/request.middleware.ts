import { UseMiddleware, type MiddlewareFn } from 'type-graphql';
import type { Environment } from '../common/environment.js';
import { resolveEnvironment } from '../common/access.js';
import type { LimitKind } from '../modules/limits/rate-limit.service.js';
import type { GqlContext } from './context.js';

/*
 * What every resolver would otherwise do by hand before calling its service: settle the request's
 * environment from the `environment` argument, and take a rate-limit point. Applied per field with
 * `@UseMiddleware(…)` / `@RateLimited(…)`; type-graphql runs them after the `@Authorized` check.
 */

const environmentArg = (args: Record<string, unknown>): Environment | null => (args.environment as Environment | null | undefined) ?? null;

/**
 * Merchant fields: the request's environment by the one rule (access.ts `resolveEnvironment`): a
 * dashboard session must name one, API and checkout keys keep their own (the argument is ignored).
 */
export const EnvironmentArg: MiddlewareFn<GqlContext> = ({ args, context }, next) => {
  if (context.caller.kind !== 'anonymous') context.environment = resolveEnvironment(context.caller, environmentArg(args));
  return next();
};

/** Public fields (checkout pages): the object decides its environment; the argument may narrow it, credentials sent along do not. */
export const PublicEnvironmentArg: MiddlewareFn<GqlContext> = ({ args, context }, next) => {
  context.environment = environmentArg(args);
  return next();
};

/** One point of the named per-IP limit before the field runs (login, token refresh, public link opens). */
export function RateLimited(kind: Exclude<LimitKind, 'merchant'>): MethodDecorator {
  const limit: MiddlewareFn<GqlContext> = async ({ context }, next) => {
    await context.app.rateLimits.consume(kind, context.ip);
    return next();
  };
  return UseMiddleware(limit);
}
