import { print } from 'graphql';
import { internalContext, type RequestContext } from '../../src/common/context';
import {
  CreatePaymentLinkDocument,
  DashOrdersDocument as DashOrders,
  DashOrdersFilteredDocument as DashOrdersFiltered,
  type DashOrdersFilteredQueryVariables,
  OpenPaymentLinkDocument,
  DashOrderStatsDocument as DashOrderStats,
  DashPaymentsDocument as DashPayments,
  type DashPaymentsQueryVariables,
  DashWebhookDeliveriesDocument as DashWebhookDeliveries,
  MerchantEventsDocument,
  type MerchantEventsSubscription,
} from '../generated/graphql';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { bearer, gql, wsClient } from '../support/graphql';
import { http } from '../support/http';

/*
 * Dashboards over GraphQL: the orders connection (filters on the PAYING deposit, sort, opaque
 * cursors, totalCount), orderStats computed by PostgreSQL, and the merchantEvents live feed with
 * its authorisation (dashboard JWT or API key, never another merchant's).
 */

const SEPOLIA_USDT = '0x7169D38820dfd117C3FA1f22a697dBA58d90BA06';
const BSC_USDT = '0x337610d27c682E347C9cD60BD4b3b107C9d34dDd';

let gw: TestGateway;
let m: Awaited<ReturnType<typeof createMerchant>>;
let other: Awaited<ReturnType<typeof createMerchant>>;
let token: string;
let otherToken: string;

const key = () => ({ 'api-key': m.sandboxKey });
const ctxOf = (merchantId: string): RequestContext => ({
  ...internalContext(gw.app.orm.em.fork()),
  caller: { kind: 'apiKey', merchantId, environment: 'sandbox', apiKeyId: 'test' },
  environment: 'sandbox',
});
const login = async (mm: typeof m) =>
  (await http(gw.url, '/api/v2/auth/login', { body: { email: mm.email, password: mm.password, user_type: 'merchant' } })).body.data.token as string;

/** An order paid through `network`/`tokenAddress` after a deposit on another network: settled by the settlement service from a confirmed payment. */
async function paidOrder(
  orderNo: string,
  amount: string,
  pay: { network: 'ETHEREUM' | 'BINANCE'; tokenAddress: string },
  alsoDeposit?: { network: 'ETHEREUM' | 'BINANCE'; tokenAddress: string },
) {
  const ctx = ctxOf(m.merchantId);
  const { order } = await gw.app.orders.create(ctx, { orderNo, amount });
  for (const d of [alsoDeposit, pay]) {
    if (!d) continue;
    await gw.app.quotes.lock({ ...ctx, em: gw.app.orm.em.fork() }, { orderNo, network: d.network, tokenAddress: d.tokenAddress });
    await gw.app.deposits.create({ ...ctx, em: gw.app.orm.em.fork() }, { orderNo, network: d.network, tokenAddress: d.tokenAddress, walletType: 'METAMASK' });
  }
  await gw.app.orm.em.fork().execute(
    `insert into payments (id, environment, network, tx_hash, log_index, block_number, block_hash, token_id, deposit_id, order_id, from_address, to_address, amount, status, confirmed_at)
     select gen_random_uuid(), d.environment, d.network, '0x' || md5(d.id::text) || md5(d.order_id::text), 0, 1, '0x' || repeat('ab', 32), d.token_id, d.id, d.order_id,
            '0x' || repeat('11', 20), d.address, d.total_amount, 'confirmed', now()
     from deposits d where d.order_id = ? and d.network = ?`,
    [order.id, pay.network],
  );
  expect(await gw.app.settlement.settle(gw.app.orm.em.fork(), order.id)).toBe('Success');
  return order;
}

beforeAll(async () => {
  gw = await startTestGateway({ ROLE: 'api', FALLBACK_RATE_USDT_IDR: '16250' });
  m = await createMerchant(gw.app);
  other = await createMerchant(gw.app);
  token = await login(m);
  otherToken = await login(other);
  // Paid on BSC after an unpaid Ethereum deposit; paid on Ethereum; three unpaid with searchable customers.
  await paidOrder('DASH-BSC-1', '200000', { network: 'BINANCE', tokenAddress: BSC_USDT }, { network: 'ETHEREUM', tokenAddress: SEPOLIA_USDT });
  await paidOrder('DASH-ETH-1', '150000', { network: 'ETHEREUM', tokenAddress: SEPOLIA_USDT });
  for (const [i, name] of ['Budi Santoso', 'Siti Rahma', 'Agus 100%_x'].entries()) {
    await gw.app.orders.create(ctxOf(m.merchantId), {
      orderNo: `DASH-OPEN-${i}`,
      amount: String(100000 + i),
      customerName: name,
      customerEmail: `c${i}@shop.example`,
    });
  }
  await gw.app.orders.create(ctxOf(other.merchantId), { orderNo: 'OTHER-1', amount: '999999' });
}, 240_000);

