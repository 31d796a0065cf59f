import { z } from 'zod';
import { ENV_PATH, ENVIRONMENTS } from '../../common/environment.js';
import { ErrorCodes, type ErrorCode } from '../../common/errors.js';
import type { Config } from '../../config/index.js';
import type { LimitKind } from '../../modules/limits/rate-limit.service.js';
import { WEBHOOK_EVENT_KINDS, WEBHOOK_PAYLOAD_VERSION } from '../../modules/webhooks/webhook.payload.js';
import { STANDARD_HEADERS, WEBHOOK_HEADERS } from '../../modules/webhooks/webhook.signer.js';
import type { RestRoute, RouteAuth } from '../routes.js';
import { routeDocs, type RouteDoc } from './route.docs.js';
import { errorDataSchema } from './view.schemas.js';

/**
 * The OpenAPI 3.1 document of the REST API, generated from the route table (the routes the server
 * registers) and route.docs.ts. Environment routes appear under both `/api/v2/testnet` and
 * `/api/v2/mainnet`. Committed as schema/openapi.json (`npm run openapi:emit`), served at
 * GET /openapi.json, and used by the test suite to check every REST answer (test/support/openapi-contract.ts).
 */

export const OPENAPI_VERSION = '3.1.0';

export interface RouteTable {
  /** Mounted under `/api/v2`. */
  global: RestRoute[];
  /** Mounted under `/api/v2/testnet` and `/api/v2/mainnet`. */
  environment: RestRoute[];
}

type Json = Record<string, unknown>;
type RateBudget = { limit: number; windowS: number };

/** The budgets of the limits routes spend, from config (rate-limit.service.ts). */
export function rateBudgets(config: Pick<Config, `RATE_LIMIT_${string}` & keyof Config>): Record<LimitKind, RateBudget> {
  const c = config as unknown as Record<string, number>;
  const min = (n: number) => ({ limit: n, windowS: 60 });
  const hour = (n: number) => ({ limit: n, windowS: 3600 });
  return {
    public: min(c.RATE_LIMIT_PUBLIC_PER_MIN!),
    auth: min(c.RATE_LIMIT_AUTH_PER_MIN!),
    login: min(c.RATE_LIMIT_LOGIN_PER_MIN!),
    account: min(c.RATE_LIMIT_LOGIN_ACCOUNT_PER_MIN!),
    merchant: min(c.RATE_LIMIT_MERCHANT_PER_MIN!),
    graphql: min(c.RATE_LIMIT_GRAPHQL_PER_MIN!),
    checkoutKey: min(c.RATE_LIMIT_CHECKOUT_KEY_PER_MIN!),
    checkoutIp: min(c.RATE_LIMIT_CHECKOUT_IP_PER_MIN!),
    linkOpenIp: hour(c.RATE_LIMIT_LINK_OPENS_PER_IP_PER_HOUR!),
    linkOpen: hour(c.RATE_LIMIT_LINK_OPENS_PER_LINK_PER_HOUR!),
    sweepNow: min(c.RATE_LIMIT_SWEEP_NOW_PER_MIN!),
    claimIp: min(c.RATE_LIMIT_CLAIM_IP_PER_MIN!),
    claimToken: min(c.RATE_LIMIT_CLAIM_TOKEN_PER_MIN!),
  };
}

