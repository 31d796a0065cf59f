import { DomainError } from '../common/errors.js';

// Socket errors (the server is down or unreachable) and PostgreSQL SQLSTATEs of class 08
// (connection exception), 57P01–57P03 (admin shutdown, crash shutdown, cannot connect now) and
// 53300 (too many connections): the database is unavailable, the request itself was fine.
const CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  '57P01',
  '57P02',
  '57P03',
  '53300',
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
  '08P01',
]);

// What pg, pg-pool, knex (tarn) and MikroORM say when a connection is gone or none can be had; they
// carry no code.
const MESSAGES = [
  /Connection terminated/i,
  /Client has encountered a connection error and is not queryable/i,
  /Client was closed and is not queryable/i,
  /Connection ended unexpectedly/i,
  /Timeout acquiring a connection/i,
  /timeout exceeded when trying to connect/i,
  /the database system is (starting up|shutting down|in recovery mode)/i,
];

/**
 * True when `err` (or anything it wraps: `cause`, AggregateError members) says the database
 * connection failed rather than the statement. MikroORM's ConnectionException and DriverException
 * copy the pg error's `code`, so one check covers the ORM, knex and raw pg clients.
 */
export function isConnectionError(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== 'object' || depth > 5) return false;
  const e = err as { code?: unknown; name?: unknown; message?: unknown; cause?: unknown; errors?: unknown };
  if (typeof e.code === 'string' && CODES.has(e.code)) return true;
  if (e.name === 'ConnectionException' || e.name === 'KnexTimeoutError') return true;
  if (typeof e.message === 'string' && MESSAGES.some((re) => re.test(e.message as string))) return true;
  if (Array.isArray(e.errors) && e.errors.some((x) => isConnectionError(x, depth + 1))) return true;
  return isConnectionError(e.cause, depth + 1);
}

/**
 * The one mapping of a lost database to a client answer (REST 503 envelope, GraphQL
 * `SERVICE_UNAVAILABLE`): null when `err` is something else. The request may be retried.
 */
export function unavailableError(err: unknown): DomainError | null {
  if (!isConnectionError(err)) return null;
  return new DomainError('SERVICE_UNAVAILABLE', 'The service is temporarily unavailable (database unreachable); retry shortly', { retryAfterS: 5 });
}

/**
 * An error sink for a connection that fails repeatedly during an outage (a pool's idle clients, a
 * driver's reconnect loop): the first failure is logged as a warning, then at most one line per
 * `everyMs` with the count of the failures in between, so a restart of PostgreSQL is visible in the
 * log without flooding it.
 */
export function outageLogger(log: { warn(obj: object, msg: string): void }, what: string, everyMs = 5000): (err: unknown) => void {
  let last = 0;
  let suppressed = 0;
  return (err) => {
    const now = Date.now();
    if (now - last < everyMs) {
      suppressed++;
      return;
    }
    log.warn(
      { err: err instanceof Error ? { message: err.message, code: (err as { code?: unknown }).code } : String(err), suppressed },
      `${what}: connection error; reconnecting`,
    );
    last = now;
    suppressed = 0;
  };
}
