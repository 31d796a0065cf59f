import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Readable } from 'node:stream';
import type { App } from '../app.js';
import { resolveEnvironment } from '../common/access.js';
import { lazyRequestContext, type Caller, type RequestContext } from '../common/context.js';
import { ENV_PATH, ENVIRONMENTS, type Environment } from '../common/environment.js';
import { DomainError, isDomainError } from '../common/errors.js';
import { envelope } from './envelope.js';
import { rateLimitHeaders, type LimitKind, type LimitState } from '../modules/limits/rate-limit.service.js';

/** `merchant`: the merchant's server (API key of the path's environment) or a dashboard session (`Authorization: Bearer`). */
export type RouteAuth = 'public' | 'apiKey' | 'dashboard' | 'checkout' | 'merchant';

export interface RestResult {
  status?: number;
  message?: string;
  data?: unknown;
  /** A non-JSON success body (QR images, CSV streams); errors still use the envelope. */
  raw?: { contentType: string; body: string | Buffer | Readable; headers?: Record<string, string> };
  /** Extra response headers (e.g. `Idempotent-Replayed`). */
  headers?: Record<string, string>;
}

export interface RestRoute {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** Path below the environment prefix (or below `/api/v2` for environment-less routes). */
  url: string;
  auth: RouteAuth;
  /** Limiter keyed by IP (public/auth/login), or `merchant`: the caller's budget (RateLimits.consumeCaller). */
  limit: LimitKind;
  handler: (ctx: RequestContext, req: FastifyRequest) => Promise<RestResult>;
}

/** Resolves the caller for a route's auth mode. `checkout` routes accept a scoped key or the merchant API key. */
export async function authenticate(app: App, req: FastifyRequest, ctx: RequestContext, auth: RouteAuth): Promise<Caller> {
  switch (auth) {
    case 'public':
      return { kind: 'anonymous' };
    case 'apiKey': {
      const raw = header(req, 'api-key');
      if (raw && app.checkoutKeys.isCheckoutKey(raw))
        throw new DomainError('SCOPE_DENIED', 'A checkout key is valid only for its order’s checkout operations; use the merchant API key');
      return app.apiKeys.authenticate(ctx, raw, ctx.environment!, req.ip);
    }
    case 'merchant':
      return authenticate(app, req, ctx, header(req, 'authorization') !== undefined ? 'dashboard' : 'apiKey');
    case 'dashboard': {
      const h = header(req, 'authorization');
      const m = h?.match(/^Bearer\s+(\S+)$/i);
      if (!m) throw new DomainError('UNAUTHENTICATED', 'Missing Authorization: Bearer <access token>');
      return app.auth.authenticate(ctx.em, m[1]!);
    }
    case 'checkout': {
      // A checkout page presents its scoped key; a merchant server may use its API key instead.
      const raw = header(req, 'api-key') ?? (req.query as Record<string, string> | undefined)?.key;
      if (raw && app.checkoutKeys.isCheckoutKey(raw)) {
        const caller = await app.checkoutKeys.authenticate(ctx.em, raw);
        resolveEnvironment(caller, ctx.environment, 'refuse');
        return caller;
      }
      return app.apiKeys.authenticate(ctx, raw, ctx.environment!, req.ip);
    }
  }
}

export function header(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * Registers routes as thin adapters: a context (its EntityManager forked on first use), authenticate, rate-limit, call the
 * service, wrap the result in the envelope. Environment-scoped routes are mounted under both
 * `/api/v2/testnet` and `/api/v2/mainnet`.
 */
export function registerRoutes(fastify: FastifyInstance, app: App, routes: RestRoute[], scope: 'environment' | 'global'): void {
  const mounts: { prefix: string; environment: Environment | null }[] =
    scope === 'environment' ? ENVIRONMENTS.map((e) => ({ prefix: `/api/v2/${ENV_PATH[e]}`, environment: e })) : [{ prefix: '/api/v2', environment: null }];
  for (const mount of mounts) {
    for (const route of routes) {
      fastify.route({
        method: route.method,
        url: mount.prefix + route.url,
        handler: async (req: FastifyRequest, reply: FastifyReply) => {
          // The EntityManager is forked only when the route first uses it (lazyRequestContext).
          const ctx = lazyRequestContext(() => app.orm.em.fork(), {
            caller: { kind: 'anonymous' },
            environment: mount.environment,
            ip: req.ip,
            requestId: req.id,
            userAgent: userAgentOf(req.headers['user-agent']),
          });
          let limit: LimitState | null = route.limit !== 'merchant' ? await app.rateLimits.consume(route.limit, req.ip) : null;
          try {
            ctx.caller = await authenticate(app, req, ctx, route.auth);
          } catch (e) {
            // Failed credentials count against the IP, so keys cannot be guessed at the merchant rate.
            if (isDomainError(e) && e.httpStatus === 401) await app.rateLimits.consume('auth', req.ip);
            throw e;
          }
          // Merchant routes: the caller's own budget (a checkout key never spends the merchant's quota).
          if (route.limit === 'merchant') limit = await app.rateLimits.consumeCaller(ctx.caller, req.ip);
          const result = await route.handler(ctx, req);
          const status = result.status ?? 200;
          if (limit) void reply.headers(rateLimitHeaders(limit));
          if (result.headers) void reply.headers(result.headers);
          if (result.raw)
            return reply
              .code(status)
              .type(result.raw.contentType)
              .header('cache-control', 'no-store')
              .headers(result.raw.headers ?? {})
              .send(result.raw.body);
          return reply.code(status).send(envelope(status, result.message ?? 'Success', result.data));
        },
      });
    }
  }
}

/** The User-Agent as the audit trail stores it: at most 512 characters, control characters removed. */
export function userAgentOf(header: unknown): string | null {
  if (typeof header !== 'string' || header === '') return null;
  // eslint-disable-next-line no-control-regex
  return header.replace(/[\u0000-\u001f\u007f]/g, '').slice(0, 512);
}
