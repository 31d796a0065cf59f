import type { EntityManager } from '@mikro-orm/postgresql';
import type { Environment } from './environment.js';

/** Who is calling. Transports build it; services authorise against it. */
export type Caller =
  | { kind: 'anonymous' }
  | { kind: 'dashboard'; userId: string; merchantId: string; sessionId: string; role: string }
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
}

/** The context of work no client asked for (operator CLI, jobs, test setup): no caller, no environment. */
export function internalContext(em: EntityManager, requestId = 'internal'): RequestContext {
  return { em, caller: { kind: 'anonymous' }, environment: null, ip: '127.0.0.1', requestId };
}