// Codes every route may answer: crafted requests (the HTTP parser's own refusals: headers too large,
// a request that never finishes), the rate limit, the server's own trouble.
const ANY_ROUTE: ErrorCode[] = ['BAD_REQUEST', 'HEADERS_TOO_LARGE', 'REQUEST_TIMEOUT', 'RATE_LIMITED', 'INTERNAL', 'SERVICE_UNAVAILABLE'];
const WITH_BODY: ErrorCode[] = ['MALFORMED_JSON', 'VALIDATION_FAILED', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE'];
const API_KEY: ErrorCode[] = ['UNAUTHENTICATED', 'INVALID_API_KEY', 'IP_NOT_ALLOWED', 'WRONG_ENVIRONMENT', 'SCOPE_DENIED', 'FORBIDDEN'];
// REAUTHENTICATION_REQUIRED: the sensitive operations (docs/security.md) want the password (and second factor) again on the session.
// SECOND_FACTOR_ENROLMENT_REQUIRED: the merchant requires a second factor this user has not set up yet.
const DASHBOARD: ErrorCode[] = [
  'UNAUTHENTICATED',
  'INVALID_TOKEN',
  'SESSION_REVOKED',
  'FORBIDDEN',
  'REAUTHENTICATION_REQUIRED',
  'SECOND_FACTOR_ENROLMENT_REQUIRED',
  'WRONG_ENVIRONMENT',
];
const AUTH_ERRORS: Record<RouteAuth, ErrorCode[]> = {
  public: [],
  apiKey: API_KEY,
  dashboard: DASHBOARD,
  checkout: [...API_KEY, 'CHECKOUT_KEY_EXPIRED'],
  merchant: [...API_KEY, ...DASHBOARD],
};
const SECURITY: Record<RouteAuth, Json[]> = {
  public: [],
  apiKey: [{ ApiKey: [] }],
  dashboard: [{ BearerAuth: [] }],
  checkout: [{ CheckoutKey: [] }, { ApiKey: [] }, { CheckoutKeyQuery: [] }],
  merchant: [{ ApiKey: [] }, { BearerAuth: [] }],
};

/** zod → JSON Schema 2020-12 (OpenAPI 3.1's dialect), named schemas hoisted into components. */
function jsonSchema(schema: z.ZodType, io: 'input' | 'output', components: Json): Json {
  const out = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Json;
  delete out.$schema;
  // zod copies a `.meta({id})` into the schema as `id`, which is not a JSON Schema 2020-12 keyword.
  delete out.id;
  const defs = (out.$defs ?? {}) as Record<string, Json>;
  delete out.$defs;
  for (const def of Object.values(defs)) delete def.id;
  for (const [name, def] of Object.entries(defs)) components[io === 'input' ? `${name}Input` : name] = rewriteRefs(def, io);
  return rewriteRefs(out, io);
}

function rewriteRefs<T>(value: T, io: 'input' | 'output'): T {
  if (Array.isArray(value)) return value.map((x) => rewriteRefs(x, io)) as T;
  if (value === null || typeof value !== 'object') return value;
  const out: Json = {};
  for (const [k, x] of Object.entries(value as Json)) {
    out[k] =
      k === '$ref' && typeof x === 'string' && x.startsWith('#/$defs/')
        ? `#/components/schemas/${x.slice(8)}${io === 'input' ? 'Input' : ''}`
        : rewriteRefs(x, io);
  }
  return out as T;
}

const envelopeOf = (status: number, data: Json, message?: string): Json => ({
  type: 'object',
  properties: { status_code: { const: status }, message: message ? { type: 'string', examples: [message] } : { type: 'string' }, data },
  required: ['status_code', 'message', 'data'],
  additionalProperties: false,
});

const openApiPath = (url: string) => url.replace(/:([A-Za-z_]+)/g, '{$1}');

interface Components {
  schemas: Json;
  responses: Json;
  errorNames: Record<string, string>;
}

const pascal = (id: string) => id[0]!.toUpperCase() + id.slice(1);

/** A schema stored once under components.schemas (both environments' operations refer to it). */
function named(components: Components, name: string, make: () => Json): Json {
  if (!components.schemas[name]) components.schemas[name] = make();
  return { $ref: `#/components/schemas/${name}` };
}

function operation(route: RestRoute, doc: RouteDoc, environment: string | null, budgets: Record<LimitKind, RateBudget>, components: Components): Json {
  const id = pascal(doc.operationId);
  const hasBody = route.method === 'POST' || route.method === 'PUT';
  const codes = [...new Set([...ANY_ROUTE, ...AUTH_ERRORS[route.auth], ...(hasBody ? WITH_BODY : []), ...doc.errors])];
  const byStatus = new Map<number, string[]>();
  for (const code of codes) byStatus.set(ErrorCodes[code], [...(byStatus.get(ErrorCodes[code]) ?? []), code]);
  const budget = budgets[route.limit];
  const rateHeaders = {
    RateLimit: { $ref: '#/components/headers/RateLimit' },
    'RateLimit-Policy': { $ref: '#/components/headers/RateLimit-Policy' },
  };
  const responses: Json = {};
  const success =
    route.method === 'POST' && ['createOrder', 'createQr', 'createPaymentLink', 'openPaymentLink', 'createRefund'].includes(doc.operationId)
      ? 201
      : doc.operationId === 'sweepNow'
        ? 202
        : 200;
  responses[String(success)] = doc.raw
    ? {
        description: 'Success (not enveloped)',
        headers: rateHeaders,
        content: Object.fromEntries(doc.raw.map((t) => [t, { schema: { type: 'string', contentMediaType: t } }])),
      }
    : {
        description: 'Success',
        headers: {
          ...rateHeaders,
          ...(doc.idempotencyKey
            ? {
                'Idempotent-Replayed': {
                  description: 'Sent when the request carried an Idempotency-Key: `true` when this answer replays an earlier request’s order',
                  schema: { type: 'string', enum: ['true', 'false'] },
                },
              }
            : {}),
        },
        content: {
          'application/json': {
            schema: envelopeOf(success, doc.data ? named(components, `${id}Data`, () => jsonSchema(doc.data!, 'output', components.schemas)) : {}),
          },
        },
      };
  for (const [status, list] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    // Operations answering the same codes share one response object.
    const key = `${status}:${[...list].sort().join(',')}`;
    const name = (components.errorNames[key] ??= `${id}Error${status}`);
    components.responses[name] ??= {
      description: list.join(', '),
      ...(status === 429 ? { headers: { 'Retry-After': { $ref: '#/components/headers/Retry-After' }, ...rateHeaders } } : {}),
      content: { 'application/json': { schema: envelopeOf(status, jsonSchema(errorDataSchema(list), 'output', components.schemas)) } },
    };
    responses[String(status)] = { $ref: `#/components/responses/${name}` };
  }
  const params: Json[] = [];
  for (const m of route.url.matchAll(/:([A-Za-z_]+)/g)) params.push({ name: m[1], in: 'path', required: true, schema: { type: 'string' } });
  if (doc.query) {
    const q = jsonSchema(doc.query, 'input', components.schemas) as { properties?: Record<string, Json>; required?: string[] };
    for (const [name, schema] of Object.entries(q.properties ?? {})) params.push({ name, in: 'query', required: q.required?.includes(name) ?? false, schema });
  }
  if (doc.idempotencyKey)
    params.push({
      name: 'Idempotency-Key',
      in: 'header',
      required: false,
      description: 'Makes a retry safe: 1–255 printable ASCII characters (a UUID)',
      schema: { type: 'string', pattern: '^[\\x21-\\x7E]{1,255}$' },
    });
  const env = environment ? ` (${environment === 'testnet' ? 'sandbox' : 'production'})` : '';
  return {
    operationId: environment ? `${doc.operationId}${environment[0]!.toUpperCase()}${environment.slice(1)}` : doc.operationId,
    summary: doc.summary + env,
    ...(doc.description ? { description: doc.description } : {}),
    tags: [doc.tag],
    security: SECURITY[route.auth],
    ...(params.length ? { parameters: params } : {}),
    ...(hasBody && doc.body
      ? {
          requestBody: {
            required: true,
            content: { 'application/json': { schema: named(components, `${id}Body`, () => jsonSchema(doc.body!, 'input', components.schemas)) } },
          },
        }
      : {}),
    responses,
    'x-rate-limit': { budget: route.limit, limit: budget.limit, window_seconds: budget.windowS },
  };
}

function webhooks(components: Json): Json {
  const headers: Json = {
    [WEBHOOK_HEADERS.signature]: {
      required: true,
      description: '`sha256=<hex HMAC-SHA256 of the raw body, keyed with the merchant’s API key of the order’s environment>`',
      schema: { type: 'string', pattern: '^sha256=[0-9a-f]{64}$' },
    },
    [WEBHOOK_HEADERS.event]: { required: true, description: 'The event kind (the body’s `event`)', schema: { type: 'string', enum: [...WEBHOOK_EVENT_KINDS] } },
    [WEBHOOK_HEADERS.idempotencyKey]: { required: true, description: 'Stable per event: de-duplicate on it', schema: { type: 'string' } },
    [WEBHOOK_HEADERS.deliveryId]: { required: true, description: 'This delivery attempt’s series id', schema: { type: 'string' } },
    [STANDARD_HEADERS.id]: {
      required: true,
      description: 'Standard Webhooks: the delivery id (= X-Service-Delivery-Id), the same on retries and redeliveries',
      schema: { type: 'string' },
    },
    [STANDARD_HEADERS.timestamp]: {
      required: true,
      description: 'Standard Webhooks: Unix seconds when this attempt was signed; refuse calls far from your clock (replays)',
      schema: { type: 'string', pattern: '^[0-9]+$' },
    },
    [STANDARD_HEADERS.signature]: {
      required: true,
      description:
        'Standard Webhooks: space-separated `v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<raw body>">`, keyed with the environment’s whsec_ secret (two during a rotation’s overlap)',
      schema: { type: 'string' },
    },
  };
  components.WebhookData = {
    type: 'object',
    description:
      'For transaction.* events: the order (order_no, merchant_id, environment, status, previous_status, sequence, amount, currency, network, token, deposit_address, amounts, payments, tx_hashes, times); merchant events (settlement wallet changes, sweeps) carry their own fields. Fields may be added within a payload version.',
    properties: { order_no: { type: 'string' }, merchant_id: { type: 'string' }, environment: { type: 'string' }, status: { type: 'string' } },
  };
  const out: Json = {};
  for (const kind of WEBHOOK_EVENT_KINDS) {
    out[kind] = {
      post: {
        summary: `Webhook ${kind}`,
        description:
          'Sent to the merchant’s notification URL of the environment. Answer 2xx within the timeout; other answers, timeouts and network errors are retried with backoff. Verify the signature over the exact raw body before parsing.',
        parameters: Object.entries(headers).map(([name, h]) => ({ name, in: 'header', ...(h as Json) })),
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: {
                type: 'object',
                properties: {
                  version: { const: WEBHOOK_PAYLOAD_VERSION },
                  id: { type: 'string' },
                  event: { const: kind },
                  created_at: { type: 'integer', description: 'Unix seconds' },
                  idempotency_key: { type: 'string' },
                  data: { $ref: '#/components/schemas/WebhookData' },
                },
                required: ['version', 'id', 'event', 'created_at', 'idempotency_key', 'data'],
              },
            },
          },
        },
        responses: { '200': { description: 'Received (any 2xx)' } },
      },
    };
  }
  return out;
}

