import { CreateOrderDocument, LockQuoteDocument, MeDocument, OrderDocument, RotateApiKeyDocument, TokensDocument } from '../generated/graphql';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { gql } from '../support/graphql';
import { http } from '../support/http';

const T = '/api/v2/testnet';
const USDT = '0x7169D38820dfd117C3FA1f22a697dBA58d90BA06';
let gw: TestGateway;
let m: Awaited<ReturnType<typeof createMerchant>>;
let own: { no: string; key: string };
let other: { no: string; key: string };
let otherId: string;

beforeAll(async () => {
  gw = await startTestGateway();
  m = await createMerchant(gw.app);
  const mk = async (no: string) => {
    const r = await http(gw.url, `${T}/merchant/fiat/order`, {
      body: { merchant_id: m.merchantId, order_no: no, amount: '50000' },
      headers: { 'api-key': m.sandboxKey },
    });
    return { no, key: r.body.data.key as string };
  };
  own = await mk('SCOPE-1');
  other = await mk('SCOPE-2');
  otherId = other.key.split('_')[1]!;
});
afterAll(() => gw?.close());

const rate = (no: string, key: string) =>
  http(gw.url, `${T}/merchant/fiat/checkOrderRate`, {
    body: { merchant_id: m.merchantId, transactionID: no, tokenAddress: USDT, network: 'ETHEREUM' },
    headers: { 'api-key': key },
  });

describe('scoped checkout key: allow/deny matrix', () => {
  it('is stored hashed and expires 30 minutes after issue', async () => {
    const [row] = await gw.app.orm.em
      .fork()
      .execute(`select checkout_key_hash, extract(epoch from checkout_key_expires_at - created_at)::int as ttl from orders where order_no = ?`, [own.no]);
    expect(row.checkout_key_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(row.checkout_key_hash).not.toContain(own.key.slice(3));
    expect(row.ttl).toBe(1800);
  });

  it.each([
    ['checkOrderRate (own order)', () => rate(own.no, own.key), 200],
    [
      'pgqr/fiat/create (own order)',
      () =>
        http(gw.url, `${T}/pgqr/fiat/create`, {
          body: { merchant_id: m.merchantId, transactionID: own.no, tokenAddress: USDT, network: 'ETHEREUM', walletType: 'METAMASK' },
          headers: { 'api-key': own.key },
        }),
      201,
    ],
    [
      'getOrder (own order)',
      () => http(gw.url, `${T}/merchant/fiat/getOrder`, { body: { merchant_id: m.merchantId, order_no: own.no }, headers: { 'api-key': own.key } }),
      200,
    ],
    [
      'getOrder with ?key= (own order)',
      () => http(gw.url, `${T}/merchant/fiat/getOrder?key=${own.key}`, { body: { merchant_id: m.merchantId, order_no: own.no } }),
      200,
    ],
    ['listToken', () => http(gw.url, `${T}/listToken`, { headers: { 'api-key': own.key } }), 200],
  ])('allowed: %s', async (_label, call, status) => {
    const res = await call();
    expect(res.status).toBe(status);
    expect(res.body.status_code).toBe(status);
  });

  it.each([
    ['checkOrderRate for another order', () => rate(other.no, own.key), 403, 'SCOPE_DENIED'],
    [
      'getOrder for another order',
      () => http(gw.url, `${T}/merchant/fiat/getOrder`, { body: { merchant_id: m.merchantId, order_no: other.no }, headers: { 'api-key': own.key } }),
      403,
      'SCOPE_DENIED',
    ],
    [
      'creating an order',
      () =>
        http(gw.url, `${T}/merchant/fiat/order`, { body: { merchant_id: m.merchantId, order_no: 'SCOPE-X', amount: '5000' }, headers: { 'api-key': own.key } }),
      403,
      'SCOPE_DENIED',
    ],
    [
      'the other environment',
      () => http(gw.url, `/api/v2/mainnet/merchant/fiat/getOrder`, { body: { merchant_id: m.merchantId, order_no: own.no }, headers: { 'api-key': own.key } }),
      403,
      'WRONG_ENVIRONMENT',
    ],
    ['merchant profile', () => http(gw.url, `${T}/merchant/me`, { headers: { 'api-key': own.key } }), 403, 'SCOPE_DENIED'],
    ['dashboard routes', () => http(gw.url, `/api/v2/auth/me`, { headers: { authorization: `Bearer ${own.key}` } }), 401, 'INVALID_TOKEN'],
    ['payment-link management', () => http(gw.url, `${T}/merchant/payment-link`, { headers: { authorization: `Bearer ${own.key}` } }), 401, 'INVALID_TOKEN'],
    ['a tampered key', () => rate(own.no, own.key.slice(0, -1) + (own.key.endsWith('a') ? 'b' : 'a')), 401, 'INVALID_API_KEY'],
    // The order id inside the key only locates the row: pointing it at another order proves nothing.
    ['its secret under another order’s id', () => rate(other.no, `ck_${otherId}_${own.key.split('_')[2]}`), 401, 'INVALID_API_KEY'],
  ])('denied: %s', async (_label, call, status, code) => {
    const res = await call();
    expect(res.status).toBe(status);
    expect(res.body).toMatchObject({ status_code: status, data: { code } });
  });

  it('over GraphQL: allowed on its order, refused elsewhere', async () => {
    const ck = { 'x-checkout-key': own.key };
    expect((await gql(gw.url, OrderDocument, { orderNo: own.no }, ck)).data?.order.orderNo).toBe(own.no);
    expect((await gql(gw.url, LockQuoteDocument, { orderNo: own.no, tokenAddress: USDT, network: 'ETHEREUM' }, ck)).errors).toBeUndefined();
    expect((await gql(gw.url, TokensDocument, {}, ck)).errors).toBeUndefined();
    expect((await gql(gw.url, OrderDocument, { orderNo: other.no }, ck)).errors?.[0]?.extensions?.code).toBe('SCOPE_DENIED');
    expect((await gql(gw.url, CreateOrderDocument, { input: { orderNo: 'GQL-X', amount: '5000' } }, ck)).errors?.[0]?.extensions?.code).toBe('SCOPE_DENIED');
    expect((await gql(gw.url, RotateApiKeyDocument, { environment: 'SANDBOX' }, ck)).errors?.[0]?.extensions?.code).toBe('SCOPE_DENIED');
    expect((await gql(gw.url, MeDocument, {}, ck)).errors?.[0]?.extensions?.code).toBe('SCOPE_DENIED');
  });

  it('the hosted checkout page at `url` opens with its key only', async () => {
    const [row] = await gw.app.orm.em.fork().execute(`select id from orders where order_no = ?`, [own.no]);
    const page = await http(gw.url, `/checkout/${row.id}?key=${own.key}`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(page.text).toContain(own.no);
    expect(page.text).not.toContain(m.sandboxKey);
    expect((await http(gw.url, `/checkout/${row.id}?key=${other.key}`)).status).toBe(403);
    expect((await http(gw.url, `/checkout/${row.id}?key=ck_${'0'.repeat(64)}`)).status).toBe(401);
  });

  it('expires after 30 minutes', async () => {
    await gw.app.orm.em.fork().execute(`update orders set checkout_key_expires_at = now() - interval '1 second' where order_no = ?`, [other.no]);
    const res = await rate(other.no, other.key);
    expect(res.body).toMatchObject({ status_code: 401, data: { code: 'CHECKOUT_KEY_EXPIRED' } });
    // The merchant's own API key still works on that order.
    expect((await rate(other.no, m.sandboxKey)).status).toBe(200);
  });
});
