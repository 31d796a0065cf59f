/**
 * Bounds on one GraphQL operation, the same over HTTP and graphql-ws: unbounded, 100 aliases of
 * `orders(first:100)` held one request 52 s and slowed every other merchant.
 *
 * Checked right after parsing, before graphql-js validation and execution, so a hostile document
 * costs one parse and one walk:
 *
 * 1. Aliases: at most GRAPHQL_MAX_ALIASES per operation, fragments counted where spread, aliases of
 *    `__typename` free → `TOO_MANY_ALIASES`.
 * 2. Depth: at most GRAPHQL_MAX_DEPTH nested selections (introspection under `__schema` not
 *    counted) → `QUERY_TOO_DEEP`.
 * 3. Cost: at most GRAPHQL_MAX_COST (default 2000) → `QUERY_TOO_COMPLEX`, the message naming the
 *    cost and the budget. Cost approximates rows loaded:
 *       scalar or enum field                   0 (comes with its row)
 *       object field                           1 + cost of its selection
 *       page field (has a `first`/`limit` arg) 1 + size × max(1, cost of its selection), size = the
 *                                              argument (default 20, clamped to 1..100)
 *       list inside a page type (`nodes`)      max(1, cost of its selection): the page counted its rows
 *       any other list (`quotes`, `deposits`)  5 × max(1, cost of its selection)
 *       introspection (`__schema`, `__type`)   0
 *    So `orders(first:100){nodes{orderNo}}` costs 101, with `quotes{rate}` 501: three such pages
 *    fit in one operation, four do not.
 *
 * A document that fails these checks for another reason (unknown field, bad variables) is let
 * through: graphql-js then refuses it with its own error, before anything runs.
 *
 * Also here: subscription slots (per graphql-ws socket and per credential) and the mapping of a
 * DomainError into a GraphQLError for the places Apollo/graphql-ws expect one.
 */
import { maxAliasesRule } from '@escape.tech/graphql-armor-max-aliases';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import {
  GraphQLError,
  getNamedType,
  getNullableType,
  isLeafType,
  isListType,
  validate,
  type DocumentNode,
  type GraphQLSchema,
  type ValidationContext,
} from 'graphql';
import { getComplexity, type ComplexityEstimator } from 'graphql-query-complexity';
import type { Caller } from '../common/context.js';
import { DomainError } from '../common/errors.js';

export interface OperationLimits {
  maxCost: number;
  maxAliases: number;
  maxDepth: number;
}

export const PAGE_DEFAULT = 20;
export const PAGE_MAX = 100;
/** Rows assumed for a list field without a page size (an order's quotes, deposits, payments). */
export const LIST_ROWS = 5;
const PAGE_ARGS = ['first', 'limit'] as const;
const PAGE_TYPE = /(Page|Connection|Edge)$/;

/** The cost rule of the header as a graphql-query-complexity estimator. */
export const costEstimator: ComplexityEstimator = ({ type, field, args, childComplexity }) => {
  if (field.name.startsWith('__')) return 0;
  if (isLeafType(getNamedType(field.type))) return 0;
  const row = Math.max(1, childComplexity);
  const pageArg = PAGE_ARGS.find((name) => field.args.some((a) => a.name === name));
  if (pageArg) {
    const asked = args[pageArg];
    const size = typeof asked === 'number' && Number.isFinite(asked) ? Math.min(PAGE_MAX, Math.max(1, Math.trunc(asked))) : PAGE_DEFAULT;
    return 1 + size * row;
  }
  if (isListType(getNullableType(field.type))) return PAGE_TYPE.test(type.name) ? row : LIST_ROWS * row;
  return 1 + childComplexity;
};

/**
 * The first limit `document` breaks, as a DomainError; null when it is within them (or is invalid in
 * a way graphql-js reports itself).
 */
