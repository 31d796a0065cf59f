import type { Knex } from '@mikro-orm/postgresql';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import type { Caller } from '../../common/context.js';
import type { Config } from '../../config/index.js';
import { DomainError } from '../../common/errors.js';
import { PostgresWindows } from './postgres-windows.js';

/** `account`: login attempts per dashboard account (keyed by a hash of the email), on top of `login` per IP. */
export type LimitKind =
  | 'public'
  | 'auth'
  | 'login'
  | 'account'
  | 'merchant'
  | 'graphql'
  | 'checkoutKey'
  | 'checkoutIp'
  | 'linkOpenIp'
  | 'linkOpen'
  | 'sweepNow'
  | 'claimIp'
  | 'claimToken';

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
  claimIp: 'Too many refund claim requests from this IP address',
  claimToken: 'Too many addresses tried for this refund link',
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
  | 'RATE_LIMIT_CLAIM_IP_PER_MIN'
  | 'RATE_LIMIT_CLAIM_TOKEN_PER_MIN'
>;

/**
 * Fixed-window limits. With the PostgreSQL store every API instance shares the counters in the
 * UNLOGGED `rate_limits` table, and concurrent requests are settled together, one statement per batch
 * (PostgresWindows); memory (rate-limiter-flexible) is for a single process.
 */
export class RateLimits {
  private readonly budgets: Record<LimitKind, { points: number; durationMs: number }>;
  private readonly memory: Partial<Record<LimitKind, RateLimiterMemory>> = {};
  private readonly windows: PostgresWindows | null;

  constructor(config: LimitConfig, knex?: Knex, onBatch?: (hits: number) => void) {
    const MIN = 60_000;
    const HOUR = 3_600_000;
    const budget = (points: number, durationMs: number) => ({ points, durationMs });
    this.budgets = {
      public: budget(config.RATE_LIMIT_PUBLIC_PER_MIN, MIN),
      auth: budget(config.RATE_LIMIT_AUTH_PER_MIN, MIN),
      login: budget(config.RATE_LIMIT_LOGIN_PER_MIN, MIN),
      account: budget(config.RATE_LIMIT_LOGIN_ACCOUNT_PER_MIN, MIN),
      merchant: budget(config.RATE_LIMIT_MERCHANT_PER_MIN, MIN),
      graphql: budget(config.RATE_LIMIT_GRAPHQL_PER_MIN, MIN),
      checkoutKey: budget(config.RATE_LIMIT_CHECKOUT_KEY_PER_MIN, MIN),
      checkoutIp: budget(config.RATE_LIMIT_CHECKOUT_IP_PER_MIN, MIN),
      linkOpenIp: budget(config.RATE_LIMIT_LINK_OPENS_PER_IP_PER_HOUR, HOUR),
      linkOpen: budget(config.RATE_LIMIT_LINK_OPENS_PER_LINK_PER_HOUR, HOUR),
      sweepNow: budget(config.RATE_LIMIT_SWEEP_NOW_PER_MIN, MIN),
      claimIp: budget(config.RATE_LIMIT_CLAIM_IP_PER_MIN, MIN),
      claimToken: budget(config.RATE_LIMIT_CLAIM_TOKEN_PER_MIN, MIN),
    };
    this.windows = config.RATE_LIMIT_STORE === 'postgres' && knex ? new PostgresWindows(knex, undefined, onBatch) : null;
    if (!this.windows) {
      for (const [kind, b] of Object.entries(this.budgets) as [LimitKind, { points: number; durationMs: number }][]) {
        this.memory[kind] = new RateLimiterMemory({ keyPrefix: kind, points: b.points, duration: b.durationMs / 1000 });
      }
    }
  }

  /**
   * The budget an authenticated call spends, the same on REST and GraphQL. A merchant's server (API
   * key) and dashboard spend the merchant's quota. A checkout key — which anyone gets from a public
   * payment link — never does: it spends its own per-key budget and its IP's checkout budget, so
   * shoppers (or someone posing as many) cannot push the merchant's own server into 429.
   */
  async consumeCaller(caller: Caller, ip: string): Promise<LimitState | null> {
    if (caller.kind === 'checkout') {
      const byIp = await this.consume('checkoutIp', ip);
      const byKey = await this.consume('checkoutKey', caller.orderId);
      return byKey.remaining <= byIp.remaining ? byKey : byIp;
    } else if (caller.kind === 'apiKey' || caller.kind === 'dashboard') {
      return this.consume('merchant', caller.merchantId);
    }
    return null;
  }

  /** Takes one point; throws RATE_LIMITED (with `retryAfterS`) when the window is used up. Answers the budget's state after this hit. */
  async consume(kind: LimitKind, key: string): Promise<LimitState> {
    const { points, durationMs } = this.budgets[kind];
    const hit = this.windows ? await this.consumeShared(kind, key) : await this.consumeMemory(kind, key);
    const resetS = Math.max(1, Math.ceil(hit.msBeforeNext / 1000));
    const state: LimitState = { kind, limit: points, windowS: durationMs / 1000, remaining: Math.max(0, points - hit.consumed), resetS };
    if (hit.consumed <= points) return state;
    throw new RateLimitedError(`${MESSAGES[kind]}; retry after ${resetS} s`, { ...state, remaining: 0 });
  }

  /** This hit's number in the window and how long until the window ends (ms). */
  private async consumeShared(kind: LimitKind, key: string): Promise<{ consumed: number; msBeforeNext: number }> {
    const { points, durationMs } = this.budgets[kind];
    let window;
    try {
      window = await this.windows!.hit(`${kind}:${key}`, durationMs, points);
    } catch (e) {
      // A broken limiter store must not take the API down: fail open, but loudly.
      throw new RateLimitStoreError(e);
    }
    return { consumed: window.consumed, msBeforeNext: Math.max(0, window.expireMs - Date.now()) };
  }

  private async consumeMemory(kind: LimitKind, key: string): Promise<{ consumed: number; msBeforeNext: number }> {
    try {
      const res = await this.memory[kind]!.consume(key);
      return { consumed: res.consumedPoints, msBeforeNext: res.msBeforeNext };
    } catch (e) {
      if (e instanceof RateLimiterRes) return { consumed: e.consumedPoints, msBeforeNext: e.msBeforeNext };
      throw new RateLimitStoreError(e);
    }
  }
}

/** A budget after one hit: what the IETF `RateLimit` / `RateLimit-Policy` headers say (draft-ietf-httpapi-ratelimit-headers). */
export interface LimitState {
  kind: LimitKind;
  limit: number;
  windowS: number;
  remaining: number;
  /** Seconds until the window resets. */
  resetS: number;
}

/** `RateLimit-Policy: "merchant";q=3000;w=60` and `RateLimit: "merchant";r=2999;t=42`. */
export function rateLimitHeaders(s: LimitState): Record<string, string> {
  return { 'ratelimit-policy': `"${s.kind}";q=${s.limit};w=${s.windowS}`, ratelimit: `"${s.kind}";r=${s.remaining};t=${s.resetS}` };
}

/** RATE_LIMITED with the budget's state, for the RateLimit headers of the 429 (the body keeps `retryAfterS`). */
export class RateLimitedError extends DomainError {
  constructor(
    message: string,
    readonly state: LimitState,
  ) {
    super('RATE_LIMITED', message, { retryAfterS: state.resetS });
  }
}

export class RateLimitStoreError extends Error {
  constructor(override readonly cause: unknown) {
    super('rate limiter store unavailable');
  }
}
