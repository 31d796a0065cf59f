import type { EntityManager } from '@mikro-orm/postgresql';
import type { Environment } from './environment.js';

/** Who is calling. Transports build it; services authorise against it. */
export type Caller =
  | { kind: 'anonymous' }
  | {
      kind: 'dashboard';
      userId: string;
      merchantId: string;
      sessionId: string;
      role: string;
      /** Epoch ms until which the session counts as freshly re-authenticated (access.ts requireFreshAuth); absent or null: not fresh. */ reauthUntil?:
        number | null;
      /** The merchant requires a second factor and this user has none: only enrolment is allowed (access.ts). */ enrolmentRequired?: boolean;
    }
  | { kind: 'apiKey'; merchantId: string; environment: Environment; apiKeyId: string }
  /** Scoped checkout key: one order only, checkout operations only. */
  | { kind: 'checkout'; merchantId: string; environment: Environment; orderId: string };

/** First argument of every service method: a request-scoped EntityManager fork, the caller, the environment. */
export interface RequestContext {
  em: EntityManager;
  caller: Caller;
  /** Environment of the path (REST) or of the credential (GraphQL); null on environment-less routes. */
  environment: Environment | null;
  ip: string;
  requestId: string;
  /** The client's User-Agent header, when it sent one (the audit trail records it). */
  userAgent?: string | null;
  /** Set when an operator acts (`cli merchant set-fee`, `operator-token`): the audit trail's "who". */
  operatorName?: string;
}

/** The context of work no client asked for (operator CLI, jobs, test setup): no caller, no environment. */
export function internalContext(em: EntityManager, requestId = 'internal'): RequestContext {
  return { em, caller: { kind: 'anonymous' }, environment: null, ip: '127.0.0.1', requestId };
}

/** An operator's command (the CLI): no caller; the audit trail records `operator` as who. */
export function operatorContext(em: EntityManager, operator: string): RequestContext {
  return { ...internalContext(em, 'cli'), operatorName: operator };
}

/**
 * A request's context whose EntityManager is forked on first use (REST routes): an order creation
 * whose API key is in the cache and whose insert is group-committed never needs one, and a fork per
 * request was ≈ 2.5 % of the API's CPU at saturation (bench:orders profile). A class, not an object
 * literal with its own accessor and a WeakMap entry per request: one shape for every request and
 * nothing for the GC to trace (the literal was ≈ 1 % of busy CPU on its own). `em` lives on the
 * prototype, so `{ ...ctx, em: tx }` copies the other fields without forking; a plain spread
 * `{ ...ctx }` has no `em` — pass the EntityManager explicitly, as every caller does.
 */
class LazyRequestContext implements RequestContext {
  #em: EntityManager | undefined;
  readonly #fork: () => EntityManager;
  caller: Caller;
  environment: Environment | null;
  ip: string;
  requestId: string;
  userAgent: string | null;

  constructor(fork: () => EntityManager, fields: Omit<RequestContext, 'em'>) {
    this.#fork = fork;
    this.caller = fields.caller;
    this.environment = fields.environment;
    this.ip = fields.ip;
    this.requestId = fields.requestId;
    this.userAgent = fields.userAgent ?? null;
  }

  get em(): EntityManager {
    return (this.#em ??= this.#fork());
  }

  set em(value: EntityManager) {
    this.#em = value;
  }

  /** The EntityManager if forked already. */
  peek(): EntityManager | undefined {
    return this.#em;
  }
}

export function lazyRequestContext(fork: () => EntityManager, fields: Omit<RequestContext, 'em'>): RequestContext {
  return new LazyRequestContext(fork, fields);
}

/** The context's EntityManager if it has one already, without forking one (undefined: none yet, so no transaction either). */
export function existingEm(ctx: RequestContext): EntityManager | undefined {
  return ctx instanceof LazyRequestContext ? ctx.peek() : ctx.em;
}
