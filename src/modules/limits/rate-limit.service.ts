import type { Knex } from '@mikro-orm/postgresql';
import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Config } from '../../config/index.js';
import { DomainError } from '../../common/errors.js';

/** `account`: login attempts per dashboard account (keyed by a hash of the email), on top of `login` per IP. */
export type LimitKind = 'public' | 'auth' | 'login' | 'account' | 'merchant' | 'graphql';

const MESSAGES: Record<LimitKind, string> = {
  public: 'Too many requests from this IP address',
  auth: 'Too many authentication requests from this IP address',
  login: 'Too many login attempts from this IP address',
  account: 'Too many login attempts for this account',
  merchant: 'Too many requests for this merchant',
  graphql: 'Too many GraphQL requests from this IP address',
};

/**
 * Fixed-window limits (rate-limiter-flexible). With the PostgreSQL store every API instance shares
 * the counters (one upsert per request on an UNLOGGED table); memory is for a single process.
 */
export class RateLimits {
  private readonly limiters: Record<LimitKind, RateLimiterAbstract>;

  constructor(config: Pick<Config, 'RATE_LIMIT_STORE' | 'RATE_LIMIT_PUBLIC_PER_MIN' | 'RATE_LIMIT_AUTH_PER_MIN' | 'RATE_LIMIT_LOGIN_PER_MIN' | 'RATE_LIMIT_LOGIN_ACCOUNT_PER_MIN' | 'RATE_LIMIT_MERCHANT_PER_MIN' | 'RATE_LIMIT_GRAPHQL_PER_MIN'>, knex?: Knex) {
    const points: Record<LimitKind, number> = {
      public: config.RATE_LIMIT_PUBLIC_PER_MIN,
      auth: config.RATE_LIMIT_AUTH_PER_MIN,
      login: config.RATE_LIMIT_LOGIN_PER_MIN,
      account: config.RATE_LIMIT_LOGIN_ACCOUNT_PER_MIN,
      merchant: config.RATE_LIMIT_MERCHANT_PER_MIN,
      graphql: config.RATE_LIMIT_GRAPHQL_PER_MIN,
    };
    const make = (kind: LimitKind): RateLimiterAbstract => {
      const base = { keyPrefix: kind, points: points[kind], duration: 60 };
      if (config.RATE_LIMIT_STORE === 'postgres' && knex) {
        return new RateLimiterPostgres({ ...base, storeClient: knex, storeType: 'knex', tableName: 'rate_limits', tableCreated: true });
      }
      return new RateLimiterMemory(base);
    };
    this.limiters = { public: make('public'), auth: make('auth'), login: make('login'), account: make('account'), merchant: make('merchant'), graphql: make('graphql') };
  }

  /** Takes one point; throws RATE_LIMITED (with `retryAfterS`) when the window is used up. */
  async consume(kind: LimitKind, key: string): Promise<void> {
    try {
      await this.limiters[kind].consume(key);
    } catch (e) {
      if (e instanceof RateLimiterRes) {
        const retryAfterS = Math.max(1, Math.ceil(e.msBeforeNext / 1000));
        throw new DomainError('RATE_LIMITED', `${MESSAGES[kind]}; retry after ${retryAfterS} s`, { retryAfterS });
      }
      // A broken limiter store must not take the API down: fail open, but loudly.
      throw new RateLimitStoreError(e);
    }
  }
}

export class RateLimitStoreError extends Error {
  constructor(override readonly cause: unknown) {
    super('rate limiter store unavailable');
  }
}
