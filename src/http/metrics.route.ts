import type { FastifyInstance } from 'fastify';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { App } from '../app.js';
import { sha256Hex, safeEqual } from '../common/crypto.js';
import { DomainError } from '../common/errors.js';
import { errorEnvelope } from '../rest/envelope.js';

/**
 * Who may scrape `/metrics`: with METRICS_TOKEN set, only `Authorization: Bearer <token>` (compared in
 * constant time, in every environment); without it, anyone in development and test, nobody in production.
 */
export function metricsAccessError(app: App, authorization: string | undefined): DomainError | null {
  const token = app.config.METRICS_TOKEN;
  if (!token) return app.config.isProduction ? new DomainError('FORBIDDEN', 'Metrics are disabled: set METRICS_TOKEN to expose /metrics in production') : null;
  const given = /^Bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1];
  if (!given) return new DomainError('UNAUTHENTICATED', 'Missing Authorization: Bearer <METRICS_TOKEN>');
  // Hashes first: equal lengths, so the comparison leaks nothing about the token's length either.
  if (!safeEqual(sha256Hex(given), sha256Hex(token))) return new DomainError('INVALID_TOKEN', 'Invalid metrics token');
  return null;
}

/** `/metrics` on the API server (api and all roles), plus the HTTP latency histogram of every route. */
export function registerMetrics(fastify: FastifyInstance, app: App): void {
  fastify.addHook('onResponse', (req, reply, done) => {
    // The route pattern (`/api/v2/testnet/merchant/fiat/order`), never the raw URL: bounded label values.
    app.metrics.observeHttp(req.method, req.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
  fastify.get('/metrics', async (req, reply) => {
    const denied = metricsAccessError(app, req.headers.authorization);
    if (denied) throw denied;
    return reply
      .header('cache-control', 'no-store')
      .type(app.metrics.contentType)
      .send(await app.metrics.render());
  });
}

/** The worker role's own `/metrics` listener (it has no API server). */
export async function startMetricsServer(app: App, host: string, port: number): Promise<{ url: string; close(): Promise<void> }> {
  const send = (res: ServerResponse, status: number, type: string, body: string) =>
    res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' }).end(body);
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method !== 'GET' || path !== '/metrics') {
      const e = new DomainError('ROUTE_NOT_FOUND', `No route ${req.method} ${path}`);
      return send(res, e.httpStatus, 'application/json; charset=utf-8', JSON.stringify(errorEnvelope(e)));
    }
    const denied = metricsAccessError(app, req.headers.authorization);
    if (denied) return send(res, denied.httpStatus, 'application/json; charset=utf-8', JSON.stringify(errorEnvelope(denied)));
    app.metrics.render().then(
      (text) => send(res, 200, app.metrics.contentType, text),
      () => send(res, 503, 'application/json; charset=utf-8', JSON.stringify(errorEnvelope(new DomainError('SERVICE_UNAVAILABLE', 'Metrics unavailable')))),
    );
  });
  await new Promise<void>((ok, fail) => server.once('error', fail).listen(port, host, () => ok()));
  const addr = server.address();
  const url = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${typeof addr === 'object' && addr ? addr.port : port}`;
  return { url, close: () => new Promise<void>((ok) => server.close(() => ok())) };
}
