import { UseMiddleware, type MiddlewareFn } from 'type-graphql';
import type { Environment } from '../common/environment.js';
import { DomainError } from '../common/errors.js';
import type { LimitKind } from '../modules/limits/rate-limit.service.js';
import type { GqlContext } from './context.js';

/*
 * What every resolver would otherwise do by hand before calling its service: settle the request's
 * environment from the `environment` argument, and take a rate-limit point. Applied per field with
 * `@UseMiddleware(…)` / `@RateLimited(…)`; type-graphql runs them after the `@Authorized` check.
 */

const environmentArg = (args: Record<string, unknown>): Environment | null => (args.environment as Environment | null | undefined) ?? null;

/**
 * Merchant fields: a dashboard session spans both environments, so it must name one; API and
 * checkout keys belong to one environment and keep it (the argument is ignored for them).
 */
export const EnvironmentArg: MiddlewareFn<GqlContext> = ({ args, context }, next) => {
  if (context.caller.kind === 'dashboard') {
    const environment = environmentArg(args);
    if (!environment) throw new DomainError('VALIDATION_FAILED', 'environment is required for dashboard calls');
    context.environment = environment;
  }
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
