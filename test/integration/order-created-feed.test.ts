import { print } from 'graphql';
import { CreateOrderDocument, MerchantEventsDocument, OpenPaymentLinkDocument, type MerchantEventsSubscription } from '../generated/graphql';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { bearer, gql, wsClient } from '../support/graphql';
import { http } from '../support/http';
import { eventually } from '../support/webhooks';

/**
 * `order.created` on the merchantEvents feed (a dashboard wants new orders live).
 * The event is written by the statement that inserts the order (one statement per group-committed
 * batch) and announced in its transaction; the feed reads it back from `order_events` by id. Every
 * creation path: REST (one order, and many at once, which the group commit batches), GraphQL
 * createOrder, and a payment link's open (REST and GraphQL). Another merchant's orders never appear.
 */

type Ev = MerchantEventsSubscription['merchantEvents'];
type M = Awaited<ReturnType<typeof createMerchant>> & { token: string };

const T = '/api/v2/testnet';
let gw: TestGateway;
let m: M;
let other: M;
const closers: (() => Promise<void>)[] = [];

async function merchant(): Promise<M> {
  const mm = await createMerchant(gw.app);
  const res = await http(gw.url, '/api/v2/auth/login', { body: { email: mm.email, password: mm.password, user_type: 'merchant' } });
  expect(res.status).toBe(200);
  return { ...mm, token: res.body.data.token as string };
}

beforeAll(async () => {
  gw = await startTestGateway({ ROLE: 'api', PAYMENT_LINK_UNPAID_PER_CLIENT: '1000' });
  [m, other] = [await merchant(), await merchant()];
}, 120_000);
afterAll(async () => {
  for (const c of closers) await c();
  await gw?.close();
});

function listen(params: Record<string, unknown>, environment?: 'SANDBOX') {
  const client = wsClient(gw.url, params);
  const got: Ev[] = [];
  const errors: unknown[] = [];
  const stop = client.subscribe<MerchantEventsSubscription>(
    { query: print(MerchantEventsDocument), variables: environment ? { environment } : {} },
    { next: (v) => (v.errors ? errors.push(...v.errors) : v.data && got.push(v.data.merchantEvents)), error: (e) => errors.push(e), complete: () => undefined },
  );
  closers.push(async () => (stop(), await client.dispose()));
  return { got, errors };
}

let n = 0;
const restOrder = (who: M, orderNo = `FEED-REST-${++n}-${Date.now()}`) =>
  http(gw.url, `${T}/merchant/fiat/order`, {
    body: { merchant_id: who.merchantId, order_no: orderNo, amount: '150000' },
    headers: { 'api-key': who.sandboxKey },
  }).then((res) => ({ res, orderNo }));
const created = (feed: { got: Ev[] }, orderNo: string) => feed.got.filter((e) => e.orderNo === orderNo && e.type === 'order.created');
const createdRows = async (orderNo: string) =>
  Number(
    (
      await gw.app.orm.em
        .fork()
        .execute<{ n: string }[]>(
          `select count(*)::text as n from order_events e join orders o on o.id = e.order_id where o.order_no = ? and e.type = 'order.created'`,
          [orderNo],
        )
    )[0]!.n,
  );

it('every created order reaches its own merchant feed once (REST, a REST burst, GraphQL, payment link by REST and GraphQL), never another merchant’s', async () => {
  const dash = listen({ authorization: `Bearer ${m.token}` }, 'SANDBOX');
  const api = listen({ 'api-key': m.sandboxKey });
  const stranger = listen({ 'api-key': other.sandboxKey });
  const mine = [dash, api];

  // A subscription is live a moment after it is sent: create probe orders until every feed showed one.
  const probes: string[] = [];
  const theirProbes: string[] = [];
  await eventually(
    async () => {
      if (mine.every((f) => f.got.length > 0) && stranger.got.length > 0) return true;
      probes.push((await restOrder(m)).orderNo);
      theirProbes.push((await restOrder(other)).orderNo);
      await new Promise((r) => setTimeout(r, 100));
      return false;
    },
    60_000,
    `every feed live (${JSON.stringify([dash.errors, api.errors, stranger.errors])})`,
  );

  // REST, one order.
  const one = await restOrder(m);
  expect(one.res.status).toBe(201);
  // REST, a burst: concurrent requests go to PostgreSQL as group-committed batches.
  const burst = await Promise.all(Array.from({ length: 25 }, () => restOrder(m)));
  for (const b of burst) expect(b.res.status).toBe(201);
  // A duplicate order number is refused and records nothing.
  const dup = await restOrder(m, one.orderNo);
  expect(dup.res.status).toBeGreaterThanOrEqual(400);
  expect(dup.res.status).toBeLessThan(500);
  // GraphQL createOrder with the API key.
  const gqlNo = `FEED-GQL-${Date.now()}`;
  const viaGql = await gql(gw.url, CreateOrderDocument, { input: { orderNo: gqlNo, amount: '160000' } }, { 'api-key': m.sandboxKey });
  expect(viaGql.errors).toBeUndefined();
  // A payment link, opened over REST and over GraphQL.
  const link = await http(gw.url, `${T}/merchant/payment-link`, {
    body: {
      merchant_id: m.merchantId,
      title: 'Feed link',
      expiration_time: 3600,
      max_usage: 10,
      products: [{ name: 'Batik shirt', price: 150000, quantity: 1 }],
    },
    headers: bearer(m.token),
  });
  expect(link.status).toBe(201);
  const linkId = link.body.data.payment_link_id as string;
  const openedRest = await http(gw.url, `${T}/order/payment-link`, { body: { payment_link_id: linkId } });
  expect(openedRest.status).toBe(201);
  const openedGql = await gql(gw.url, OpenPaymentLinkDocument, { id: linkId });
  expect(openedGql.errors).toBeUndefined();
  const linkNos = [openedRest.body.data.request.order_no as string, openedGql.data!.openPaymentLink.order.orderNo];
  expect(linkNos.every(Boolean)).toBe(true);
  // The other merchant's order, last: once its event reached its own feed, everything before it was announced.
  const theirs = await restOrder(other);
  expect(theirs.res.status).toBe(201);

  const expected = [one.orderNo, ...burst.map((b) => b.orderNo), gqlNo, ...linkNos];
  await eventually(
    async () => mine.every((f) => expected.every((no) => created(f, no).length > 0)) && created(stranger, theirs.orderNo).length > 0,
    60_000,
    'every creation on the feeds',
  );

  for (const feed of mine) {
    expect(feed.errors).toEqual([]);
    for (const no of expected) {
      expect(created(feed, no)).toEqual([
        {
          type: 'order.created',
          eventId: expect.any(String),
          orderNo: no,
          status: 'Created',
          previousStatus: null,
          environment: 'SANDBOX',
          at: expect.any(String),
        },
      ]);
    }
    // Only the merchant's own orders, each once (the duplicate request added nothing).
    expect(feed.got.filter((e) => !expected.includes(e.orderNo) && !probes.includes(e.orderNo))).toEqual([]);
    expect(feed.got.filter((e) => e.orderNo === one.orderNo)).toHaveLength(1);
  }
  expect(stranger.errors).toEqual([]);
  expect(stranger.got.filter((e) => e.orderNo === theirs.orderNo)).toHaveLength(1);
  expect(stranger.got.filter((e) => e.orderNo !== theirs.orderNo && !theirProbes.includes(e.orderNo))).toEqual([]);

  // One row per order in order_events, written with it.
  for (const no of [...expected, theirs.orderNo]) expect(await createdRows(no)).toBe(1);
}, 180_000);
