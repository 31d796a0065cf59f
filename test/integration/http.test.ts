import { buildSchema as buildSdlSchema } from 'graphql';
import pino from 'pino';
import WebSocket from 'ws';
import { createApp } from '../../src/app';
import { SecretBox } from '../../src/common/crypto';
import { DomainError } from '../../src/common/errors';
import { loadConfig } from '../../src/config';
import { connectOrm } from '../../src/db/orm';
import { buildGatewaySchema } from '../../src/graphql/schema';
import { LoginDocument, MeDocument } from '../generated/graphql';
import { createEmptyDatabase } from '../support/db';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, startTestServer, TEST_JWT_SECRET, TEST_MASTER_KEY, type TestGateway } from '../support/gateway';
import { bearer, gql, wsClient, wsQuery } from '../support/graphql';
import { http, rawHttp, type HttpResult } from '../support/http';

let gw: TestGateway;
let m: Awaited<ReturnType<typeof createMerchant>>;

beforeAll(async () => {
  // No job scheduler needed here (ROLE=api): its timers would only hold the test process open.
  gw = await startTestGateway({ ROLE: 'api' });
  m = await createMerchant(gw.app);
});
afterAll(() => gw?.close());

/** Library or database internals that must never reach a client. */
const LEAK = /\n\s+at |node_modules|\.(ts|js):\d+|SQLSTATE|syntax error at|relation "|violates|duplicate key|FST_ERR|ZodError|stack/i;

/** Asserts the REST error envelope: `{status_code, message, data:{code}}` with status_code = HTTP status. */
function expectEnvelope(res: HttpResult, status: number, code: string): void {
  expect({ status: res.status, body: res.body }).toMatchObject({ status, body: { status_code: status, data: { code } } });
  expect(Object.keys(res.body).sort()).toEqual(['data', 'message', 'status_code']);
  expect(typeof res.body.message).toBe('string');
  expect(res.body.message.length).toBeGreaterThan(0);
  expect(res.text).not.toMatch(LEAK);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
}

