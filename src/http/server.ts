import { ApolloServer } from '@apollo/server';
import { ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import fastifyApollo, { fastifyApolloDrainPlugin } from '@as-integrations/fastify';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import {
  getOperationAST,
  GraphQLError,
  NoSchemaIntrospectionCustomRule,
  parse,
  specifiedRules,
  validate,
  type GraphQLFormattedError,
  type GraphQLSchema,
} from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import type { App } from '../app.js';
import { isReady } from '../db/orm.js';
import { buildGqlContext, type GqlContext } from '../graphql/context.js';
import { DocumentCache } from '../graphql/document-cache.js';
import { SubscriptionFanOut } from '../graphql/fan-out.js';
import { operationLimitError, SubscriptionSlots, subscriptionKey, toGraphQLError, type OperationLimits } from '../graphql/limits.js';
import { formatGraphqlError } from '../graphql/errors.js';
import { authRoutes } from '../rest/auth.routes.js';
import { DomainError, isDomainError } from '../common/errors.js';
import { errorEnvelope } from '../rest/envelope.js';
import { registerExplorer, registerGraphqlBrowserGet } from './explorer.js';
import { containsNul, frameworkError, installErrorHandling, NUL_MESSAGE } from '../rest/plugin.js';
import { RateLimitStoreError } from '../modules/limits/rate-limit.service.js';
import { registerRoutes, userAgentOf, type RestRoute } from '../rest/routes.js';
import { registerPages, type PageRoute } from './page-routes.js';
import { registerOpenApi } from './openapi.route.js';
import { registerMetrics } from './metrics.route.js';
import { requestLogger } from './logger.js';
import type { Logger } from 'pino';
import { gasTankHealth } from '../modules/sweeps/gas-tank.service.js';
import { unix } from '../common/time.js';
import { readWatcherHealth, watcherState } from '../modules/payments/watcher-health.js';

export interface HttpServer {
  fastify: FastifyInstance;
  /** Stops accepting, closes websockets (1001), drains in-flight requests. */
  close(): Promise<void>;
  /** The graphql-ws subscriptions' shared-feed groups. */
  fanOut: SubscriptionFanOut;
}

export interface ServerParts {
  schema: GraphQLSchema;
  /** Environment-scoped REST routes (mounted under /api/v2/testnet and /api/v2/mainnet). */
  envRoutes?: RestRoute[];
  /** Extra routes under /api/v2 (outside the environment path). */
  globalRoutes?: RestRoute[];
  /** The hosted pages' routes (checkout pages, the dashboard): HTML and assets outside the envelope. */
  pages?: readonly PageRoute[];
  /** More readiness checks for `/readyz` (e.g. local chains and watchers running). */
  readiness?: () => Record<string, boolean>;
  /** True once the process is stopping: `/readyz` answers 503 so load balancers take it out first. */
  draining?: () => boolean;
}

const asString = (v: unknown): string | undefined => (typeof v === 'string' && v.length > 0 ? v : undefined);

/** `{query, variables, operationName}` of a GraphQL HTTP request (POST body or GET query string); undefined when absent. */
function graphqlRequest(req: {
  method: string;
  body?: unknown;
  query?: unknown;
}): { query: string; variables?: Record<string, unknown>; operationName?: string } | undefined {
  const source = (req.method === 'GET' ? req.query : req.body) as Record<string, unknown> | undefined;
  if (!source || typeof source !== 'object' || Array.isArray(source) || typeof source.query !== 'string') return undefined;
  let variables = source.variables;
  if (typeof variables === 'string') {
    try {
      variables = JSON.parse(variables);
    } catch {
      variables = undefined;
    }
  }
  return {
    query: source.query,
    variables: variables && typeof variables === 'object' && !Array.isArray(variables) ? (variables as Record<string, unknown>) : undefined,
    operationName: asString(source.operationName),
  };
}

const SERVER_ONLY_TYPES = new Set(['next', 'error', 'connection_ack']);
function isServerOnlyMessage(data: Buffer): boolean {
  try {
    const m = JSON.parse(data.toString('utf8')) as { type?: unknown } | null;
    return typeof m?.type === 'string' && SERVER_ONLY_TYPES.has(m.type);
  } catch {
    return false;
  }
}

/**
 * REST's per-caller budgets for one GraphQL operation (src/rest/routes.ts): rejected credentials
 * count against the IP's auth budget, a merchant's operations against the merchant's budget, a
 * checkout key's against its own per-key and per-IP checkout budgets (never the merchant's quota).
 */
async function consumeCallerLimits(app: App, ctx: GqlContext): Promise<void> {
  if (ctx.authError) await app.rateLimits.consume('auth', ctx.ip);
  await app.rateLimits.consumeCaller(ctx.caller, ctx.ip);
}

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

/**
 * Every gas tank's last state as its sweep job stored it (no RPC from a probe): public address,
 * balance and threshold in native base units (strings), and what to do about it. Never a key.
 * Undefined when the table cannot be read (the checks above say why).
 */
async function gasTankDetails(app: App) {
  try {
    const tanks = await app.gasTanks.states(app.orm.em.fork());
    return tanks.map((t) => ({
      environment: t.environment,
      network: t.network,
      address: t.address,
      balance: t.balance?.toString() ?? null,
      threshold: t.lowThreshold.toString(),
      needed: t.needed.toString(),
      state: gasTankHealth(t),
      checked_at: unix(t.checkedAt),
    }));
  } catch (err) {
    app.log.warn({ err: err instanceof Error ? err.message : String(err) }, '/readyz: gas tank states unreadable');
    return undefined;
  }
}

/**
 * Every watcher's health as the worker running it last stored it (`watcher_health`; no RPC from a
 * probe): state (fresh, lagging, stalled, provider_down), head and scanned block, when it last polled
 * and why its last poll failed, its chain identity, and its providers by host with their state
 * (`refused`: another chain) and health score (`healthy` / `demoted`, error rate, latency, lag). Undefined when the table cannot be read.
 */
async function watcherDetails(app: App) {
  try {
    const now = Date.now();
    const limits = { stallS: app.config.WATCHER_STALL_S, lagS: app.config.WATCHER_LAG_S };
    return (await readWatcherHealth(app.orm.em.fork())).map((h) => ({
      environment: h.environment,
      network: h.network,
      state: watcherState(h, now, limits),
      head_block: h.headBlock,
      scanned_block: h.scannedBlock,
      last_ok_at: h.lastOkAt && unix(h.lastOkAt),
      last_error_at: h.lastErrorAt && unix(h.lastErrorAt),
      last_error: h.lastError,
      caught_up_at: h.caughtUpAt && unix(h.caughtUpAt),
      chain: h.genesisHash ? { chain_id: h.chainId, genesis: h.genesisHash } : null,
      providers: h.providers.map((p) => ({
        provider: p.provider,
        state: p.state,
        reason: p.reason,
        ...(p.health && {
          health: p.health,
          rank: p.rank,
          error_rate: p.errorRate,
          latency_ms: p.latencyMs,
          head_block: p.head,
          lag_blocks: p.lagBlocks,
          last_failure: p.lastFailure,
          retry_at: p.retryAt ? unix(new Date(p.retryAt)) : null,
        }),
      })),
    }));
  } catch (err) {
    app.log.warn({ err: err instanceof Error ? err.message : String(err) }, '/readyz: watcher health unreadable');
    return undefined;
  }
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
    childLoggerFactory: (logger, bindings, opts) => requestLogger(logger as Logger, bindings, opts as Record<string, unknown>) as FastifyBaseLogger,
    clientErrorHandler: (err, socket) => clientError(err, socket),
    frameworkErrors: frameworkError,
  });
  // Hooks on every request are callback-style, not async: an async hook costs a promise and a
  // microtask per request (bench:orders CPU budget).
  fastify.addHook('onRequest', (req, reply, done) => {
    reply.header('x-request-id', req.id);
    done();
  });
  installErrorHandling(fastify);

  registerMetrics(fastify, app);
  fastify.get('/healthz', async () => ({ status: 'ok' }));
  // The envelope (status_code, message naming what is not ready yet, data), plus the checks at the top
  // level as probes have always read them (`status`, `database`, `migrations`, `watchers`).
  // Gas tanks are details in `data`, never a check: a low tank makes sweeps wait (an operator alarm), not an outage.
  fastify.get('/readyz', async (_req, reply) => {
    if (parts.draining?.()) {
      return reply
        .code(503)
        .header('cache-control', 'no-store')
        .header('connection', 'close')
        .send({ status_code: 503, message: 'Not ready: shutting down', data: { status: 'shutting_down' }, status: 'shutting_down' });
    }
    const db = await isReady(app.orm);
    const r = { ...db, ...parts.readiness?.() };
    const waiting = Object.entries(r)
      .filter(([, v]) => !v)
      .map(([k]) => k);
    const ok = waiting.length === 0;
    const status = ok ? 'ready' : 'not_ready';
    const gasTanks = db.database && db.migrations ? await gasTankDetails(app) : undefined;
    // Each network's watcher, as details: one network's trouble never takes the API out of rotation.
    const chains = db.database && db.migrations ? await watcherDetails(app) : undefined;
    return reply
      .code(ok ? 200 : 503)
      .header('cache-control', 'no-store')
      .send({
        status_code: ok ? 200 : 503,
        message: ok ? 'Ready' : `Not ready: waiting for ${waiting.join(', ')}`,
        data: { status, ...r, ...(gasTanks && { gas_tanks: gasTanks }), ...(chains && { chains }) },
        status,
        ...r,
      });
  });

  registerRoutes(fastify, app, authRoutes(app), 'global');
  if (parts.globalRoutes) registerRoutes(fastify, app, parts.globalRoutes, 'global');
  if (parts.envRoutes) registerRoutes(fastify, app, parts.envRoutes, 'environment');
  registerOpenApi(fastify, app, { global: [...authRoutes(app), ...(parts.globalRoutes ?? [])], environment: parts.envRoutes ?? [] });
  registerPages(fastify, parts.pages ?? []);
  if (config.EXPLORER_ENABLED) registerExplorer(fastify);
  registerGraphqlBrowserGet(fastify, config.EXPLORER_ENABLED);

  // GraphQL over HTTP (Apollo) and over WebSocket (graphql-ws) on the same port and path.
  const formatError = formatGraphqlError(app.log);
  const limits: OperationLimits = { maxCost: config.GRAPHQL_MAX_COST, maxAliases: config.GRAPHQL_MAX_ALIASES, maxDepth: config.GRAPHQL_MAX_DEPTH };
  const apollo = new ApolloServer<GqlContext>({
    schema: parts.schema,
    introspection: config.GRAPHQL_INTROSPECTION,
    includeStacktraceInErrorResponses: false,
    // Shutdown is ours (src/main.ts): Apollo's own handler would re-raise the signal mid-drain.
    stopOnTerminationSignals: false,
    formatError,
    plugins: [
      // Apollo's landing page loads its explorer from outside hosts (fails offline): ours is /explorer.
      ApolloServerPluginLandingPageDisabled(),
      fastifyApolloDrainPlugin(fastify),
      {
        requestDidStart: async () => ({
          didResolveOperation: async ({ contextValue }) => {
            try {
              await consumeCallerLimits(app, contextValue);
            } catch (e) {
              if (isDomainError(e)) throw toGraphQLError(e);
              throw e;
            }
          },
        }),
      },
    ],
  });
  await apollo.start();
  const graphqlPreHandler = async (req: FastifyRequest) => {
    await app.rateLimits.consume('graphql', req.ip);
    // Operation limits before Apollo parses and validates: graphql-js validation itself is not linear in the document.
    const request = graphqlRequest(req);
    if (!request) return;
    let document;
    try {
      document = parse(request.query);
    } catch {
      return; // Apollo answers the syntax error
    }
    const refused = operationLimitError(parts.schema, document, request, limits);
    if (refused) throw refused;
  };
  fastify.addHook('preHandler', (req, _reply, done) => {
    if (req.routeOptions.url !== '/graphql') return done();
    graphqlPreHandler(req).then(() => done(), done);
  });
  await fastify.register(fastifyApollo(apollo), {
    path: '/graphql',
    context: async (req) =>
      buildGqlContext(
        app,
        {
          authorization: asString(req.headers.authorization),
          apiKey: asString(req.headers['api-key']),
          checkoutKey: asString(req.headers['x-checkout-key']),
          operatorToken: asString(req.headers['x-operator-token']),
        },
        { ip: req.ip, requestId: req.id, userAgent: userAgentOf(req.headers['user-agent']) },
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
  const slots = new SubscriptionSlots({ perSocket: config.SUBSCRIPTION_LIMIT_PER_SOCKET, perKey: config.SUBSCRIPTION_LIMIT_PER_KEY });
  /** A limiter whose store is down fails open (logged), as on HTTP; a used-up budget is a DomainError. */
  const consumeWs = async (take: () => Promise<void>): Promise<DomainError | null> => {
    try {
      await take();
      return null;
    } catch (e) {
      if (isDomainError(e)) return e;
      if (e instanceof RateLimitStoreError) {
        app.log.error({ err: e.cause }, 'rate limiter store failed');
        return null;
      }
      throw e;
    }
  };
  /** The client's address as fastify's `req.ip` would give it: behind a trusted proxy, the first X-Forwarded-For entry. */
  const wsIp = (request: IncomingMessage): string => {
    const forwarded = config.TRUST_PROXY ? request.headers['x-forwarded-for'] : undefined;
    const first = (Array.isArray(forwarded) ? forwarded[0] : forwarded)?.split(',')[0]?.trim();
    return first || (request.socket.remoteAddress ?? 'unknown');
  };
  const wsContext = (ctx: { connectionParams?: Record<string, unknown> | undefined; extra: { request: IncomingMessage } }, subscription: boolean) => {
    const p = ctx.connectionParams ?? {};
    return buildGqlContext(
      app,
      {
        authorization: asString(p.authorization) ?? asString(p.Authorization),
        apiKey: asString(p['api-key']) ?? asString(p.apiKey),
        checkoutKey: asString(p.key) ?? asString(p.checkoutKey),
      },
      { ip: wsIp(ctx.extra.request), requestId: randomUUID(), userAgent: userAgentOf(ctx.extra.request.headers['user-agent']) },
      { subscription },
    );
  };
  // Apollo's `introspection: false` covers HTTP; graphql-ws validates here, with the same switch.
  const wsRules = config.GRAPHQL_INTROSPECTION ? specifiedRules : [...specifiedRules, NoSchemaIntrospectionCustomRule];
  // 10,000 dashboard tabs send the same few documents: each text is parsed and validated once and the
  // document shared (less memory per subscription; fan-out groups subscribers by document).
  const documents = new DocumentCache((query) => ({ document: parse(query), errors: undefined as readonly GraphQLError[] | undefined }));
  const fanOut = new SubscriptionFanOut();
  const wsServer = useServer<Record<string, unknown> | undefined>(
    {
      schema: parts.schema,
      // A connection is one request on the per-IP GraphQL budget; over it the socket closes with 4429.
      onConnect: async (ctx) => {
        const limited = await consumeWs(async () => void (await app.rateLimits.consume('graphql', wsIp(ctx.extra.request))));
        if (!limited) return true;
        ctx.extra.socket.close(4429, limited.message.slice(0, 120));
        return false;
      },
      // graphql-ws bypasses Apollo's formatError: parse/validate here so a bad query is an error message
      // (not a 4500 close of the whole socket), and format every error with the same mapping as HTTP.
      // Every operation takes one point of the per-IP GraphQL budget and of its caller's budgets, like
      // an HTTP request; a refused operation is an error message for that id and the socket stays open.
      onSubscribe: async (ctx, id, payload) => {
        const ip = wsIp(ctx.extra.request);
        const limited = await consumeWs(async () => void (await app.rateLimits.consume('graphql', ip)));
        if (limited) return [toGraphQLError(limited)];
        if (containsNul(payload.variables) || containsNul(payload.query)) return [new GraphQLError(NUL_MESSAGE, { extensions: { code: 'BAD_USER_INPUT' } })];
        let parsed;
        try {
          parsed = documents.get(payload.query);
        } catch (e) {
          if (e instanceof GraphQLError) return [e];
          throw e;
        }
        const { document } = parsed;
        const refused = operationLimitError(parts.schema, document, payload, limits);
        if (refused) return [toGraphQLError(refused)];
        // Validated after the limits (validation is not linear in the document), once per text.
        parsed.errors ??= validate(parts.schema, document, wsRules);
        if (parsed.errors.length) return [...parsed.errors];
        // A fresh context per operation, never one for the socket's whole life (a subscription's keeps no EntityManager).
        const isSubscription = getOperationAST(document, payload.operationName)?.operation === 'subscription';
        const contextValue = await wsContext(ctx, isSubscription);
        const overBudget = await consumeWs(() => consumeCallerLimits(app, contextValue));
        if (overBudget) return [toGraphQLError(overBudget)];
        if (isSubscription) {
          const full = slots.acquire(ctx.extra.socket, id, subscriptionKey(contextValue.caller, ip));
          if (full) return [toGraphQLError(full)];
        }
        return { schema: parts.schema, document, operationName: payload.operationName, variableValues: payload.variables, contextValue };
      },
      // Subscriptions whose feed is shared execute each event once per group (graphql/fan-out.ts).
      subscribe: (args) => fanOut.subscribe(args),
      onComplete: (ctx, id) => slots.release(ctx.extra.socket, id),
      onClose: (ctx) => slots.releaseAll(ctx.extra.socket),
      onNext: (_ctx, _id, _payload, _args, result) =>
        result.errors ? { ...result, errors: formatWsErrors(result.errors, () => 'BAD_USER_INPUT') } : undefined,
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
    wss.handleUpgrade(req, socket, head, (ws) => {
      // Client mistakes graphql-ws would treat as its own failures (console.error with a stack, close
      // 4500): a server-only message type (next, error, connection_ack) and a frame over maxPayload
      // (ws emits 'error', then closes with 1009 itself). Both stop here, before graphql-ws's listeners.
      const emit = ws.emit.bind(ws);
      ws.emit = (event: string | symbol, ...args: unknown[]): boolean => {
        if (event === 'message' && Buffer.isBuffer(args[0]) && isServerOnlyMessage(args[0])) {
          ws.close(4400, 'Invalid message received');
          return true;
        }
        if (
          event === 'error' &&
          typeof (args[0] as { code?: unknown })?.code === 'string' &&
          String((args[0] as { code: string }).code).startsWith('WS_ERR_')
        ) {
          app.log.info({ code: (args[0] as { code: string }).code }, 'graphql-ws client sent an invalid frame');
          return true;
        }
        return emit(event, ...args);
      };
      wss.emit('connection', ws, req);
    });
  });

  return {
    fastify,
    fanOut,
    close: async () => {
      await wsServer.dispose();
      for (const client of wss.clients) client.close(1001, 'server shutting down');
      await new Promise<void>((ok) => wss.close(() => ok()));
      await fastify.close();
      await apollo.stop().catch(() => undefined);
    },
  };
}
