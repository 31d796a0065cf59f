import pino, { type DestinationStream, type Logger } from 'pino';

/**
 * A URL for the log: the path only, and the names of its query parameters with their values replaced.
 * Checkout URLs carry the scoped key as `?key=`, and any query may carry something a shopper typed;
 * the names are enough to debug with.
 */
export function redactUrl(url: string | undefined): string | undefined {
  if (typeof url !== 'string') return url;
  const q = url.indexOf('?');
  if (q < 0) return url;
  const names = url
    .slice(q + 1)
    .split('&')
    .filter((p) => p.length > 0)
    .map((p) => `${p.split('=')[0]!.slice(0, 64)}=[redacted]`);
  return `${url.slice(0, q)}?${names.join('&')}`;
}

interface RequestLike {
  method?: string;
  url?: string;
  ip?: string;
  host?: string;
  headers?: Record<string, unknown>;
  socket?: { remotePort?: number };
}

/** Replaces fastify's request serializer (which logs `req.url` whole, query string included). */
const serializers = {
  req: (req: RequestLike) => ({
    method: req.method,
    url: redactUrl(req.url),
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  }),
};

/** JSON logs. Credentials are redacted wherever they may appear. */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'gateway' },
      serializers,
      redact: {
        paths: [
          'req.headers.authorization',
          'req.headers["api-key"]',
          'req.headers["x-checkout-key"]',
          'req.headers.cookie',
          'headers.authorization',
          'headers["api-key"]',
          'headers["x-checkout-key"]',
          '*.password',
          '*.refresh_token',
          '*.token',
          '*.apiKey',
          '*.api_key',
          '*.key',
          '*.checkoutKey',
          'connectionParams',
        ],
        censor: '[redacted]',
      },
    },
    destination,
  );
}
