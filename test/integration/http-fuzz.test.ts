import fc from 'fast-check';
import { print } from 'graphql';
import {
  authFuzzArbitraries,
  describeFailure,
  judgeGraphql,
  judgeRest,
  runAll as runWith,
  tally,
  type FuzzRequest,
  type Outcome,
} from '../../bench/fuzz.generators';
import { LoginDocument, MeDocument, RefreshTokenDocument, RotateApiKeyDocument } from '../generated/graphql';
import { BOOKKEEPING_TABLES, countRows } from '../support/db';
import { adminQuery } from '../support/pg-admin';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { rawHttp } from '../support/http';
import { internalContext } from '../../src/common/context';

/**
 * Generated malformed requests against the REST/auth routes and /graphql (fast-check, fixed seed so a
 * failure reproduces). Every REST answer must be the envelope with a 4xx status, GraphQL answers carry
 * `errors[].extensions.code`, nothing is 5xx, nothing leaks internals, and no row is written — but the
 * audit trail, which records each failed login (docs/security.md "Audit trail") and nothing else here.
 */

/** The audit trail is checked on its own: failed logins only. */
const SKIP = [...BOOKKEEPING_TABLES, 'audit_events'];

const SEED = 20261121;
const REST_RUNS = 360;
const GRAPHQL_RUNS = 260;
const CONCURRENCY = 8;

/** A real user exists, so generated logins also hit "right email, wrong password". */
const OWNER_EMAIL = 'fuzz-owner@merchant.test';
let gw: TestGateway;
let sandboxKey: string;

beforeAll(async () => {
  gw = await startTestGateway({ ROLE: 'api' });
  const created = await gw.app.merchants.create(internalContext(gw.app.orm.em.fork()), {
    name: 'Fuzz',
    email: OWNER_EMAIL,
    password: 'correct horse battery staple',
  });
  sandboxKey = created.apiKeys.sandbox.apiKey;
});
afterAll(() => gw?.close());

const { restRequest, graphqlRequest } = authFuzzArbitraries(
  OWNER_EMAIL,
  [LoginDocument, RefreshTokenDocument, RotateApiKeyDocument, MeDocument].map((d) => print(d)),
);

async function send(req: FuzzRequest): Promise<Outcome> {
  const res = await rawHttp(gw.url, req);
  return { req, status: res.status, text: res.text };
}

const runAll = (reqs: FuzzRequest[], judge: (o: Outcome) => string | undefined) => runWith(reqs, send, judge, CONCURRENCY);

describe('generated malformed requests', () => {
  let before: Record<string, number>;
  let auditBefore: string;
  const started = Date.now();

  beforeAll(async () => {
    before = await countRows(gw.db.url, SKIP);
    auditBefore = (await adminQuery<{ id: string }>(`select coalesce(max(id), 0)::text as id from audit_events`, [], gw.db.url)).rows[0]!.id;
    expect(Object.keys(before)).toEqual(expect.arrayContaining(['sessions', 'refresh_tokens', 'api_keys', 'merchants', 'dashboard_users']));
  });

  it(`REST and auth routes: ${REST_RUNS} requests, each a 4xx envelope`, async () => {
    const reqs = fc.sample(restRequest, { seed: SEED, numRuns: REST_RUNS });
    const { failures, all } = await runAll(reqs, judgeRest);
    expect(failures.map(describeFailure).slice(0, 15)).toEqual([]);
    // The generated requests reach every error class, not one early rejection.
    const seen = tally(all);
    console.info(`REST outcomes: ${JSON.stringify(seen)}`);
    if (process.env.FUZZ_DEBUG)
      console.info(
        all
          .filter((o) => /BAD_REQUEST/.test(o.text))
          .slice(0, 12)
          .map((o) => describeFailure({ ...o, problem: 'dbg' }))
          .join('\n'),
      );
    const statuses = new Set(all.map((o) => o.status));
    for (const s of [400, 401, 404, 405, 413, 415, 431]) expect({ status: s, seen: statuses.has(s) }).toEqual({ status: s, seen: true });
    for (const code of ['VALIDATION_FAILED', 'MALFORMED_JSON', 'INVALID_CREDENTIALS', 'INVALID_API_KEY', 'INVALID_TOKEN', 'UNAUTHENTICATED']) {
      expect(Object.keys(seen).some((k) => k.endsWith(` ${code}`))).toBe(true);
    }
  }, 60_000);

  it(`/graphql: ${GRAPHQL_RUNS} requests, errors with extensions.code, never 5xx`, async () => {
    const reqs = fc.sample(graphqlRequest, { seed: SEED + 1, numRuns: GRAPHQL_RUNS });
    const { failures, all } = await runAll(reqs, judgeGraphql);
    expect(failures.map(describeFailure).slice(0, 15)).toEqual([]);
    const seen = tally(all);
    console.info(`GraphQL outcomes: ${JSON.stringify(seen)}`);
    if (process.env.FUZZ_DEBUG)
      console.info(
        all
          .filter((o) => /BAD_REQUEST/.test(o.text))
          .slice(0, 12)
          .map((o) => describeFailure({ ...o, problem: 'dbg' }))
          .join('\n'),
      );
    const codes = new Set(Object.keys(seen).map((k) => k.split(' ')[1]));
    for (const code of [
      'GRAPHQL_PARSE_FAILED',
      'GRAPHQL_VALIDATION_FAILED',
      'BAD_USER_INPUT',
      'BAD_REQUEST',
      'MALFORMED_JSON',
      'VALIDATION_FAILED',
      'INVALID_CREDENTIALS',
      'INVALID_TOKEN',
      'UNAUTHENTICATED',
    ]) {
      expect({ code, seen: codes.has(code) }).toEqual({ code, seen: true });
    }
  }, 60_000);

  it('wrote no row anywhere but failed-login audit entries, and the gateway still works', async () => {
    expect(await countRows(gw.db.url, SKIP)).toEqual(before);
    const audit = await adminQuery<{ action: string }>(`select distinct action from audit_events where id > $1`, [auditBefore], gw.db.url);
    // The generated logins include "right email, wrong password": each is on the trail, as a failure.
    expect(audit.rows.map((r) => r.action)).toEqual(['auth.login_failed']);
    expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);
    const ok = await fetch(`${gw.url}/api/v2/testnet/merchant/me`, { headers: { 'api-key': sandboxKey } });
    expect(ok.status).toBe(200);
    expect(REST_RUNS + GRAPHQL_RUNS).toBeGreaterThanOrEqual(500);
    console.info(`fuzz: ${REST_RUNS + GRAPHQL_RUNS} requests in ${Date.now() - started} ms`);
  });
});
