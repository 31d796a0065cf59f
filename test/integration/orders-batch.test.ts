import pg from 'pg';
import { internalContext, type RequestContext } from '../../src/common/context';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { bearer, gql } from '../support/graphql';
import { http } from '../support/http';
import {
  CreatePaymentLinkDocument,
  DashPaymentsDocument as DashPayments,
  OrdersEveryFieldDocument as OrdersEveryField,
  OrdersWithChildrenDocument as OrdersWithChildren,
  OrdersWithChildrenInDocument as OrdersWithChildrenIn,
  PaymentLinksDocument,
} from '../generated/graphql';

/*
 * The `orders` page loads its orders' quotes, deposits and payments in batches (one query per child
 * kind, per request), so the statements a page costs do not grow with its size. Counted at the
 * PostgreSQL driver, so every statement is seen: ORM queries, prepared statements, the rate limiter.
 */

const SEPOLIA_USDT = '0x7169D38820dfd117C3FA1f22a697dBA58d90BA06';

let gw: TestGateway;
let apiKey: string;
let dashboardToken: string;

beforeAll(async () => {
  // The api role runs no jobs, so the only statements during a request are the request's own. The cost
  // budget is raised so one operation may ask for 100 orders with every field of every child.
  gw = await startTestGateway({ ROLE: 'api', RATE_LIMIT_STORE: 'postgres', FALLBACK_RATE_USDT_IDR: '16250', GRAPHQL_MAX_COST: '10000' });
  const m = await createMerchant(gw.app);
  apiKey = m.sandboxKey;
  dashboardToken = (await http(gw.url, '/api/v2/auth/login', { body: { email: m.email, password: m.password, user_type: 'merchant' } })).body.data.token;
  const ctx: RequestContext = {
    ...internalContext(gw.app.orm.em.fork()),
    caller: { kind: 'apiKey', merchantId: m.merchantId, environment: 'sandbox', apiKeyId: 'test' },
    environment: 'sandbox',
  };
  const orderWithQuote = async (i: number) => {
    const c = { ...ctx, em: gw.app.orm.em.fork() };
    await gw.app.orders.create(c, { orderNo: `BATCH-${i}`, amount: '150000' });
    await gw.app.quotes.lock(c, { orderNo: `BATCH-${i}`, network: 'ETHEREUM', tokenAddress: SEPOLIA_USDT });
  };
  for (let i = 0; i < 100; i += 10) await Promise.all(Array.from({ length: 10 }, (_, k) => orderWithQuote(i + k)));
  // One deposit through the service; the other 99 are copies of its row (each with its own order,
  // quote, index, address and code) made in one statement: deriving 100 addresses would be most of this
  // test's time, and the page only reads the rows.
  await gw.app.deposits.create(ctx, { orderNo: 'BATCH-0', network: 'ETHEREUM', tokenAddress: SEPOLIA_USDT, walletType: 'METAMASK' });
  await gw.app.orm.em.fork().execute(
    `insert into deposits
     select (jsonb_populate_record(null::deposits, to_jsonb(d) || jsonb_build_object(
               'id', gen_random_uuid(), 'order_id', q.order_id, 'quote_id', q.id,
               'derivation_index', d.derivation_index + q.n, 'unique_code', (d.unique_code + q.n - 1) % 999 + 1,
               'address', '0x' || lpad(to_hex(q.n), 40, '0'), 'watch_address', case when d.watch_address is null then null else '0x' || lpad(to_hex(q.n), 40, '0') end))).*
     from deposits d
     join orders o on o.id = d.order_id and o.merchant_id = ?
     cross join (select q.id, q.order_id, row_number() over (order by q.order_id) as n
                 from quotes q join orders o2 on o2.id = q.order_id
                 where o2.merchant_id = ? and not exists (select 1 from deposits x where x.order_id = q.order_id)) q`,
    [m.merchantId, m.merchantId],
  );
  // A transfer seen into each deposit, as a chain watcher records it.
  await gw.app.orm.em.fork().execute(
    `insert into payments (id, environment, network, tx_hash, log_index, block_number, block_hash, token_id, deposit_id, order_id, from_address, to_address, amount)
     select gen_random_uuid(), d.environment, d.network, '0x' || md5(d.id::text) || md5(d.order_id::text), 0, 1, '0x' || repeat('ab', 32), d.token_id, d.id, d.order_id,
            '0x' || repeat('11', 20), d.address, d.total_amount
     from deposits d join orders o on o.id = d.order_id where o.merchant_id = ?`,
    [m.merchantId],
  );
  // 100 payment links: one through the API, 99 copies of its row.
  const link = await gql(
    gw.url,
    CreatePaymentLinkDocument,
    { environment: 'SANDBOX', input: { title: 'Batch', expirationTime: 3600, maxUsage: 5, products: [{ name: 'Kopi', price: '50000', quantity: 1 }] } },
    bearer(dashboardToken),
  );
  expect(link.errors).toBeUndefined();
  await gw.app.orm.em.fork().execute(
    `insert into payment_links
     select (jsonb_populate_record(null::payment_links, to_jsonb(l) || jsonb_build_object('id', gen_random_uuid(), 'created_at', l.created_at - n * interval '1 second'))).*
     from payment_links l cross join generate_series(1, 99) n where l.id = ?`,
    [link.data!.createPaymentLink.id],
  );
}, 240_000);

afterAll(async () => gw?.close());

/** Statements sent to PostgreSQL by anything in this process while `fn` runs. */
async function countStatements<T>(fn: () => Promise<T>): Promise<{ result: T; statements: number }> {
  const original = pg.Client.prototype.query;
  let statements = 0;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    statements += 1;
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof original;
  try {
    return { result: await fn(), statements };
  } finally {
    pg.Client.prototype.query = original;
  }
}

