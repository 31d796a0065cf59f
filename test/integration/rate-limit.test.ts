import { loadConfig } from '../../src/config';
import { pruneSessionsJob } from '../../src/jobs/prune-sessions.job';
import { LEASE_SHARE, PostgresWindows, type Window } from '../../src/modules/limits/postgres-windows';
import { LoginDocument } from '../generated/graphql';
import { createMerchant } from '../support/fixtures';
import { adminQuery } from '../support/pg-admin';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { gql } from '../support/graphql';
import { http, type HttpResult } from '../support/http';

const badLogin = { email: 'nobody@example.test', password: 'wrong password', user_type: 'merchant' };
const login = (gw: TestGateway) => http(gw.url, '/api/v2/auth/login', { body: badLogin });
const refresh = (gw: TestGateway) => http(gw.url, '/api/v2/auth/refresh', { body: { refresh_token: 'not-a-real-token' } });

/** 429: envelope, clear message, Retry-After header in whole seconds within the window. */
function expectLimited(res: HttpResult, message: RegExp): void {
  expect(res.status).toBe(429);
  expect(res.body).toMatchObject({ status_code: 429, data: { code: 'RATE_LIMITED' } });
  expect(res.body.message).toMatch(message);
  expect(res.body.message).toMatch(/retry after \d+ s/);
  const retryAfter = Number(res.headers.get('retry-after'));
  expect(Number.isInteger(retryAfter)).toBe(true);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(60);
  expect(res.body.data.retryAfterS).toBe(retryAfter);
}

it('defaults: login is stricter than the other auth routes', () => {
  const c = loadConfig({ NODE_ENV: 'test', MASTER_KEY: '11'.repeat(32), JWT_SECRET: 'x'.repeat(32) });
  expect(c.RATE_LIMIT_LOGIN_PER_MIN).toBeLessThan(c.RATE_LIMIT_AUTH_PER_MIN);
  expect(c.RATE_LIMIT_STORE).toBe('postgres');
});

describe('memory store, low limits', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({
      ROLE: 'api',
      RATE_LIMIT_STORE: 'memory',
      RATE_LIMIT_LOGIN_PER_MIN: '3',
      RATE_LIMIT_AUTH_PER_MIN: '6',
      RATE_LIMIT_GRAPHQL_PER_MIN: '8',
    });
  });
  afterAll(() => gw?.close());

  it('login: 3 attempts answered, the 4th is 429 with Retry-After; other auth routes still answer until their own limit', async () => {
    for (let i = 0; i < 3; i++) expect((await login(gw)).body.data.code).toBe('INVALID_CREDENTIALS');
    expectLimited(await login(gw), /Too many login attempts/);
    // Even correct-looking input is refused now, before any password check.
    expectLimited(await login(gw), /Too many login attempts/);

    // Login's limit is its own: refresh (auth limit 6) is not affected yet.
    for (let i = 0; i < 6; i++) expect((await refresh(gw)).body.data.code).toBe('INVALID_TOKEN');
    expectLimited(await refresh(gw), /Too many authentication requests/);
    // GraphQL login shares the login counter with REST.
    const g = await gql(gw.url, LoginDocument, { email: badLogin.email, password: badLogin.password });
    expect(g.errors?.[0]?.extensions).toMatchObject({ code: 'RATE_LIMITED' });
    expect(g.errors?.[0]?.message).toMatch(/Too many login attempts/);
  });

  it('GraphQL over HTTP has its own per-IP limit: 429 with Retry-After and a GraphQL-shaped error', async () => {
    let res: HttpResult | undefined;
    for (let i = 0; i < 10 && res?.status !== 429; i++) res = await http(gw.url, '/graphql', { body: { query: '{ __typename }' } });
    expect(res!.status).toBe(429);
    expect(Number(res!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(res!.body.errors[0]).toMatchObject({ extensions: { code: 'RATE_LIMITED' } });
    expect(res!.body.errors[0].message).toMatch(/Too many GraphQL requests/);
  });
});

