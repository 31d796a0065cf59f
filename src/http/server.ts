import { ApolloServer } from '@apollo/server';
import fastifyApollo, { fastifyApolloDrainPlugin } from '@as-integrations/fastify';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { GraphQLError, parse, validate, type GraphQLFormattedError, type GraphQLSchema } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import type { App } from '../app.js';
import { isReady } from '../db/orm.js';
import { buildGqlContext, type GqlContext } from '../graphql/context.js';
import { formatGraphqlError } from '../graphql/errors.js';
import { authRoutes } from '../rest/auth.routes.js';
import { DomainError } from '../common/errors.js';
import { errorEnvelope } from '../rest/envelope.js';
import { containsNul, frameworkError, installErrorHandling, NUL_MESSAGE } from '../rest/plugin.js';
import { registerRoutes, type RestRoute } from '../rest/routes.js';

export interface HttpServer {
  fastify: FastifyInstance;
  /** Stops accepting, closes websockets (1001), drains in-flight requests. */
  close(): Promise<void>;
}

export interface ServerParts {
  schema: GraphQLSchema;
  /** Environment-scoped REST routes (mounted under /api/v2/testnet and /api/v2/mainnet). */
  envRoutes?: RestRoute[];
  /** Extra routes under /api/v2 (outside the environment path). */
  globalRoutes?: RestRoute[];
  /** Non-enveloped routes (checkout page, QR images). */
  extra?: (fastify: FastifyInstance) => void;
  /** More readiness checks for `/readyz` (e.g. local chains and watchers running). */
  readiness?: () => Record<string, boolean>;
}

const asString = (v: unknown): string | undefined => (typeof v === 'string' && v.length > 0 ? v : undefined);

/**
 * Requests Node's HTTP parser rejects before fastify sees them (headers over the size limit, control
 * characters in a header, a garbled request line) still get the envelope — or, on /graphql, a
 * GraphQL-shaped error — instead of fastify's default `{error, message, statusCode}`.
 */