describe('REST error envelope, one per error class', () => {
  it('unknown path → 404', async () => {
    const res = await http(gw.url, '/api/v2/nope?x=1');
    expectEnvelope(res, 404, 'ROUTE_NOT_FOUND');
    expect(res.body.message).toBe('No route GET /api/v2/nope');
    expectEnvelope(await http(gw.url, '/'), 404, 'ROUTE_NOT_FOUND');
    expectEnvelope(await http(gw.url, '/api/v2/testnet/merchant/me/extra'), 404, 'ROUTE_NOT_FOUND');
  });

  it('wrong method → 405 with Allow', async () => {
    const get = await http(gw.url, '/api/v2/auth/login');
    expectEnvelope(get, 405, 'METHOD_NOT_ALLOWED');
    expect(get.headers.get('allow')).toBe('POST');
    const del = await http(gw.url, '/api/v2/testnet/merchant/me', { method: 'DELETE' });
    expectEnvelope(del, 405, 'METHOD_NOT_ALLOWED');
    expect(del.headers.get('allow')?.split(/,\s*/)).toContain('GET');
    const put = await http(gw.url, '/api/v2/auth/me', { method: 'PUT', body: {} });
    expectEnvelope(put, 405, 'METHOD_NOT_ALLOWED');
    expect(put.headers.get('allow')?.split(/,\s*/)).toContain('GET');
  });

  it('malformed JSON → 400', async () => {
    const res = await http(gw.url, '/api/v2/auth/login', { raw: '{"email": "a@b.c", ', headers: { 'content-type': 'application/json' } });
    expectEnvelope(res, 400, 'MALFORMED_JSON');
    expect(res.body.message).toBe('Malformed JSON body');
    expectEnvelope(await http(gw.url, '/api/v2/auth/refresh', { raw: '', headers: { 'content-type': 'application/json' } }), 400, 'MALFORMED_JSON');
  });

  it('a body that parses but is invalid → 400 VALIDATION_FAILED naming the fields', async () => {
    const res = await http(gw.url, '/api/v2/auth/login', { body: { email: 42, user_type: 'admin' } });
    expectEnvelope(res, 400, 'VALIDATION_FAILED');
    expect(Object.keys(res.body.data.fields).sort()).toEqual(['email', 'password', 'user_type']);
    expectEnvelope(await http(gw.url, '/api/v2/auth/login', { body: [1, 2] }), 400, 'VALIDATION_FAILED');
  });

  it('wrong content type → 415', async () => {
    expectEnvelope(
      await http(gw.url, '/api/v2/auth/login', { raw: 'email=a', headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    );
    expectEnvelope(await http(gw.url, '/api/v2/auth/login', { raw: '{}', headers: { 'content-type': 'text/plain' } }), 415, 'UNSUPPORTED_MEDIA_TYPE');
  });

  it('oversized body → 413', async () => {
    const body = JSON.stringify({ email: 'a@b.c', password: 'x'.repeat(gw.app.config.BODY_LIMIT_BYTES), user_type: 'merchant' });
    expectEnvelope(await http(gw.url, '/api/v2/auth/login', { raw: body, headers: { 'content-type': 'application/json' } }), 413, 'PAYLOAD_TOO_LARGE');
  });

  it('missing or bad credentials → 401', async () => {
    expectEnvelope(await http(gw.url, '/api/v2/auth/me'), 401, 'UNAUTHENTICATED');
    expectEnvelope(await http(gw.url, '/api/v2/auth/me', { headers: bearer('not.a.jwt') }), 401, 'INVALID_TOKEN');
    expectEnvelope(await http(gw.url, '/api/v2/auth/logout', { method: 'POST', body: {} }), 401, 'UNAUTHENTICATED');
    expectEnvelope(await http(gw.url, '/api/v2/testnet/merchant/me'), 401, 'INVALID_API_KEY');
    expectEnvelope(await http(gw.url, '/api/v2/testnet/merchant/me', { headers: { 'api-key': 'garbage' } }), 401, 'INVALID_API_KEY');
    expectEnvelope(await http(gw.url, '/api/v2/mainnet/merchant/me', { headers: { 'api-key': `cpg_${'ab'.repeat(32)}` } }), 401, 'INVALID_API_KEY');
    expectEnvelope(
      await http(gw.url, '/api/v2/auth/login', { body: { email: m.email, password: 'wrong password', user_type: 'merchant' } }),
      401,
      'INVALID_CREDENTIALS',
    );
  });

  it('key of the other environment → 403', async () => {
    const res = await http(gw.url, '/api/v2/mainnet/merchant/me', { headers: { 'api-key': m.sandboxKey } });
    expectEnvelope(res, 403, 'WRONG_ENVIRONMENT');
    expect(res.body.message).toMatch(/sandbox API key/);
    expectEnvelope(await http(gw.url, '/api/v2/testnet/merchant/me', { headers: { 'api-key': m.productionKey } }), 403, 'WRONG_ENVIRONMENT');
  });

  it('requests the HTTP parser or router refuses still get the envelope (raw socket: fetch would not send them)', async () => {
    const tooLarge = await rawHttp(gw.url, { method: 'GET', path: '/api/v2/auth/me', headers: { 'x-junk': 'k'.repeat(20_000) } });
    expectEnvelope(tooLarge, 431, 'HEADERS_TOO_LARGE');
    const control = await rawHttp(gw.url, { method: 'GET', path: '/api/v2/auth/me', headers: { authorization: 'Bearer \u0001\u0000x' } });
    expectEnvelope(control, 400, 'BAD_REQUEST');
    const badUrl = await rawHttp(gw.url, { method: 'GET', path: '/api/v2/%zz' });
    expectEnvelope(badUrl, 400, 'BAD_REQUEST');
    expect(badUrl.body.message).toBe('Malformed URL');
    // Only /graphql itself answers GraphQL-shaped errors; look-alike paths are REST.
    expectEnvelope(await http(gw.url, '/graphql2'), 404, 'ROUTE_NOT_FOUND');
    expectEnvelope(await http(gw.url, '/graphql/x', { raw: '{', headers: { 'content-type': 'application/json' } }), 400, 'MALFORMED_JSON');
    const gqlTooLarge = await rawHttp(gw.url, {
      method: 'POST',
      path: '/graphql',
      headers: { 'content-type': 'application/json', 'x-junk': 'k'.repeat(20_000) },
      body: '{}',
    });
    expect(gqlTooLarge.status).toBe(431);
    expect(gqlTooLarge.body).toEqual({ errors: [{ message: 'Request headers too large', extensions: { code: 'HEADERS_TOO_LARGE' } }] });
  });

  it('NUL characters (which PostgreSQL cannot store) are a 400, not a database error', async () => {
    const login = await http(gw.url, '/api/v2/auth/login', { body: { email: `${m.email}\u0000`, password: m.password, user_type: 'merchant' } });
    expectEnvelope(login, 400, 'BAD_REQUEST');
    expect(login.body.message).toMatch(/NUL/);
    expectEnvelope(await http(gw.url, '/api/v2/auth/refresh?x=%00', { body: { refresh_token: 'abc' } }), 400, 'BAD_REQUEST');
    const g = await gql(gw.url, LoginDocument, { email: `a\u0000@b.c`, password: 'x' });
    expect(g.errors?.[0]?.extensions?.code).toBe('BAD_REQUEST');
    const client = wsClient(gw.url);
    try {
      expect((await wsQuery(client, LoginDocument, { email: `a\u0000@b.c`, password: 'x' })).errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    } finally {
      await client.dispose();
    }
  });

  it('success uses the same envelope', async () => {
    const res = await http(gw.url, '/api/v2/testnet/merchant/me', { headers: { 'api-key': m.sandboxKey } });
    expect(res.body).toMatchObject({ status_code: 200, message: 'Success', data: { merchant_id: m.merchantId, environment: 'sandbox' } });
  });
});

describe('GraphQL over HTTP: client errors carry extensions.code, never 5xx', () => {
  const post = (raw: string, headers: Record<string, string> = { 'content-type': 'application/json' }) => http(gw.url, '/graphql', { raw, headers });
  const codes = (res: HttpResult) => (res.body.errors as { extensions: { code: string } }[]).map((e) => e.extensions.code);

  it('malformed JSON, wrong content type, oversized, parse and validation errors', async () => {
    expect(codes(await post('{"query": '))).toEqual(['MALFORMED_JSON']);
    expect(codes(await post('{ me { id } }', { 'content-type': 'text/plain' }))).toEqual(['UNSUPPORTED_MEDIA_TYPE']);
    const big = await post(JSON.stringify({ query: `{ me { id } } #${'x'.repeat(gw.app.config.BODY_LIMIT_BYTES)}` }));
    expect(big.status).toBe(413);
    expect(codes(big)).toEqual(['PAYLOAD_TOO_LARGE']);
    const parse = await post(JSON.stringify({ query: '{ me { ' }));
    expect(parse.status).toBe(400);
    expect(codes(parse)).toEqual(['GRAPHQL_PARSE_FAILED']);
    expect(codes(await post(JSON.stringify({ query: '{ nope }' })))).toEqual(['GRAPHQL_VALIDATION_FAILED']);
    const badVar = await gql(gw.url, LoginDocument, { email: 5 as unknown as string, password: 'x' });
    expect(badVar.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect((await gql(gw.url, MeDocument)).errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
  });
});

describe('a browser opening /graphql (no Apollo landing page: it loads its explorer from outside hosts)', () => {
  const BROWSER = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };

  it('goes to the offline explorer when it is enabled (the development default)', async () => {
    const res = await fetch(`${gw.url}/graphql`, { headers: BROWSER, redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/explorer');
    expect(await res.text()).not.toMatch(/apollographql|cdn\./i);
    // A GraphQL GET (query string) still runs; a POST is untouched.
    const get = await fetch(`${gw.url}/graphql?query=${encodeURIComponent('{ __typename }')}`, { headers: { ...BROWSER, 'apollo-require-preflight': 'true' } });
    expect(await get.json()).toEqual({ data: { __typename: 'Query' } });
    expect((await http(gw.url, '/graphql', { body: { query: '{ __typename }' } })).body).toEqual({ data: { __typename: 'Query' } });
  });

  it('gets a 404 saying the explorer is off when EXPLORER_ENABLED=false (the production default), never a page from elsewhere', async () => {
    const off = await startTestGateway({ ROLE: 'api', EXPLORER_ENABLED: 'false' }, { db: gw.db });
    try {
      const res = await http(off.url, '/graphql', { headers: BROWSER });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ errors: [{ message: expect.stringMatching(/EXPLORER_ENABLED/), extensions: { code: 'ROUTE_NOT_FOUND' } }] });
      expect(res.text).not.toMatch(/apollographql|<html/i);
      expect((await http(off.url, '/explorer', { headers: BROWSER })).status).toBe(404);
      expect((await http(off.url, '/graphql', { body: { query: '{ __typename }' } })).body).toEqual({ data: { __typename: 'Query' } });
    } finally {
      await off.close();
    }
  });
});

/** Runs a raw query string over graphql-ws (no typed document). */
function wsRaw(
  client: ReturnType<typeof wsClient>,
  query: string,
): Promise<{ data?: unknown; errors?: { message: string; extensions?: { code?: string } }[] }> {
  return new Promise((ok, fail) => {
    let last = {};
    client.subscribe(
      { query },
      {
        next: (v) => (last = v),
        error: (e) => (Array.isArray(e) ? ok({ errors: e }) : fail(e)),
        complete: () => ok(last),
      },
    );
  });
}

describe('server', () => {
  it('/healthz 200 and /readyz 200 when migrated', async () => {
    const h = await http(gw.url, '/healthz');
    expect(h.status).toBe(200);
    expect(h.body).toEqual({ status: 'ok' });
    const r = await http(gw.url, '/readyz');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'ready', database: true, migrations: true });
  });

  it('/readyz 503 while a migration is pending (connected, not migrated)', async () => {
    const db = await createEmptyDatabase();
    const config = loadConfig({
      NODE_ENV: 'test',
      DATABASE_URL: db.url,
      MASTER_KEY: TEST_MASTER_KEY,
      JWT_SECRET: TEST_JWT_SECRET,
      RATE_LIMIT_STORE: 'memory',
      DATA_DIR: '/nonexistent',
    });
    const orm = await connectOrm(db.url, 2);
    let server: Awaited<ReturnType<typeof startTestServer>> | undefined;
    try {
      server = await startTestServer(createApp(config, orm, pino({ level: 'silent' }), new SecretBox(config.MASTER_KEY!)), {
        schema: await buildGatewaySchema(),
      });
      const base = server.url;
      const res = await http(base, '/readyz');
      expect(res.status).toBe(503);
      expect(res.body).toEqual({
        status_code: 503,
        message: 'Not ready: waiting for migrations',
        data: { status: 'not_ready', database: true, migrations: false },
        status: 'not_ready',
        database: true,
        migrations: false,
      });
      expect((await http(base, '/healthz')).status).toBe(200);
    } finally {
      await server?.close();
      await orm.close(true);
      await db.drop();
    }
  });

  it('x-request-id: a sane one is echoed, a missing or hostile one is replaced', async () => {
    expect((await http(gw.url, '/healthz', { headers: { 'x-request-id': 'abc-123.def_4' } })).headers.get('x-request-id')).toBe('abc-123.def_4');
    const generated = (await http(gw.url, '/api/v2/nope')).headers.get('x-request-id');
    expect(generated).toMatch(/^[0-9a-f-]{36}$/);
    const hostile = (await http(gw.url, '/healthz', { headers: { 'x-request-id': 'a b<script>' } })).headers.get('x-request-id');
    expect(hostile).toMatch(/^[0-9a-f-]{36}$/);
    expect((await http(gw.url, '/healthz', { headers: { 'x-request-id': 'x'.repeat(65) } })).headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    // Errors carry it too.
    expect((await http(gw.url, '/api/v2/auth/me', { headers: { 'x-request-id': 'trace-me' } })).headers.get('x-request-id')).toBe('trace-me');
  });

  it('GraphQL over graphql-ws on the same port and path, authenticated by connectionParams', async () => {
    const { token } = (await gql(gw.url, LoginDocument, { email: m.email, password: m.password })).data!.login;
    const dashboard = wsClient(gw.url, { authorization: `Bearer ${token}` });
    const apiKey = wsClient(gw.url, { 'api-key': m.sandboxKey });
    const anonymous = wsClient(gw.url);
    try {
      const me = await wsQuery(dashboard, MeDocument);
      expect(me.errors).toBeUndefined();
      expect(me.data?.me).toMatchObject({ email: m.email, merchant: { id: m.merchantId } });
      expect((await wsQuery(apiKey, MeDocument)).errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
      expect((await wsQuery(anonymous, MeDocument)).errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
      const bad = await wsQuery(anonymous, LoginDocument, { email: m.email, password: 'wrong password' });
      expect(bad.errors?.[0]?.extensions?.code).toBe('INVALID_CREDENTIALS');
      // Client mistakes get the same codes as over HTTP, and the socket stays usable after them.
      expect((await wsRaw(anonymous, '{ me { id ')).errors?.[0]?.extensions?.code).toBe('GRAPHQL_PARSE_FAILED');
      expect((await wsRaw(anonymous, '{ nope }')).errors?.[0]?.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
      expect((await wsQuery(anonymous, LoginDocument, { email: 5 as unknown as string, password: 'x' })).errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      expect((await wsQuery(dashboard, MeDocument)).data?.me.email).toBe(m.email);
    } finally {
      await Promise.all([dashboard.dispose(), apiKey.dispose(), anonymous.dispose()]);
    }
  });

  it('websocket upgrades on other paths are refused', async () => {
    const ws = new WebSocket(gw.url.replace(/^http/, 'ws') + '/api/v2/auth/me', 'graphql-transport-ws');
    const outcome = await new Promise<string>((ok) => {
      ws.on('open', () => ok('open'));
      ws.on('error', () => ok('error'));
    });
    expect(outcome).toBe('error');
  });
});

describe('no internals in responses', () => {
  let server: Awaited<ReturnType<typeof startTestServer>>;
  let base: string;
  const secret = 'select password_hash from dashboard_users where 1=1';

  beforeAll(async () => {
    const schema = buildSdlSchema('type Query { boom: String, domain: String }');
    const fields = schema.getQueryType()!.getFields();
    fields.boom!.resolve = () => {
      throw new Error(secret);
    };
    fields.domain!.resolve = () => {
      throw new DomainError('MERCHANT_NOT_FOUND', 'Merchant not found');
    };
    server = await startTestServer(gw.app, {
      schema,
      globalRoutes: [
        {
          method: 'GET',
          url: '/boom',
          auth: 'public',
          limit: 'public',
          handler: async () => {
            throw new Error(secret);
          },
        },
      ],
    });
    base = server.url;
  });
  afterAll(() => server?.close());

  it('an unexpected REST error is a 500 envelope with a fixed message', async () => {
    const res = await http(base, '/api/v2/boom');
    expectEnvelope(res, 500, 'INTERNAL');
    expect(res.body.message).toBe('Internal server error');
    expect(res.text).not.toContain('password_hash');
  });

  it('an unexpected resolver error is INTERNAL with no message, stack or SQL; domain errors keep their code', async () => {
    const res = await http(base, '/graphql', { body: { query: '{ boom }' } });
    expect(res.body.errors).toEqual([{ message: 'Internal server error', path: ['boom'], extensions: { code: 'INTERNAL' } }]);
    expect(res.text).not.toMatch(LEAK);
    expect(res.text).not.toContain('password_hash');
    const domain = await http(base, '/graphql', { body: { query: '{ domain }' } });
    expect(domain.body.errors[0]).toMatchObject({ message: 'Merchant not found', extensions: { code: 'MERCHANT_NOT_FOUND' } });
    expect(domain.text).not.toMatch(LEAK);
  });

  it('the same over graphql-ws', async () => {
    const client = wsClient(base);
    try {
      const boom = await wsRaw(client, '{ boom }');
      expect(boom.errors).toEqual([{ message: 'Internal server error', path: ['boom'], extensions: { code: 'INTERNAL' } }]);
      const domain = await wsRaw(client, '{ domain }');
      expect(domain.errors?.[0]).toMatchObject({ message: 'Merchant not found', extensions: { code: 'MERCHANT_NOT_FOUND' } });
    } finally {
      await client.dispose();
    }
  });
});