describe('login per account as well as per IP', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    // The per-IP login limit is out of the way: only the per-account one can refuse here.
    gw = await startTestGateway({ ROLE: 'api', RATE_LIMIT_STORE: 'memory', RATE_LIMIT_LOGIN_PER_MIN: '1000', RATE_LIMIT_LOGIN_ACCOUNT_PER_MIN: '3' });
  });
  afterAll(() => gw?.close());

  it('3 attempts on one account (any letter case), then 429 even with the right password; another account still logs in', async () => {
    const a = await createMerchant(gw.app);
    const b = await createMerchant(gw.app);
    const as = (email: string, password: string) => http(gw.url, '/api/v2/auth/login', { body: { email, password, user_type: 'merchant' } });
    expect((await as(a.email, 'wrong password')).body.data.code).toBe('INVALID_CREDENTIALS');
    expect((await as(a.email.toUpperCase(), 'wrong password')).body.data.code).toBe('INVALID_CREDENTIALS');
    const g = await gql(gw.url, LoginDocument, { email: ` ${a.email}`, password: 'wrong password' });
    expect(g.errors?.[0]?.extensions?.code).toBe('INVALID_CREDENTIALS');
    expectLimited(await as(a.email, a.password), /Too many login attempts for this account/);
    const g2 = await gql(gw.url, LoginDocument, { email: a.email, password: a.password });
    expect(g2.errors?.[0]?.extensions?.code).toBe('RATE_LIMITED');
    expect((await as(b.email, b.password)).status).toBe(200);
  });
});