function clientError(err: { code?: string; rawPacket?: unknown }, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const error =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? new DomainError('HEADERS_TOO_LARGE', 'Request headers too large')
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new DomainError('REQUEST_TIMEOUT', 'Request timed out')
        : new DomainError('BAD_REQUEST', 'Malformed HTTP request');
  const { httpStatus: status, code, message } = error;
  const packet = Buffer.isBuffer(err.rawPacket) ? err.rawPacket.subarray(0, 2048).toString('latin1') : '';
  const target = /^[A-Z]+ (\S+)/.exec(packet)?.[1] ?? '';
  const body = target.split('?')[0] === '/graphql' ? JSON.stringify({ errors: [{ message, extensions: { code } }] }) : JSON.stringify(errorEnvelope(error));
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

export async function buildServer(app: App, parts: ServerParts): Promise<HttpServer> {
  const { config } = app;
  const fastify = Fastify({
    loggerInstance: app.log as FastifyBaseLogger,
    bodyLimit: config.BODY_LIMIT_BYTES,
    trustProxy: config.TRUST_PROXY,
    requestIdHeader: false,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.-]{1,64}$/.test(given) ? given : randomUUID();
    },
    return503OnClosing: true,
    clientErrorHandler: (err, socket) => clientError(err, socket),
    frameworkErrors: frameworkError,
  });
  fastify.addHook('onRequest', async (req, reply) => {
    reply.header('x-request-id', req.id);
  });
  installErrorHandling(fastify);

  fastify.get('/healthz', async () => ({ status: 'ok' }));
  fastify.get('/readyz', async (_req, reply) => {
    const r = { ...(await isReady(app.orm)), ...parts.readiness?.() };
    const ok = Object.values(r).every(Boolean);
    return reply.code(ok ? 200 : 503).send({ status: ok ? 'ready' : 'not_ready', ...r });
  });

  registerRoutes(fastify, app, authRoutes(app), 'global');
  if (parts.globalRoutes) registerRoutes(fastify, app, parts.globalRoutes, 'global');
  if (parts.envRoutes) registerRoutes(fastify, app, parts.envRoutes, 'environment');
  parts.extra?.(fastify);

  // GraphQL over HTTP (Apollo) and over WebSocket (graphql-ws) on the same port and path.
  const formatError = formatGraphqlError(app.log);
  const apollo = new ApolloServer<GqlContext>({
    schema: parts.schema,
    introspection: true,
    includeStacktraceInErrorResponses: false,
    // Shutdown is ours (src/main.ts): Apollo's own handler would re-raise the signal mid-drain.
    stopOnTerminationSignals: false,
    formatError,
    plugins: [fastifyApolloDrainPlugin(fastify)],
  });
  await apollo.start();
  fastify.addHook('preHandler', async (req) => {
    if (req.routeOptions.url === '/graphql') await app.rateLimits.consume('graphql', req.ip);
  });
  await fastify.register(fastifyApollo(apollo), {
    path: '/graphql',
    context: async (req) =>
      buildGqlContext(
        app,
        { authorization: asString(req.headers.authorization), apiKey: asString(req.headers['api-key']), checkoutKey: asString(req.headers['x-checkout-key']) },
        { ip: req.ip, requestId: req.id },
      ),
  });

  /** Errors graphql-js raises itself (syntax, validation, variable coercion) have no code: Apollo adds one over HTTP. */
  const formatWsErrors = (errors: readonly GraphQLError[], clientCode: (e: GraphQLError) => string): GraphQLFormattedError[] =>
    errors.map((e) => {
      const json = e.toJSON();
      const own = !e.path && !json.extensions?.code && (!e.originalError || e.originalError instanceof GraphQLError);
      if (own) return formatError({ ...json, extensions: { ...json.extensions, code: clientCode(e) } }, e);
      return formatError(json, e.originalError ?? e);
    });
  const wss = new WebSocketServer({ noServer: true, maxPayload: config.BODY_LIMIT_BYTES });
  const wsServer = useServer<Record<string, unknown> | undefined>(
    {
      schema: parts.schema,
      // A fresh context (and EntityManager fork) per operation, never one for the socket's whole life.
      context: async (ctx) => {
        const p = ctx.connectionParams ?? {};
        const req = ctx.extra.request;
        return buildGqlContext(
          app,
          { authorization: asString(p.authorization) ?? asString(p.Authorization), apiKey: asString(p['api-key']) ?? asString(p.apiKey), checkoutKey: asString(p.key) ?? asString(p.checkoutKey) },
          { ip: req.socket.remoteAddress ?? 'unknown', requestId: randomUUID() },
        );
      },
      // graphql-ws bypasses Apollo's formatError: parse/validate here so a bad query is an error message
      // (not a 4500 close of the whole socket), and format every error with the same mapping as HTTP.
      onSubscribe: (_ctx, _id, payload) => {
        if (containsNul(payload.variables) || containsNul(payload.query)) return [new GraphQLError(NUL_MESSAGE, { extensions: { code: 'BAD_USER_INPUT' } })];
        let document;
        try {
          document = parse(payload.query);
        } catch (e) {
          if (e instanceof GraphQLError) return [e];
          throw e;
        }
        const invalid = validate(parts.schema, document);
        if (invalid.length) return invalid;
        return { schema: parts.schema, document, operationName: payload.operationName, variableValues: payload.variables };
      },
      onNext: (_ctx, _id, _payload, _args, result) => (result.errors ? { ...result, errors: formatWsErrors(result.errors, () => 'BAD_USER_INPUT') } : undefined),
      onError: (_ctx, _id, _payload, errors) => {
        app.log.info({ errors: errors.map((e) => e.message) }, 'graphql-ws operation failed');
        return formatWsErrors(errors, (e) => (e.message.startsWith('Syntax Error') ? 'GRAPHQL_PARSE_FAILED' : 'GRAPHQL_VALIDATION_FAILED'));
      },
    },
    wss,
  );
  fastify.server.on('upgrade', (req, socket, head) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/graphql') {
      socket.destroy();
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
  });

  return {
    fastify,
    close: async () => {
      await wsServer.dispose();
      for (const client of wss.clients) client.close(1001, 'server shutting down');
      await new Promise<void>((ok) => wss.close(() => ok()));
      await fastify.close();
      await apollo.stop().catch(() => undefined);
    },
  };
}