export function operationLimitError(
  schema: GraphQLSchema,
  document: DocumentNode,
  request: { variables?: Record<string, unknown> | null; operationName?: string | null },
  limits: OperationLimits,
): DomainError | null {
  let refused: DomainError | null = null;
  const refuse = (error: DomainError) => () => {
    refused ??= error;
  };
  // Rejections are collected, not thrown: graphql-armor's own errors read "Syntax Error: …" and carry no code.
  validate(schema, document, [
    maxAliasesRule({
      n: limits.maxAliases,
      propagateOnRejection: false,
      onReject: [refuse(new DomainError('TOO_MANY_ALIASES', `Too many aliases: at most ${limits.maxAliases} per operation`, { limit: limits.maxAliases }))],
    }) as (ctx: ValidationContext) => never,
    maxDepthRule({
      n: limits.maxDepth,
      propagateOnRejection: false,
      onReject: [refuse(new DomainError('QUERY_TOO_DEEP', `Query too deep: at most ${limits.maxDepth} nested selections`, { limit: limits.maxDepth }))],
    }) as (ctx: ValidationContext) => never,
  ]);
  if (refused) return refused;
  let cost: number;
  try {
    cost = getComplexity({
      schema,
      query: document,
      estimators: [costEstimator],
      variables: request.variables ?? {},
      operationName: request.operationName ?? undefined,
    });
  } catch {
    return null;
  }
  if (cost > limits.maxCost) {
    return new DomainError(
      'QUERY_TOO_COMPLEX',
      `Query too complex: cost ${cost} exceeds the budget of ${limits.maxCost}; ask for smaller pages or fewer fields`,
      {
        cost,
        limit: limits.maxCost,
      },
    );
  }
  return null;
}

/**
 * A DomainError as a GraphQLError: `extensions.http` sets Apollo's status (and Retry-After), and
 * the domain error stays as `originalError` for the one error mapping (src/graphql/errors.ts).
 */
export function toGraphQLError(error: DomainError): GraphQLError {
  const retry = error.details?.retryAfterS;
  const headers = typeof retry === 'number' ? new Map([['retry-after', String(retry)]]) : undefined;
  return new GraphQLError(error.message, {
    originalError: error,
    extensions: { code: error.code, ...(error.details ?? {}), http: { status: error.httpStatus, ...(headers ? { headers } : {}) } },
  });
}

/** The credential a subscription is counted against. */
export function subscriptionKey(caller: Caller, ip: string): string {
  switch (caller.kind) {
    case 'apiKey':
      return `api-key:${caller.apiKeyId}`;
    case 'checkout':
      return `checkout:${caller.orderId}`;
    case 'dashboard':
      return `session:${caller.sessionId}`;
    default:
      return `ip:${ip}`;
  }
}

/**
 * Active graphql-ws subscriptions per socket and per credential (unbounded, 20,000 on one socket
 * took the process from 394 MB to 1.45 GB). In-process counts: each API process holds its own sockets.
 * `release` is idempotent, so the operation's end and the socket's close may both call it.
 */
export class SubscriptionSlots {
  private readonly bySocket = new WeakMap<object, Map<string, string>>();
  private readonly byKey = new Map<string, number>();

  constructor(private readonly limits: { perSocket: number; perKey: number }) {}

  /** Takes a slot for operation `id` on `socket`, or returns the refusal. */
  acquire(socket: object, id: string, key: string): DomainError | null {
    let own = this.bySocket.get(socket);
    if (!own) this.bySocket.set(socket, (own = new Map()));
    if (own.size >= this.limits.perSocket) {
      return new DomainError('SUBSCRIPTION_LIMIT_REACHED', `Too many subscriptions on this connection: at most ${this.limits.perSocket}; complete one first`, {
        limit: this.limits.perSocket,
      });
    }
    const held = this.byKey.get(key) ?? 0;
    if (held >= this.limits.perKey) {
      return new DomainError('SUBSCRIPTION_LIMIT_REACHED', `Too many subscriptions for this credential: at most ${this.limits.perKey}; complete one first`, {
        limit: this.limits.perKey,
      });
    }
    own.set(id, key);
    this.byKey.set(key, held + 1);
    return null;
  }

  release(socket: object, id: string): void {
    const own = this.bySocket.get(socket);
    const key = own?.get(id);
    if (key === undefined) return;
    own!.delete(id);
    const left = (this.byKey.get(key) ?? 1) - 1;
    if (left > 0) this.byKey.set(key, left);
    else this.byKey.delete(key);
  }

  releaseAll(socket: object): void {
    for (const id of [...(this.bySocket.get(socket)?.keys() ?? [])]) this.release(socket, id);
  }

  /** Active subscriptions held by `key` (for tests and metrics). */
  held(key: string): number {
    return this.byKey.get(key) ?? 0;
  }
}
