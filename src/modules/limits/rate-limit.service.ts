import type { Knex } from '@mikro-orm/postgresql';
import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Caller } from '../../common/context.js';
import type { Config } from '../../config/index.js';
import { DomainError } from '../../common/errors.js';

/** `account`: login attempts per dashboard account (keyed by a hash of the email), on top of `login` per IP. */
export type LimitKind = 'public' | 'auth' | 'login' | 'account' | 'merchant' | 'graphql' | 'checkoutKey' | 'checkoutIp' | 'linkOpenIp' | 'linkOpen' | 'sweepNow';

const MESSAGES: Record<LimitKind, string> = {
  public: 'Too many requests from this IP address',
  auth: 'Too many authentication requests from this IP address',
  login: 'Too many login attempts from this IP address',
  account: 'Too many login attempts for this account',
  merchant: 'Too many requests for this merchant',
  graphql: 'Too many GraphQL requests from this IP address',
  checkoutKey: 'Too many requests with this checkout key',
  checkoutIp: 'Too many checkout requests from this IP address',
  linkOpenIp: 'Too many payment-link orders from this IP address',
  linkOpen: 'Too many orders opened from this payment link',
  sweepNow: 'Too many sweep requests for this merchant',
};

type LimitConfig = Pick<
  Config,
  | 'RATE_LIMIT_STORE'
  | 'RATE_LIMIT_PUBLIC_PER_MIN'
  | 'RATE_LIMIT_AUTH_PER_MIN'
  | 'RATE_LIMIT_LOGIN_PER_MIN'
  | 'RATE_LIMIT_LOGIN_ACCOUNT_PER_MIN'
  | 'RATE_LIMIT_MERCHANT_PER_MIN'
  | 'RATE_LIMIT_GRAPHQL_PER_MIN'
  | 'RATE_LIMIT_CHECKOUT_KEY_PER_MIN'
  | 'RATE_LIMIT_CHECKOUT_IP_PER_MIN'
  | 'RATE_LIMIT_LINK_OPENS_PER_IP_PER_HOUR'
  | 'RATE_LIMIT_LINK_OPENS_PER_LINK_PER_HOUR'
  | 'RATE_LIMIT_SWEEP_NOW_PER_MIN'
>;

/**
 * Fixed-window limits (rate-limiter-flexible). With the PostgreSQL store every API instance shares
 * the counters (one upsert per request on an UNLOGGED table); memory is for a single process.
 */
export class RateLimits {
  private readonly limiters: Record<LimitKind, RateLimiterAbstract>;

  constructor(config: LimitConfig, knex?: Knex) {
    const MIN = 60;
    const HOUR = 3600;
    const budgets: Record<LimitKind, { points: number; duration: number }> = {
      public: { points: config.RATE_LIMIT_PUBLIC_PER_MIN, duration: MIN },
      auth: { points: config.RATE_LIMIT_AUTH_PER_MIN, duration: MIN },
      login: { points: config.RATE_LIMIT_LOGIN_PER_MIN, duration: MIN },
      account: { points: config.RATE_LIMIT_LOGIN_ACCOUNT_PER_MIN, duration: MIN },
      merchant: { points: config.RATE_LIMIT_MERCHANT_PER_MIN, duration: MIN },
      graphql: { points: config.RATE_LIMIT_GRAPHQL_PER_MIN, duration: MIN },
      checkoutKey: { points: config.RATE_LIMIT_CHECKOUT_KEY_PER_MIN, duration: MIN },
      checkoutIp: { points: config.RATE_LIMIT_CHECKOUT_IP_PER_MIN, duration: MIN },
      linkOpenIp: { points: config.RATE_LIMIT_LINK_OPENS_PER_IP_PER_HOUR, duration: HOUR },
      linkOpen: { points: config.RATE_LIMIT_LINK_OPENS_PER_LINK_PER_HOUR, duration: HOUR },
      sweepNow: { points: config.RATE_LIMIT_SWEEP_NOW_PER_MIN, duration: MIN },
    };
    const make = (kind: LimitKind): RateLimiterAbstract => {
      const base = { keyPrefix: kind, ...budgets[kind] };
      if (config.RATE_LIMIT_STORE === 'postgres' && knex) {
        return new RateLimiterPostgres({ ...base, storeClient: knex, storeType: 'knex', tableName: 'rate_limits', tableCreated: true });
      }
      return new RateLimiterMemory(base);
    };
    this.limiters = Object.fromEntries((Object.keys(budgets) as LimitKind[]).map((k) => [k, make(k)])) as Record<LimitKind, RateLimiterAbstract>;
  }

  /**
   * The budget an authenticated call spends, the same on REST and GraphQL. A merchant's server (API
   * key) and dashboard spend the merchant's quota. A checkout key — which anyone gets from a public
   * payment link — never does: it spends its own per-key budget and its IP's checkout budget, so
   * shoppers (or someone posing as many) cannot push the merchant's own server into 429.
   */
  async consumeCaller(caller: Caller, ip: string): Promise<void> {
    if (caller.kind === 'checkout') {
      await this.consume('checkoutIp', ip);
      await this.consume('checkoutKey', caller.orderId);
    } else if (caller.kind === 'apiKey' || caller.kind === 'dashboard') {
      await this.consume('merchant', caller.merchantId);
    }
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
