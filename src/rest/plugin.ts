import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DomainError } from '../common/errors.js';
import { errorEnvelope, toDomainError } from './envelope.js';
import { RateLimitStoreError } from './rate-limit.js';

/**
 * Error handling for every HTTP route: REST routes answer with the envelope, `/graphql` with a
 * GraphQL-shaped `{errors:[{message, extensions:{code}}]}`. Nothing from a library or the database
 * reaches the client; 5xx are logged with the request id.
 */
export function installErrorHandling(fastify: FastifyInstance): void {
  // Only JSON bodies: drop fastify's text/plain parser so a wrong content type is a 415, not a string body.
  fastify.removeContentTypeParser('text/plain');

  const send = (req: FastifyRequest, reply: FastifyReply, err: DomainError) => {
    if (err.code === 'RATE_LIMITED' && typeof err.details?.retryAfterS === 'number') reply.header('Retry-After', String(err.details.retryAfterS));
    if (req.url.startsWith('/graphql')) {
      return reply.code(err.httpStatus).send({ errors: [{ message: err.message, extensions: { code: err.code, ...(err.details ?? {}) } }] });
    }
    return reply.code(err.httpStatus).send(errorEnvelope(err));
  };

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
