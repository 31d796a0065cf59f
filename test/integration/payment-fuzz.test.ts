import fc from 'fast-check';
import { print } from 'graphql';
import { paymentFuzzArbitraries, paymentRestRequest } from '../../bench/fuzz.generators';
import { CreateDepositDocument, CreateOrderDocument, LockQuoteDocument, OrderDocument } from '../generated/graphql';
import { countRows } from '../support/db';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { rawHttp } from '../support/http';

/**
 * Generated malformed bodies for every payment-flow route (fixed seed): each answer is a 4xx envelope,
 * nothing is 5xx, and no row is written. Every generated body has every field invalid, so no request
 * can legitimately succeed.
 */
const SEED = 31337;
const RUNS = 300;
const T = '/api/v2/testnet';

let gw: TestGateway;
let m: Awaited<ReturnType<typeof createMerchant>>;
let checkoutKey: string;

beforeAll(async () => {
  gw = await startTestGateway({ ROLE: 'api' });
  m = await createMerchant(gw.app);
  const res = await rawHttp(gw.url, {
    method: 'POST',
    path: `${T}/merchant/fiat/order`,
    headers: { 'content-type': 'application/json', 'api-key': m.sandboxKey },
    body: JSON.stringify({ merchant_id: m.merchantId, order_no: 'FUZZ-1', amount: '50000' }),
  });
  checkoutKey = JSON.parse(res.text).data.key;
});
afterAll(() => gw?.close());

const { credential, request, gqlVariables: vars } = paymentFuzzArbitraries(() => m?.merchantId);

it(`${RUNS} malformed payment-flow requests → 4xx envelopes, no rows written`, async () => {
  const before = await countRows(gw.db.url);
  const reqs = fc.sample(request, { seed: SEED, numRuns: RUNS });
  const failures: string[] = [];
  const statuses: Record<number, number> = {};
  let i = 0;
  await Promise.all(
    Array.from({ length: 6 }, async () => {
      while (i < reqs.length) {
        const r = reqs[i++]!;
        const req = paymentRestRequest(r, { merchant: m.sandboxKey, checkout: checkoutKey });
        const { body } = req;
        const res = await rawHttp(gw.url, req);
        statuses[res.status] = (statuses[res.status] ?? 0) + 1;
        let env: { status_code?: number; message?: string } = {};
        try {
          env = JSON.parse(res.text);
        } catch {
          /* judged below */
        }
        if (res.status < 400 || res.status >= 500 || env.status_code !== res.status || !env.message) {
          failures.push(`${r.route} ${r.cred} ${body.slice(0, 120)} → ${res.status} ${res.text.slice(0, 200)}`);
        }
      }
    }),
  );
  expect(failures.slice(0, 10)).toEqual([]);
  console.info(`payment-flow fuzz statuses: ${JSON.stringify(statuses)}`);
  expect(Object.keys(statuses).length).toBeGreaterThanOrEqual(4);
  expect(await countRows(gw.db.url)).toEqual(before);
}, 60_000);

it('GraphQL payment operations with generated variables → errors with a code, never 5xx, no rows written', async () => {
  const docs = [CreateOrderDocument, LockQuoteDocument, CreateDepositDocument, OrderDocument].map((d) => print(d));
  const gqlRequest = fc.record({ doc: fc.constantFrom(...docs), variables: vars, cred: credential });
  const before = await countRows(gw.db.url);
  const reqs = fc.sample(gqlRequest, { seed: SEED + 7, numRuns: 200 });
  const failures: string[] = [];
  const codes: Record<string, number> = {};
  for (const r of reqs) {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (r.cred === 'merchant') headers['api-key'] = m.sandboxKey;
    if (r.cred === 'checkout') headers['x-checkout-key'] = checkoutKey;
    if (r.cred === 'garbage') headers['api-key'] = 'cpg_' + 'z'.repeat(64);
    const res = await rawHttp(gw.url, { method: 'POST', path: '/graphql', headers, body: JSON.stringify({ query: r.doc, variables: r.variables }) });
    let body: { errors?: { extensions?: { code?: string } }[] } = {};
    try {
      body = JSON.parse(res.text);
    } catch {
      /* judged below */
    }
    const code = body.errors?.[0]?.extensions?.code;
    if (res.status >= 500 || !code || code === 'INTERNAL')
      failures.push(`${r.doc.slice(0, 40)} ${JSON.stringify(r.variables).slice(0, 120)} → ${res.status} ${res.text.slice(0, 200)}`);
    if (code) codes[code] = (codes[code] ?? 0) + 1;
  }
  expect(failures.slice(0, 10)).toEqual([]);
  console.info(`payment GraphQL fuzz codes: ${JSON.stringify(codes)}`);
  expect(await countRows(gw.db.url)).toEqual(before);
}, 60_000);