it('a 100-order page with quotes, deposits and payments costs the same few statements as a 10-order page', async () => {
  // Warm up: the first request of a key fills the API-key cache and prepares statements.
  await gql(gw.url, OrdersWithChildren, { first: 1 }, { 'api-key': apiKey });
  const small = await countStatements(() => gql(gw.url, OrdersWithChildren, { first: 10 }, { 'api-key': apiKey }));
  const large = await countStatements(() => gql(gw.url, OrdersWithChildren, { first: 100 }, { 'api-key': apiKey }));

  expect(large.result.errors).toBeUndefined();
  const nodes = large.result.data!.orders.nodes;
  expect(nodes).toHaveLength(100);
  for (const n of nodes) {
    expect(n.quotes).toHaveLength(1);
    expect(n.deposits).toHaveLength(1);
    expect(n.payments).toHaveLength(1);
    expect(n.payments[0]!.amount).toBe(n.deposits[0]!.totalAmount);
  }
  expect(small.result.data!.orders.nodes).toHaveLength(10);

  // The rate limiter, the id page, the orders, then one query per child kind (6), the total count
  // (7), the paying tokens (8, when a page has paid orders), plus at most a pool connection check.
  // Loading per order would cost 3 more statements per order (300+ here).
  expect(small.statements).toBeLessThanOrEqual(9);
  expect(large.statements).toBeLessThanOrEqual(9);
  expect(large.result.data!.orders.totalCount).toBe(100);
});

it('a dashboard names the environment of the page (EnvironmentArg); without one it gets VALIDATION_FAILED and no data', async () => {
  const missing = await gql(gw.url, OrdersWithChildren, { first: 5 }, bearer(dashboardToken));
  expect(missing.data).toBeNull();
  expect(missing.errors?.[0]).toMatchObject({ message: 'environment is required for dashboard calls', extensions: { code: 'VALIDATION_FAILED' } });

  const sandbox = await gql(gw.url, OrdersWithChildrenIn, { first: 5, environment: 'SANDBOX' }, bearer(dashboardToken));
  expect(sandbox.data?.orders.nodes).toHaveLength(5);
  const production = await gql(gw.url, OrdersWithChildrenIn, { first: 5, environment: 'PRODUCTION' }, bearer(dashboardToken));
  expect(production.data?.orders.nodes).toEqual([]);
  // An API key keeps its own environment whatever the argument says.
  const key = await gql(gw.url, OrdersWithChildrenIn, { first: 5, environment: 'PRODUCTION' }, { 'api-key': apiKey });
  expect(key.data?.orders.nodes).toHaveLength(5);
});

it('a 100-order page with EVERY field of the order and its children costs the same few statements as a 10-order page', async () => {
  await gql(gw.url, OrdersEveryField, { first: 1 }, { 'api-key': apiKey });
  const small = await countStatements(() => gql(gw.url, OrdersEveryField, { first: 10 }, { 'api-key': apiKey }));
  const large = await countStatements(() => gql(gw.url, OrdersEveryField, { first: 100 }, { 'api-key': apiKey }));
  expect(large.result.errors).toBeUndefined();
  const nodes = large.result.data!.orders.edges.map((e) => e.node);
  expect(nodes).toHaveLength(100);
  for (const n of nodes) {
    expect(n.quotes[0]!.fees.length).toBeGreaterThan(0);
    expect(n.deposits).toHaveLength(1);
    expect(n.payments[0]).toMatchObject({ orderNo: n.orderNo, amount: n.deposits[0]!.totalAmount });
    expect(n.unattributedReceipts).toEqual([]);
  }
  // As above, plus one statement for the unattributed receipts (the fourth child kind).
  expect(small.statements).toBeLessThanOrEqual(10);
  expect(large.statements).toBeLessThanOrEqual(10);
});

it('a 100-payment page (token and order of each) and a 100-link page cost the same few statements as 10-row pages', async () => {
  await gql(gw.url, DashPayments, { first: 1 }, { 'api-key': apiKey });
  const small = await countStatements(() => gql(gw.url, DashPayments, { first: 10 }, { 'api-key': apiKey }));
  const large = await countStatements(() => gql(gw.url, DashPayments, { first: 100 }, { 'api-key': apiKey }));
  expect(large.result.errors).toBeUndefined();
  const payments = large.result.data!.payments;
  expect(payments.totalCount).toBe(100);
  expect(new Set(payments.edges.map((e) => e.node.orderNo)).size).toBe(100);
  expect(payments.edges.every((e) => e.node.tokenSymbol === 'USDT')).toBe(true);
  // Rate limiter, the id page, the payments with their tokens and orders, the count, a pool check.
  expect(small.statements).toBeLessThanOrEqual(6);
  expect(large.statements).toBeLessThanOrEqual(6);

  const dash = bearer(dashboardToken);
  await gql(gw.url, PaymentLinksDocument, { environment: 'SANDBOX', first: 1 }, dash);
  const smallLinks = await countStatements(() => gql(gw.url, PaymentLinksDocument, { environment: 'SANDBOX', first: 10 }, dash));
  const largeLinks = await countStatements(() => gql(gw.url, PaymentLinksDocument, { environment: 'SANDBOX', first: 100 }, dash));
  expect(largeLinks.result.errors).toBeUndefined();
  expect(largeLinks.result.data!.paymentLinks.edges).toHaveLength(100);
  expect(largeLinks.result.data!.paymentLinks.totalCount).toBe(100);
  expect(largeLinks.statements).toBeLessThanOrEqual(smallLinks.statements);
  expect(largeLinks.statements).toBeLessThanOrEqual(8);
});
