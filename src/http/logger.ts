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
          'req.headers["x-claim-token"]',
          'req.headers.cookie',
          'headers.authorization',
          'headers["api-key"]',
          'headers["x-checkout-key"]',
          'headers["x-claim-token"]',
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

type LogMethod = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

/**
 * fastify's per-request logger (`req.log`, bound to the request id), made only when the request logs
 * something: pino's `child()` serialises its bindings under the redaction rules on every call
 * (≈ 1.7 µs), and a request that succeeds at the default level logs nothing. Until then a call below
 * the parent's level returns at once.
 */
class LazyRequestLogger {
  #real: Logger | undefined;
  constructor(
    private readonly parent: Logger,
    private readonly bindings: Record<string, unknown>,
    private readonly opts: Record<string, unknown>,
  ) {}

  private real(): Logger {
    return (this.#real ??= this.parent.child(this.bindings, this.opts));
  }

  get level(): string {
    return this.#real ? this.#real.level : this.parent.level;
  }
  set level(level: string) {
    this.real().level = level;
  }

  isLevelEnabled(level: string): boolean {
    return (this.#real ?? this.parent).isLevelEnabled(level);
  }

  child(bindings: Record<string, unknown>, opts?: Record<string, unknown>): Logger {
    return this.real().child(bindings, opts);
  }

  silent(): void {}

  private log(method: LogMethod, args: unknown[]): void {
    if (!this.isLevelEnabled(method)) return;
    (this.real()[method] as (...a: unknown[]) => void)(...args);
  }
  fatal(...args: unknown[]): void {
    this.log('fatal', args);
  }
  error(...args: unknown[]): void {
    this.log('error', args);
  }
  warn(...args: unknown[]): void {
    this.log('warn', args);
  }
  info(...args: unknown[]): void {
    this.log('info', args);
  }
  debug(...args: unknown[]): void {
    this.log('debug', args);
  }
  trace(...args: unknown[]): void {
    this.log('trace', args);
  }
}

/** For fastify's `childLoggerFactory`: the request's logger, a pino child made on its first log line. */
export function requestLogger(parent: Logger, bindings: Record<string, unknown>, opts: Record<string, unknown>): Logger {
  return new LazyRequestLogger(parent, bindings, opts) as unknown as Logger;
}
