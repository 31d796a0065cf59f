import fc from 'fast-check';
import { print } from 'graphql';
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
  const res = await rawHttp(gw.url, { method: 'POST', path: `${T}/merchant/fiat/order`, headers: { 'content-type': 'application/json', 'api-key': m.sandboxKey }, body: JSON.stringify({ merchant_id: m.merchantId, order_no: 'FUZZ-1', amount: '50000' }) });
  checkoutKey = JSON.parse(res.text).data.key;
});
afterAll(() => gw?.close());

const junk = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 30 }),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 2 }),
  fc.constantFrom('', ' ', '0', '-1', '1.5', '1e9', 'NaN', "' or 1=1 --", 'A'.repeat(5000), '\u0000', '😀'.repeat(50), '0x' + 'g'.repeat(40)),
);
const badMerchant = fc.oneof(junk, fc.uuid().filter((u) => u !== m?.merchantId));
const badAmount = fc.oneof(junk, fc.constantFrom('0', '-5', '00', '1.0', '999', '1000000000000000000000', ' 5000', '5000 '));
const badOrderNo = fc.oneof(junk, fc.constantFrom('has space', 'x'.repeat(65), '\u00e9t\u00e9', 'tab\t'));
const badNetwork = fc.oneof(junk, fc.constantFrom('ethereum', 'POLYGON', 'BTC', 'ETHEREUM ', 'SOL'));
const badWallet = fc.oneof(junk, fc.constantFrom('metamask', 'LEDGER', 'TRUST'));
const badToken = fc.oneof(junk, fc.constantFrom('0x123', 'T'.repeat(34), 'not-an-address'));

const bodies: Record<string, fc.Arbitrary<unknown>> = {
  '/merchant/fiat/order': fc.record({ merchant_id: badMerchant, order_no: badOrderNo, amount: badAmount, name: junk, email: junk }, { requiredKeys: ['amount'] }),
  '/merchant/fiat/checkOrderRate': fc.record({ merchant_id: badMerchant, transactionID: badOrderNo, tokenAddress: badToken, network: badNetwork }, { requiredKeys: ['network'] }),
  '/pgqr/fiat/create': fc.record({ merchant_id: badMerchant, transactionID: badOrderNo, tokenAddress: badToken, network: badNetwork, walletType: badWallet }, { requiredKeys: ['walletType'] }),
  '/merchant/fiat/getOrder': fc.record({ merchant_id: badMerchant, order_no: badOrderNo }, { requiredKeys: ['order_no'] }),
};
const encoded = fc.oneof(
  { weight: 8, arbitrary: fc.constant('json') },
  { weight: 1, arbitrary: fc.constant('truncated') },
  { weight: 1, arbitrary: fc.constant('text') },
);
const credential = fc.constantFrom('merchant', 'checkout', 'none', 'garbage');

const request = fc.record({ route: fc.constantFrom(...Object.keys(bodies)), how: encoded, cred: credential, seed: fc.nat() }).chain(({ route, how, cred }) =>
  bodies[route]!.map((b) => ({ route, how, cred, body: b })),
);

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
        const json = JSON.stringify(r.body);
        const body = r.how === 'truncated' ? json.slice(0, Math.max(1, json.length - 3)) : json;
        const headers: Record<string, string> = { 'content-type': r.how === 'text' ? 'text/plain' : 'application/json' };
        if (r.cred === 'merchant') headers['api-key'] = m.sandboxKey;
        if (r.cred === 'checkout') headers['api-key'] = checkoutKey;
        if (r.cred === 'garbage') headers['api-key'] = 'cpg_' + 'z'.repeat(64);
        const res = await rawHttp(gw.url, { method: 'POST', path: T + r.route, headers, body });
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
  const vars = fc.record(
    {
      input: fc.oneof(junk, fc.record({ orderNo: badOrderNo, amount: badAmount, name: junk, email: junk }, { requiredKeys: [] })),
      orderNo: fc.oneof(badOrderNo, fc.constant('NOPE-404')),
      tokenAddress: badToken,
      network: badNetwork,
      walletType: badWallet,
      environment: junk,
    },
    { requiredKeys: [] },
  );
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
    if (res.status >= 500 || !code || code === 'INTERNAL') failures.push(`${r.doc.slice(0, 40)} ${JSON.stringify(r.variables).slice(0, 120)} → ${res.status} ${res.text.slice(0, 200)}`);
    if (code) codes[code] = (codes[code] ?? 0) + 1;
  }
  expect(failures.slice(0, 10)).toEqual([]);
  console.info(`payment GraphQL fuzz codes: ${JSON.stringify(codes)}`);
  expect(await countRows(gw.db.url)).toEqual(before);
}, 60_000);