describe('PostgreSQL store: counters hold across two gateway instances on one database', () => {
  let db: TestDatabase;
  let a: TestGateway;
  let b: TestGateway;
  beforeAll(async () => {
    db = await createTestDatabase();
    const env = { ROLE: 'api', RATE_LIMIT_STORE: 'postgres', RATE_LIMIT_LOGIN_PER_MIN: '3', RATE_LIMIT_AUTH_PER_MIN: '5', RATE_LIMIT_MERCHANT_PER_MIN: '25' };
    a = await startTestGateway(env, { db });
    b = await startTestGateway(env, { db });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await db?.drop();
  });

  it('2 attempts on A + 1 on B use up the login limit on both', async () => {
    expect((await login(a)).status).toBe(401);
    expect((await login(a)).status).toBe(401);
    expect((await login(b)).status).toBe(401);
    expectLimited(await login(b), /Too many login attempts/);
    expectLimited(await login(a), /Too many login attempts/);
    const rows = await adminQuery<{ key: string; points: number }>(`select key, points from rate_limits where key like 'login%'`, [], db.url);
    expect(rows.rows).toHaveLength(1);
    expect(rows.rows[0]!.points).toBeGreaterThanOrEqual(4);
  });

  it('failed API-key guesses count against the IP on the shared auth limit', async () => {
    for (let i = 0; i < 5; i++) {
      const gw = i % 2 ? a : b;
      expect((await http(gw.url, '/api/v2/testnet/merchant/me', { headers: { 'api-key': `cpg_${'0'.repeat(64)}` } })).status).toBe(401);
    }
    expectLimited(await http(a.url, '/api/v2/testnet/merchant/me', { headers: { 'api-key': `cpg_${'0'.repeat(64)}` } }), /Too many authentication requests/);
    expectLimited(await refresh(b), /Too many authentication requests/);
  });

  it('a burst on both instances at once: exactly the limit answered, every hit counted once, settled in batches', async () => {
    const m = await createMerchant(a.app);
    const hitsBefore = (await counter(a, 'cpg_rate_limit_hits_total')) + (await counter(b, 'cpg_rate_limit_hits_total'));
    const batchesBefore = (await counter(a, 'cpg_rate_limit_batches_total')) + (await counter(b, 'cpg_rate_limit_batches_total'));
    const burst = await Promise.all(
      Array.from({ length: 60 }, (_, i) => http((i % 2 ? a : b).url, '/api/v2/testnet/merchant/me', { headers: { 'api-key': m.sandboxKey } })),
    );
    expect(burst.filter((r) => r.status === 200)).toHaveLength(25);
    const refused = burst.filter((r) => r.status !== 200);
    expect(refused).toHaveLength(35);
    for (const r of refused) expectLimited(r, /Too many requests for this merchant/);
    const row = await adminQuery<{ points: number }>(`select points from rate_limits where key = $1`, [`merchant:${m.merchantId}`], db.url);
    expect(row.rows[0]!.points).toBe(60);
    const hits = (await counter(a, 'cpg_rate_limit_hits_total')) + (await counter(b, 'cpg_rate_limit_hits_total')) - hitsBefore;
    const batches = (await counter(a, 'cpg_rate_limit_batches_total')) + (await counter(b, 'cpg_rate_limit_batches_total')) - batchesBefore;
    expect(hits).toBe(60);
    expect(batches).toBeLessThan(hits);

    // A window that ended starts again from this hit, with a fresh minute.
    await adminQuery(`update rate_limits set expire = $2 where key = $1`, [`merchant:${m.merchantId}`, Date.now() - 1], db.url);
    expect((await http(a.url, '/api/v2/testnet/merchant/me', { headers: { 'api-key': m.sandboxKey } })).status).toBe(200);
    const fresh = await adminQuery<{ points: number; expire: string }>(
      `select points, expire from rate_limits where key = $1`,
      [`merchant:${m.merchantId}`],
      db.url,
    );
    expect(fresh.rows[0]!.points).toBe(1);
    expect(Number(fresh.rows[0]!.expire)).toBeGreaterThan(Date.now() + 55_000);
  });

  it('hits numbered across instances and batches: each key counts 1…n, no number twice, none skipped', async () => {
    const knexOf = (gw: TestGateway) => gw.app.orm.em.getConnection().getKnex();
    let batches = 0;
    const stores = [a, b].map((gw) => new PostgresWindows(knexOf(gw), undefined, () => batches++));
    const keys = [`test:${Date.now()}:x`, `test:${Date.now()}:y`];
    const hits = await Promise.all(
      Array.from({ length: 80 }, (_, i) =>
        stores[i % 2]!.hit(keys[i % 3 === 0 ? 0 : 1]!, 60_000, 100).then((w) => ({ key: keys[i % 3 === 0 ? 0 : 1]!, ...w })),
      ),
    );
    for (const key of keys) {
      const numbers = hits
        .filter((h) => h.key === key)
        .map((h) => h.consumed)
        .sort((x, y) => x - y);
      expect(numbers).toEqual(Array.from({ length: numbers.length }, (_, i) => i + 1));
      expect(new Set(hits.filter((h) => h.key === key).map((h) => h.expireMs)).size).toBe(1);
    }
    expect(batches).toBeLessThan(40);
  });

  describe('leases', () => {
    /** 80 callers across both instances, each hitting again as soon as it is answered (as a busy merchant's server would). */
    async function burst(limit: number) {
      const stats = { batches: 0, sentHits: 0 };
      const stores = [a, b].map(
        (gw) =>
          new PostgresWindows(gw.app.orm.em.getConnection().getKnex(), undefined, (n) => {
            stats.batches++;
            stats.sentHits += n;
          }),
      );
      const key = `test:${Date.now()}:lease${limit}`;
      const hits: Window[] = [];
      await Promise.all(
        Array.from({ length: 80 }, async (_, i) => {
          for (let j = 0; j < 40; j++) hits.push(await stores[i % 2]!.hit(key, 60_000, limit));
        }),
      );
      const numbers = hits.map((h) => h.consumed);
      expect(new Set(numbers).size).toBe(numbers.length);
      const row = await adminQuery<{ points: number }>(`select points from rate_limits where key = $1`, [key], db.url);
      expect(row.rows[0]!.points).toBeGreaterThanOrEqual(hits.length);
      return { ...stats, hits: hits.length, allowed: numbers.filter((n) => n <= limit).length };
    }

    it('a large budget is served mostly without a round trip', async () => {
      const r = await burst(1_000_000);
      expect(r.allowed).toBe(r.hits);
      expect(r.sentHits).toBeLessThan(r.hits / 4);
      expect(r.batches).toBeLessThan(r.hits / 10);
    });

    it('near the limit: never over it, and at most a share of it refused early', async () => {
      const limit = 2_000;
      const r = await burst(limit);
      expect(r.allowed).toBeLessThanOrEqual(limit);
      expect(r.allowed).toBeGreaterThanOrEqual(limit - 2 * Math.floor(limit / LEASE_SHARE));
      expect(r.sentHits).toBeLessThan(r.hits);
    });
  });

  it('the prune job deletes windows that ended over an hour ago and keeps the rest', async () => {
    await adminQuery(
      `insert into rate_limits (key, points, expire) values ('public:old', 3, $1), ('public:recent', 3, $2)`,
      [Date.now() - 3_700_000, Date.now() - 60_000],
      db.url,
    );
    await pruneSessionsJob.handler(a.app, {} as never, new AbortController().signal);
    const keys = await adminQuery<{ key: string }>(`select key from rate_limits where key like 'public:%'`, [], db.url);
    expect(keys.rows.map((r) => r.key)).toEqual(['public:recent']);
  });
});

async function counter(gw: TestGateway, name: string): Promise<number> {
  const metric = await gw.app.metrics.registry.getSingleMetric(name)!.get();
  return metric.values.reduce((sum, v) => sum + v.value, 0);
}
