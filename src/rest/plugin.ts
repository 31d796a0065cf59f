import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DomainError } from '../common/errors.js';
import { errorEnvelope, toDomainError } from './envelope.js';
import { RateLimitedError, RateLimitStoreError, rateLimitHeaders } from '../modules/limits/rate-limit.service.js';

/** Sends a domain error: the envelope on REST routes, `{errors:[…]}` on `/graphql`. */
export function sendError(req: FastifyRequest, reply: FastifyReply, err: DomainError): FastifyReply {
  if (err.code === 'RATE_LIMITED' && typeof err.details?.retryAfterS === 'number') reply.header('Retry-After', String(err.details.retryAfterS));
  if (err instanceof RateLimitedError) void reply.headers(rateLimitHeaders(err.state));
  if (req.url.split('?')[0] === '/graphql') {
    return reply.code(err.httpStatus).send({ errors: [{ message: err.message, extensions: { code: err.code, ...(err.details ?? {}) } }] });
  }
  return reply.code(err.httpStatus).send(errorEnvelope(err));
}

/**
 * For fastify's `frameworkErrors` option: errors raised before routing (a URL that does not decode,
 * a failed constraint), which never reach the error handler.
 */
export function frameworkError(error: unknown, req: FastifyRequest, reply: FastifyReply): void {
  reply.header('x-request-id', req.id);
  void sendError(req, reply, toDomainError(error));
}

/**
 * True when any string (or object key) in `value` contains U+0000. PostgreSQL cannot store NUL in
 * `text` or `jsonb`; such input would otherwise fail deep in a query as a 500.
 */
export function containsNul(value: unknown, depth = 0): boolean {
  if (typeof value === 'string') return value.includes('\u0000');
  if (depth > 64 || value === null || typeof value !== 'object') return false;
  if (Array.isArray(value)) return value.some((v) => containsNul(v, depth + 1));
  // for…in, not Object.entries: no array per object on every request's body.
  for (const k in value) {
    if (Object.hasOwn(value, k) && (k.includes('\u0000') || containsNul((value as Record<string, unknown>)[k], depth + 1))) return true;
  }
  return false;
}

export const NUL_MESSAGE = 'Text must not contain NUL (\\u0000) characters';

/**
 * Error handling for every HTTP route: REST routes answer with the envelope, `/graphql` with a
 * GraphQL-shaped `{errors:[{message, extensions:{code}}]}`. Nothing from a library or the database
 * reaches the client; 5xx are logged with the request id.
 */
export function installErrorHandling(fastify: FastifyInstance): void {
  // Only JSON bodies: drop fastify's text/plain parser so a wrong content type is a 415, not a string body.
  fastify.removeContentTypeParser('text/plain');

  // Every route, GraphQL included: refuse NUL in the body, query string or path parameters up front.
  fastify.addHook('preValidation', (req, _reply, done) => {
    done(containsNul(req.body) || containsNul(req.query) || containsNul(req.params) ? new DomainError('BAD_REQUEST', NUL_MESSAGE) : undefined);
  });

  const send = sendError;

  fastify.setErrorHandler((error, req, reply) => {
    if (error instanceof RateLimitStoreError) {
      req.log.error({ err: error.cause }, 'rate limiter store failed');
    }
    const domain = toDomainError(error);
    if (domain.httpStatus >= 500) req.log.error({ err: error }, 'request failed');
    else req.log.info({ code: domain.code }, domain.message);
    return send(req, reply, domain);
  });

  // Route patterns by method, to tell "no such path" (404) from "wrong method" (405).
  const patterns: { re: RegExp; method: string }[] = [];
  fastify.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const re = new RegExp('^' + route.url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[^/]+/g, '[^/]+') + '/?$');
    for (const method of methods) patterns.push({ re, method });
  });

  fastify.setNotFoundHandler((req, reply) => {
    const path = req.url.split('?')[0] ?? '/';
    const allowed = [...new Set(patterns.filter((p) => p.re.test(path)).map((p) => p.method))];
    if (allowed.length) {
      reply.header('Allow', allowed.join(', '));
      return send(req, reply, new DomainError('METHOD_NOT_ALLOWED', `Method ${req.method} not allowed; use ${allowed.join(', ')}`));
    }
    return send(req, reply, new DomainError('ROUTE_NOT_FOUND', `No route ${req.method} ${path}`));
  });
}