export interface OpenApiOptions {
  config: Config;
  /** The package version the document describes. */
  version: string;
}

export function buildOpenApiDocument(table: RouteTable, opts: OpenApiOptions): Json {
  const docs = routeDocs({ orderMinIdr: opts.config.ORDER_MIN_IDR, orderMaxIdr: opts.config.ORDER_MAX_IDR });
  const budgets = rateBudgets(opts.config);
  const components: Components = { schemas: {}, responses: {}, errorNames: {} };
  const paths: Record<string, Json> = {};
  const mounts = [
    ...table.global.map((route) => ({ route, prefix: '/api/v2', environment: null as string | null })),
    ...ENVIRONMENTS.flatMap((e) => table.environment.map((route) => ({ route, prefix: `/api/v2/${ENV_PATH[e]}`, environment: ENV_PATH[e] as string | null }))),
  ];
  const missing = mounts.filter((m) => !docs[`${m.route.method} ${m.route.url}`]).map((m) => `${m.route.method} ${m.route.url}`);
  if (missing.length) throw new Error(`No OpenAPI entry in src/rest/openapi/route.docs.ts for: ${[...new Set(missing)].join(', ')}`);
  for (const { route, prefix, environment } of mounts) {
    const path = openApiPath(prefix + route.url);
    (paths[path] ??= {})[route.method.toLowerCase()] = operation(route, docs[`${route.method} ${route.url}`]!, environment, budgets, components);
  }
  const sortedPaths = Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b)));
  const hooks = webhooks(components.schemas);
  const sorted = (o: Json) => Object.fromEntries(Object.entries(o).sort(([a], [b]) => a.localeCompare(b)));
  return {
    openapi: OPENAPI_VERSION,
    info: {
      title: 'Crypto payment gateway REST API',
      version: opts.version,
      description:
        'Merchants’ servers create IDR orders, lock a USDT/USDC rate and issue deposit QRs. Every answer is the envelope `{status_code, message, data}`; errors carry `data.code`. `/api/v2/testnet` is the sandbox (local chains), `/api/v2/mainnet` production: each has its own API key. See docs/api.md for what this reference cannot say.',
    },
    servers: [{ url: '/', description: 'This gateway' }],
    tags: ['Auth', 'Merchant', 'Orders', 'Refunds', 'Payment links', 'Settlement wallets', 'Sweeps', 'Sandbox', 'Exports'].map((name) => ({ name })),
    paths: sortedPaths,
    webhooks: hooks,
    components: {
      schemas: sorted(components.schemas),
      responses: sorted(components.responses),
      securitySchemes: {
        ApiKey: {
          type: 'apiKey',
          in: 'header',
          name: 'api-key',
          description: 'The merchant’s API key of the path’s environment (sandbox keys on /testnet, production keys on /mainnet)',
        },
        CheckoutKey: {
          type: 'apiKey',
          in: 'header',
          name: 'api-key',
          description:
            'An order’s scoped checkout key (answered by createOrder as `key`): checkOrderRate, pgqr/fiat/create, getOrder, listToken and the QR image of that order only',
        },
        CheckoutKeyQuery: { type: 'apiKey', in: 'query', name: 'key', description: 'The scoped checkout key as a query parameter (QR image URLs)' },
        BearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'A dashboard access token from /api/v2/auth/login' },
      },
      headers: {
        'Retry-After': { description: 'Seconds until the rate-limit window resets', schema: { type: 'integer' } },
        RateLimit: {
          description:
            'IETF RateLimit (draft-ietf-httpapi-ratelimit-headers): the budget this request spent from, e.g. `"merchant";r=2999;t=60` (r: remaining, t: seconds to reset)',
          schema: { type: 'string' },
        },
        'RateLimit-Policy': { description: 'IETF RateLimit-Policy: the budget’s quota and window, e.g. `"merchant";q=3000;w=60`', schema: { type: 'string' } },
      },
    },
  };
}