afterAll(async () => gw?.close());

describe('orders connection', () => {
  it('filters by the network and token that PAID the order, not any deposit it had; paid facts are on the node', async () => {
    const eth = await gql(gw.url, DashOrders, { network: 'ETHEREUM' }, key());
    expect(eth.errors).toBeUndefined();
    expect(eth.data!.orders.edges.map((e) => e.node.orderNo)).toEqual(['DASH-ETH-1']);
    expect(eth.data!.orders.totalCount).toBe(1);
    const bsc = await gql(gw.url, DashOrders, { tokenAddress: BSC_USDT.toLowerCase() }, key());
    const node = bsc.data!.orders.edges.map((e) => e.node);
    expect(node).toHaveLength(1);
    expect(node[0]).toMatchObject({
      orderNo: 'DASH-BSC-1',
      status: 'Success',
      paidNetwork: 'BINANCE',
      paidTokenAddress: BSC_USDT,
      paidTokenSymbol: 'USDT',
      overpaid: false,
      late: false,
    });
    // Fee included by default: net = amount − fee; token units as a decimal string.
    expect(BigInt(node[0]!.fee!)).toBeGreaterThan(0n);
    expect(BigInt(node[0]!.netAmount!)).toBe(200000n - BigInt(node[0]!.fee!));
    expect(node[0]!.paidAmount).toMatch(/^\d+\.\d+$/);
    expect(Number.isNaN(Date.parse(node[0]!.paidAt!))).toBe(false);
    expect(node[0]!.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
  });

  it('several statuses at once, search (order number prefix, name, email; wildcards literal), sort by amount', async () => {
    const open = await gql(gw.url, DashOrders, { statuses: ['Created', 'Processing'] }, key());
    expect(open.data!.orders.totalCount).toBe(3);
    const both = await gql(gw.url, DashOrders, { statuses: ['Created', 'Success'] }, key());
    expect(both.data!.orders.totalCount).toBe(5);
    const search = async (s: string) => (await gql(gw.url, DashOrders, { search: s }, key())).data!.orders.edges.map((e) => e.node.orderNo).sort();
    expect(await search('DASH-OPEN')).toEqual(['DASH-OPEN-0', 'DASH-OPEN-1', 'DASH-OPEN-2']);
    expect(await search('siti')).toEqual(['DASH-OPEN-1']);
    expect(await search('c0@shop')).toEqual(['DASH-OPEN-0']);
    expect(await search('100%_')).toEqual(['DASH-OPEN-2']);
    expect(await search('%')).toEqual(['DASH-OPEN-2']);
    expect(await search('OTHER')).toEqual([]); // another merchant's order is never found
    const byAmount = await gql(gw.url, DashOrders, { sort: 'AMOUNT', direction: 'ASC' }, key());
    expect(byAmount.data!.orders.edges.map((e) => e.node.amount)).toEqual(['100000', '100001', '100002', '150000', '200000']);
    const byPaid = await gql(gw.url, DashOrders, { sort: 'PAID_AT' }, key());
    expect(byPaid.data!.orders.edges.map((e) => e.node.orderNo)).toEqual(['DASH-ETH-1', 'DASH-BSC-1']);
  });

  it('pages with opaque cursors: every order once, for each sort; garbage or foreign cursors are BAD_USER_INPUT', async () => {
    for (const sort of ['CREATED_AT', 'AMOUNT'] as const) {
      const seen: string[] = [];
      let after: string | null | undefined;
      let pages = 0;
      do {
        const page = await gql(gw.url, DashOrders, { first: 2, after, sort }, key());
        expect(page.errors).toBeUndefined();
        seen.push(...page.data!.orders.edges.map((e) => e.node.orderNo));
        expect(page.data!.orders.pageInfo.hasPreviousPage).toBe(Boolean(after));
        after = page.data!.orders.pageInfo.hasNextPage ? page.data!.orders.pageInfo.endCursor : null;
        pages += 1;
      } while (after);
      expect(pages).toBe(3);
      expect(new Set(seen).size).toBe(5);
    }
    const first = await gql(gw.url, DashOrders, { first: 1 }, key());
    const cursor = first.data!.orders.pageInfo.endCursor!;
    for (const bad of ['garbage', '!!', Buffer.from('["orders:CREATED_AT:DESC","x","y"]').toString('base64url'), 'A'.repeat(400)]) {
      const r = await gql(gw.url, DashOrders, { after: bad }, key());
      expect(r.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    }
    // A cursor of another sort is refused rather than misread.
    const wrongSort = await gql(gw.url, DashOrders, { after: cursor, sort: 'AMOUNT' }, key());
    expect(wrongSort.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });
});

describe('payments connection', () => {
  it('lists the merchant environment’s payments newest first with their order; filters by network, token, status, detection time', async () => {
    const all = await gql(gw.url, DashPayments, {}, key());
    expect(all.errors).toBeUndefined();
    const nodes = all.data!.payments.edges.map((e) => e.node);
    expect(nodes.map((n) => n.orderNo).sort()).toEqual(['DASH-BSC-1', 'DASH-ETH-1']);
    expect(all.data!.payments.totalCount).toBe(2);
    expect(nodes[0]!.orderNo).toBe('DASH-ETH-1'); // detected last
    expect(nodes[0]).toMatchObject({
      network: 'ETHEREUM',
      tokenAddress: SEPOLIA_USDT,
      tokenSymbol: 'USDT',
      status: 'confirmed',
      late: false,
      logIndex: 0,
      blockNumber: '1',
    });
    expect(nodes[0]!.amount).toMatch(/^\d+\.\d+$/);
    expect(nodes[0]!.detectedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
    expect(nodes[0]!.txHash).toMatch(/^0x[0-9a-f]{64}$/);
    // the sandbox on the public testnets (no DEV_CHAINS) links their explorers, from the chain registry
    expect(nodes[0]!.explorerUrl).toBe(`https://sepolia.etherscan.io/tx/${nodes[0]!.txHash}`);

    const orderNos = async (vars: DashPaymentsQueryVariables) => {
      const r = await gql(gw.url, DashPayments, vars, key());
      expect(r.errors).toBeUndefined();
      return r.data!.payments.edges.map((e) => e.node.orderNo);
    };
    expect(await orderNos({ network: 'BINANCE' })).toEqual(['DASH-BSC-1']);
    expect(await orderNos({ tokenAddress: SEPOLIA_USDT.toLowerCase() })).toEqual(['DASH-ETH-1']);
    expect(await orderNos({ statuses: ['PENDING', 'ORPHANED'] })).toEqual([]);
    expect((await orderNos({ statuses: ['CONFIRMED'] })).sort()).toEqual(['DASH-BSC-1', 'DASH-ETH-1']);
    const future = new Date(Date.now() + 3_600_000).toISOString();
    expect(await orderNos({ detectedFrom: future })).toEqual([]);
    expect((await orderNos({ detectedTo: future })).sort()).toEqual(['DASH-BSC-1', 'DASH-ETH-1']);
    const backwards = await gql(gw.url, DashPayments, { detectedFrom: future, detectedTo: new Date(0).toISOString() }, key());
    expect(backwards.errors?.[0]?.extensions?.code).toBe('VALIDATION_FAILED');
    expect(backwards.data).toBeNull();
  });

  it('pages with cursors; the dashboard sees the same, the other merchant and production nothing; foreign cursors are BAD_USER_INPUT', async () => {
    const first = await gql(gw.url, DashPayments, { first: 1 }, key());
    expect(first.data!.payments.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: false });
    const second = await gql(gw.url, DashPayments, { first: 1, after: first.data!.payments.pageInfo.endCursor }, key());
    expect(second.data!.payments.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: true });
    expect([...first.data!.payments.edges, ...second.data!.payments.edges].map((e) => e.node.orderNo)).toEqual(['DASH-ETH-1', 'DASH-BSC-1']);

    const dash = await gql(gw.url, DashPayments, { environment: 'SANDBOX' }, bearer(token));
    expect(dash.data!.payments.totalCount).toBe(2);
    expect((await gql(gw.url, DashPayments, { environment: 'PRODUCTION' }, bearer(token))).data!.payments).toMatchObject({ totalCount: 0, edges: [] });
    expect((await gql(gw.url, DashPayments, { environment: 'SANDBOX' }, bearer(otherToken))).data!.payments).toMatchObject({ totalCount: 0, edges: [] });
    expect((await gql(gw.url, DashPayments, {}, { 'api-key': other.sandboxKey })).data!.payments.edges).toEqual([]);
    expect((await gql(gw.url, DashPayments, {}, {})).errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    expect((await gql(gw.url, DashPayments, {}, bearer(token))).errors?.[0]?.extensions?.code).toBe('VALIDATION_FAILED');

    const orderCursor = (await gql(gw.url, DashOrders, { first: 1 }, key())).data!.orders.pageInfo.endCursor;
    for (const after of [orderCursor, 'garbage', Buffer.from('["payments","x","y"]').toString('base64url')]) {
      expect((await gql(gw.url, DashPayments, { after }, key())).errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    }
    expect((await gql(gw.url, DashPayments, { first: 101 }, key())).errors?.[0]?.extensions?.code).toBe('VALIDATION_FAILED');
  });
});

describe('webhookDeliveries connection', () => {
  it('has totalCount like every connection (all pages, this merchant and environment only)', async () => {
    // Three queued deliveries (the api role runs no webhook worker, so they stay queued).
    await gw.app.orm.em.fork().execute(
      `insert into webhook_deliveries (id, merchant_id, environment, event, idempotency_key, url, endpoint, payload, max_attempts)
       select gen_random_uuid(), ?, 'sandbox', 'webhook.test', 'count-' || n, 'https://shop.example/hook', 'shop.example', '{}', 1 from generate_series(1, 3) n`,
      [m.merchantId],
    );
    const r = await gql(gw.url, DashWebhookDeliveries, { environment: 'SANDBOX', first: 1 }, bearer(token));
    expect(r.errors).toBeUndefined();
    const n = await gw.app.orm.em
      .fork()
      .execute<{ n: string }[]>(`select count(*) as n from webhook_deliveries where merchant_id = ? and environment = 'sandbox'`, [m.merchantId]);
    expect(Number(n[0]!.n)).toBeGreaterThanOrEqual(3);
    expect(r.data!.webhookDeliveries.totalCount).toBe(Number(n[0]!.n));
    expect(r.data!.webhookDeliveries.edges).toHaveLength(1);
    expect(r.data!.webhookDeliveries.pageInfo.hasNextPage).toBe(true);
    expect((await gql(gw.url, DashWebhookDeliveries, { environment: 'PRODUCTION' }, bearer(token))).data!.webhookDeliveries.totalCount).toBe(0);
    expect((await gql(gw.url, DashWebhookDeliveries, { environment: 'SANDBOX' }, bearer(otherToken))).data!.webhookDeliveries.totalCount).toBe(0);
  });
});

describe('orderStats', () => {
  const from = new Date(Date.now() - 86_400_000).toISOString();
  const to = new Date(Date.now() + 86_400_000).toISOString();

  it('sums per day (Asia/Jakarta), per paying network and token, in SQL', async () => {
    const all = await gql(gw.url, DashOrderStats, { from, to }, key());
    expect(all.errors).toBeUndefined();
    expect(all.data!.orderStats).toHaveLength(1);
    const total = all.data!.orderStats[0]!;
    expect(total).toMatchObject({ count: 5, amount: String(200000 + 150000 + 100000 + 100001 + 100002), paidCount: 2, paidAmount: '350000' });
    expect(total.tokenAmounts.map((t) => `${t.network}:${t.tokenSymbol}`).sort()).toEqual(['BINANCE:USDT', 'ETHEREUM:USDT']);

    const byDay = await gql(gw.url, DashOrderStats, { from, to, groupBy: ['DAY'] }, key());
    const jakartaToday = new Intl.DateTimeFormat('en-CA', { timeZone: 'Asia/Jakarta' }).format(new Date());
    expect(byDay.data!.orderStats.map((b) => b.day)).toContain(jakartaToday);
    expect(byDay.data!.orderStats.reduce((n, b) => n + b.count, 0)).toBe(5);

    const byNetwork = await gql(gw.url, DashOrderStats, { from, to, groupBy: ['NETWORK', 'TOKEN'] }, key());
    const bsc = byNetwork.data!.orderStats.find((b) => b.network === 'BINANCE')!;
    expect(bsc).toMatchObject({ tokenAddress: BSC_USDT, tokenSymbol: 'USDT', count: 1, paidCount: 1, paidAmount: '200000' });
    expect(BigInt(bsc.netAmount) + BigInt(bsc.fee)).toBe(200000n);
    expect(bsc.tokenAmounts).toHaveLength(1);
    const unpaid = byNetwork.data!.orderStats.find((b) => b.network === null)!;
    expect(unpaid).toMatchObject({ count: 3, paidCount: 0, tokenAmounts: [] });

    const byStatus = await gql(gw.url, DashOrderStats, { from, to, groupBy: ['STATUS'] }, key());
    expect(Object.fromEntries(byStatus.data!.orderStats.map((b) => [b.status, b.count]))).toEqual({ Created: 3, Success: 2 });
    const byHour = await gql(gw.url, DashOrderStats, { from, to, groupBy: ['HOUR'], timeZone: 'UTC' }, key());
    expect(byHour.errors).toBeUndefined();
    for (const b of byHour.data!.orderStats) expect(b.hour).toMatch(/T\d\d:00:00(\.000)?Z$/);
  });

  it('refuses an unknown time zone and a range over the bound with BAD_USER_INPUT; another merchant sees only its own', async () => {
    const tz = await gql(gw.url, DashOrderStats, { from, to, timeZone: "Asia/Jakarta'; drop table orders; --" }, key());
    expect(tz.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    const long = await gql(gw.url, DashOrderStats, { from: '2020-01-01T00:00:00Z', to }, key());
    expect(long.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    const hours = await gql(gw.url, DashOrderStats, { from: new Date(Date.now() - 40 * 86_400_000).toISOString(), to, groupBy: ['HOUR'] }, key());
    expect(hours.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    const theirs = await gql(gw.url, DashOrderStats, { from, to, environment: 'SANDBOX' }, bearer(otherToken));
    expect(theirs.data!.orderStats).toEqual([expect.objectContaining({ count: 1, amount: '999999', paidCount: 0 })]);
  });
});

describe('order_stats_rollup', () => {
  it('follows every transition (out of the old bucket, into the new): stats equal a direct count of the orders', async () => {
    const third = await createMerchant(gw.app);
    const ctx = ctxOf(third.merchantId);
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push((await gw.app.orders.create(ctx, { orderNo: `ROLL-${i}`, amount: String(110000 + i) })).order.id);
    const move = (id: string, to: 'Processing' | 'Expired' | 'Underpaid' | 'Success' | 'Created') =>
      gw.app.orm.em.fork().transactional((em) => gw.app.orderStatus.transition(em, id, to, { kind: 'test' }));
    await move(ids[0]!, 'Expired');
    await move(ids[0]!, 'Underpaid');
    await move(ids[0]!, 'Success');
    await move(ids[1]!, 'Processing');
    await move(ids[1]!, 'Created');
    await move(ids[2]!, 'Expired');
    await move(ids[3]!, 'Processing');
    const keyOf = { 'api-key': third.sandboxKey };
    const from = new Date(Date.now() - 86_400_000).toISOString();
    const to = new Date(Date.now() + 86_400_000).toISOString();
    const stats = await gql(gw.url, DashOrderStats, { from, to, groupBy: ['STATUS'] }, keyOf);
    const direct = await gw.app.orm.em
      .fork()
      .execute<{ status: string; n: string; amount: string }[]>(
        'select status, count(*) as n, sum(amount)::text as amount from orders where merchant_id = ? group by status',
        [third.merchantId],
      );
    const asMap = (rows: { status: string | null; n: number; amount: string }[]) => Object.fromEntries(rows.map((r) => [r.status, `${r.n}:${r.amount}`]));
    expect(asMap(stats.data!.orderStats.map((b) => ({ status: b.status, n: b.count, amount: b.amount })))).toEqual(
      asMap(direct.map((r) => ({ ...r, n: Number(r.n) }))),
    );
    expect(asMap(stats.data!.orderStats.map((b) => ({ status: b.status, n: b.count, amount: b.amount })))).toEqual({
      Success: '1:110000',
      Created: '1:110001',
      Expired: '1:110002',
      Processing: '1:110003',
    });
    // Nothing double-counted: the rollup and the deltas not folded yet add up to the closed orders, and so does the rollup after compaction.
    const rolled = async () =>
      (
        await gw.app.orm.em
          .fork()
          .execute<{ n: string }[]>(
            `select ((select coalesce(sum(orders), 0) from order_stats_rollup where merchant_id = ?) + (select coalesce(sum(orders), 0) from order_stats_delta where merchant_id = ?))::text as n`,
            [third.merchantId, third.merchantId],
          )
      )[0]!.n;
    expect(await rolled()).toBe('2');
    await gw.app.orderStats.compact(gw.app.orm.em.fork());
    expect(await rolled()).toBe('2');
  });
});

describe('overpayment', () => {
  it('an extra transfer to the paying deposit flags the order, raises its paid units and the rollup alike', async () => {
    const o = await paidOrder('DASH-OVER-1', '130000', { network: 'ETHEREUM', tokenAddress: SEPOLIA_USDT });
    const before = (await gql(gw.url, DashOrders, { search: 'DASH-OVER-1' }, key())).data!.orders.edges[0]!.node;
    await gw.app.orm.em.fork().execute(
      `insert into payments (id, environment, network, tx_hash, log_index, block_number, block_hash, token_id, deposit_id, order_id, from_address, to_address, amount, status, confirmed_at)
       select gen_random_uuid(), d.environment, d.network, '0x' || md5(d.id::text || 'extra') || md5(d.order_id::text), 1, 2, '0x' || repeat('cd', 32), d.token_id, d.id, d.order_id,
              '0x' || repeat('11', 20), d.address, 1000000, 'confirmed', now()
       from deposits d where d.order_id = ?`,
      [o.id],
    );
    expect(await gw.app.settlement.settle(gw.app.orm.em.fork(), o.id)).toBe('Success');
    const after = (await gql(gw.url, DashOrders, { search: 'DASH-OVER-1' }, key())).data!.orders.edges[0]!.node;
    expect(after.overpaid).toBe(true);
    expect(Number(after.paidAmount) - Number(before.paidAmount)).toBeCloseTo(1, 6); // 1,000,000 base units of a 6-decimal token
    const [sums] = await gw.app.orm.em.fork().execute<{ rolled: string; direct: string }[]>(
      `select ((select coalesce(sum(paid_units), 0) from order_stats_rollup where merchant_id = ?) + (select coalesce(sum(paid_units), 0) from order_stats_delta where merchant_id = ?))::text as rolled,
              (select sum(paid_amount)::text from orders where merchant_id = ? and status not in ('Created','Processing')) as direct`,
      [m.merchantId, m.merchantId, m.merchantId],
    );
    expect(sums!.rolled).toBe(sums!.direct);
  });
});

describe('merchantEvents feed', () => {
  type Ev = MerchantEventsSubscription['merchantEvents'];
  function listen(params: Record<string, unknown>, environment?: 'SANDBOX' | 'PRODUCTION') {
    const client = wsClient(gw.url, params);
    const feed = { got: [] as Ev[], errors: [] as unknown[], close: async () => (stop(), await client.dispose()) };
    const stop = client.subscribe<MerchantEventsSubscription>(
      { query: print(MerchantEventsDocument), variables: environment ? { environment } : {} },
      {
        next: (v) => (v.errors ? feed.errors.push(...v.errors) : v.data && feed.got.push(v.data.merchantEvents)),
        error: (e) => feed.errors.push(e),
        complete: () => undefined,
      },
    );
    return feed;
  }
  const until = async (ok: () => boolean, what: string) => {
    const deadline = Date.now() + 10_000;
    while (!ok()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  };

  it("delivers the merchant's own events to its dashboard JWT and API key, never another merchant's", async () => {
    const dash = listen({ authorization: `Bearer ${token}` }, 'SANDBOX');
    const api = listen({ 'api-key': m.sandboxKey });
    const prod = listen({ authorization: `Bearer ${token}` }, 'PRODUCTION');
    const stranger = listen({ authorization: `Bearer ${otherToken}` }, 'SANDBOX');
    const strangerKey = listen({ 'api-key': other.sandboxKey });
    const all = [dash, api, prod, stranger, strangerKey];
    try {
      // A subscription is live a moment after it is sent: probe orders (their creation is on the feed) until each sandbox feed showed one.
      let probes = 0;
      while (![dash, api, stranger, strangerKey].every((s) => s.got.length > 0)) {
        if (++probes > 400) throw new Error('the feeds never became live');
        await gw.app.orders.create(ctxOf(m.merchantId), { orderNo: `PROBE-M-${probes}`, amount: '120000' });
        await gw.app.orders.create(ctxOf(other.merchantId), { orderNo: `PROBE-O-${probes}`, amount: '120000' });
        await new Promise((r) => setTimeout(r, 100));
      }
      for (const s of all) s.got.length = 0;
      const theirs = await gw.app.orders.create(ctxOf(other.merchantId), { orderNo: 'OTHER-FEED', amount: '120000' });
      await gw.app.orm.em.fork().transactional((em) => gw.app.orderStatus.transition(em, theirs.order.id, 'Processing', { kind: 'test' }));
      await paidOrder('DASH-FEED-1', '175000', { network: 'ETHEREUM', tokenAddress: SEPOLIA_USDT });
      const paid = (e: Ev) => e.orderNo === 'DASH-FEED-1' && e.status === 'Success';
      await until(() => dash.got.some(paid) && api.got.some(paid), 'the paid order on both feeds');
      await until(() => strangerKey.got.length >= 2 && stranger.got.length >= 2, "the other merchant's own events");
      await new Promise((r) => setTimeout(r, 300));
      // A probe's creation still on its way when the feeds were cleared is not this test's.
      for (const s of all) s.got = s.got.filter((e) => !e.orderNo.startsWith('PROBE-'));
      for (const s of [dash, api]) {
        expect(s.errors).toEqual([]);
        expect(s.got.map((e) => [e.type, e.orderNo, e.status])).toEqual([
          ['order.created', 'DASH-FEED-1', 'Created'],
          ['order.status_changed', 'DASH-FEED-1', 'Success'],
        ]);
        expect(s.got[0]).toMatchObject({ previousStatus: null, environment: 'SANDBOX' });
        expect(s.got[1]).toMatchObject({ previousStatus: 'Created', environment: 'SANDBOX' });
      }
      expect(prod.got).toEqual([]);
      for (const s of [stranger, strangerKey])
        expect(s.got.map((e) => [e.type, e.orderNo])).toEqual([
          ['order.created', 'OTHER-FEED'],
          ['order.status_changed', 'OTHER-FEED'],
        ]);
    } finally {
      await Promise.all(all.map((s) => s.close()));
    }
  });

  it('subscribers sharing a credential and a selection share one execution; each selection set gets its own shape; another merchant nothing', async () => {
    const shapeA = 'subscription { merchantEvents { eventId orderNo status } }';
    const shapeB = 'subscription Feed { merchantEvents { orderNo previousStatus type } }';
    const subscribe = (params: Record<string, unknown>, query: string, n: number) => {
      const client = wsClient(gw.url, params);
      const got: Record<string, unknown>[] = [];
      const stops = Array.from({ length: n }, () =>
        client.subscribe<{ merchantEvents: Record<string, unknown> }>(
          { query },
          { next: (v) => v.data && got.push(v.data.merchantEvents), error: (e) => got.push({ error: e }), complete: () => undefined },
        ),
      );
      return { got, close: async () => (stops.forEach((s) => s()), await client.dispose()) };
    };
    // Two sockets of the merchant's key, each with both shapes (three subscriptions each); the other merchant's key with shape A.
    const subs = [subscribe(key(), shapeA, 3), subscribe(key(), shapeB, 3), subscribe(key(), shapeA, 3), subscribe({ 'api-key': other.sandboxKey }, shapeA, 3)];
    try {
      await new Promise((r) => setTimeout(r, 700));
      const mine = await gw.app.orders.create(ctxOf(m.merchantId), { orderNo: 'FANOUT-MINE', amount: '130000' });
      const theirs = await gw.app.orders.create(ctxOf(other.merchantId), { orderNo: 'FANOUT-THEIRS', amount: '140000' });
      for (const o of [mine, theirs])
        await gw.app.orm.em.fork().transactional((em) => gw.app.orderStatus.transition(em, o.order.id, 'Processing', { kind: 'test' }));
      // Each subscription: the order's creation, then its change.
      await until(() => subs.every((s) => s.got.length >= 6), 'every subscriber');
      await new Promise((r) => setTimeout(r, 300));
      const [a1, b, a2, stranger] = subs.map((s) => s.got);
      const byStatus = (got: Record<string, unknown>[]) => [...got].sort((x, y) => String(x.status).localeCompare(String(y.status)));
      for (const got of [a1!, a2!]) {
        expect(got).toHaveLength(6);
        expect(byStatus(got)).toEqual([
          ...Array.from({ length: 3 }, () => ({ eventId: expect.any(String), orderNo: 'FANOUT-MINE', status: 'Created' })),
          ...Array.from({ length: 3 }, () => ({ eventId: expect.any(String), orderNo: 'FANOUT-MINE', status: 'Processing' })),
        ]);
      }
      expect([...b!].sort((x, y) => String(x.type).localeCompare(String(y.type)))).toEqual([
        ...Array.from({ length: 3 }, () => ({ orderNo: 'FANOUT-MINE', previousStatus: null, type: 'order.created' })),
        ...Array.from({ length: 3 }, () => ({ orderNo: 'FANOUT-MINE', previousStatus: 'Created', type: 'order.status_changed' })),
      ]);
      expect(stranger).toHaveLength(6);
      expect(byStatus(stranger!)).toEqual([
        ...Array.from({ length: 3 }, () => ({ eventId: expect.any(String), orderNo: 'FANOUT-THEIRS', status: 'Created' })),
        ...Array.from({ length: 3 }, () => ({ eventId: expect.any(String), orderNo: 'FANOUT-THEIRS', status: 'Processing' })),
      ]);
      // One group per (credential, feed, selection): the merchant's shape A, its shape B, the other merchant's shape A.
      expect(gw.http!.fanOut.groupCount).toBe(3);
    } finally {
      await Promise.all(subs.map((s) => s.close()));
    }
  });

  it('refuses anonymous callers and a dashboard without an environment', async () => {
    const anon = listen({});
    const noEnv = listen({ authorization: `Bearer ${token}` });
    try {
      await until(() => anon.errors.length > 0 && noEnv.errors.length > 0, 'both refusals');
      expect(JSON.stringify(anon.errors)).toMatch(/UNAUTHENTICATED|FORBIDDEN/);
      expect(JSON.stringify(noEnv.errors)).toMatch(/VALIDATION_FAILED/);
    } finally {
      await Promise.all([anon.close(), noEnv.close()]);
    }
  });
});

// Last: it adds an order (opened from a payment link) that the counts above do not expect.
describe('orders filters: time ranges, payment link, overpaid', () => {
  it('created and paid time ranges [from, to), payment link and overpaid filters', async () => {
    const nos = async (vars: DashOrdersFilteredQueryVariables, headers: Record<string, string> = key()) => {
      const r = await gql(gw.url, DashOrdersFiltered, vars, headers);
      expect(r.errors).toBeUndefined();
      expect(r.data!.orders.totalCount).toBe(r.data!.orders.edges.length);
      return r.data!.orders.edges.map((e) => e.node.orderNo).sort();
    };
    const all = await nos({});
    const nodes = (await gql(gw.url, DashOrdersFiltered, {}, key())).data!.orders.edges.map((e) => e.node);
    const eth = nodes.find((n) => n.orderNo === 'DASH-ETH-1')!;
    // Created range: the instant of an order's creation is inside [createdAt, …) and outside [… , createdAt).
    expect(await nos({ createdFrom: eth.createdAt })).toContain('DASH-ETH-1');
    expect(await nos({ createdTo: eth.createdAt })).not.toContain('DASH-ETH-1');
    expect((await nos({ createdTo: eth.createdAt })).length + (await nos({ createdFrom: eth.createdAt })).length).toBe(all.length);
    expect(await nos({ createdFrom: new Date(Date.now() + 3_600_000).toISOString() })).toEqual([]);
    // Paid range: only paid orders, split at the paid instant.
    const paid = nodes
      .filter((n) => n.paidAt)
      .map((n) => n.orderNo)
      .sort();
    expect(paid).toEqual(expect.arrayContaining(['DASH-BSC-1', 'DASH-ETH-1']));
    expect(await nos({ paidFrom: new Date(0).toISOString() })).toEqual(paid);
    expect(await nos({ paidFrom: eth.paidAt, paidTo: new Date(Date.parse(eth.paidAt!) + 1).toISOString() })).toEqual(['DASH-ETH-1']);
    expect(await nos({ paidTo: eth.paidAt })).toEqual(
      nodes
        .filter((n) => n.paidAt && n.paidAt < eth.paidAt!)
        .map((n) => n.orderNo)
        .sort(),
    );
    expect(await nos({ paidTo: eth.paidAt })).toContain('DASH-BSC-1');
    const backwards = await gql(gw.url, DashOrdersFiltered, { paidFrom: eth.paidAt, paidTo: new Date(0).toISOString() }, key());
    expect(backwards.errors?.[0]?.extensions?.code).toBe('VALIDATION_FAILED');
    // Payment link: only the orders opened from it.
    const link = await gql(
      gw.url,
      CreatePaymentLinkDocument,
      { environment: 'SANDBOX', input: { title: 'Dash link', expirationTime: 3600, maxUsage: 5, products: [{ name: 'Kopi', price: '50000', quantity: 1 }] } },
      bearer(token),
    );
    const linkId = link.data!.createPaymentLink.id;
    const opened = await gql(gw.url, OpenPaymentLinkDocument, { id: linkId });
    expect(opened.errors).toBeUndefined();
    expect(await nos({ paymentLinkId: linkId })).toEqual([opened.data!.openPaymentLink.order.orderNo]);
    expect(await nos({ paymentLinkId: linkId, environment: 'SANDBOX' }, bearer(token))).toEqual([opened.data!.openPaymentLink.order.orderNo]);
    expect(await nos({ paymentLinkId: linkId }, { 'api-key': other.sandboxKey })).toEqual([]);
    expect(await nos({ paymentLinkId: '00000000-0000-4000-8000-000000000000' })).toEqual([]);
    expect((await gql(gw.url, DashOrdersFiltered, { paymentLinkId: 'not-a-uuid' }, key())).errors?.[0]?.extensions?.code).toBe('VALIDATION_FAILED');
    // Overpaid (the overpayment test above made one).
    const overpaid = nodes.filter((n) => n.overpaid).map((n) => n.orderNo);
    expect(overpaid).toEqual(['DASH-OVER-1']);
    expect(await nos({ overpaid: true })).toEqual(overpaid);
    expect(await nos({ overpaid: false })).toEqual(
      all
        .filter((n) => !overpaid.includes(n))
        .concat(opened.data!.openPaymentLink.order.orderNo)
        .sort(),
    );
  });
});
