/**
 * One address opening a small payment link again and again reserved all of
 * its uses for the orders' lifetime, and a paying customer elsewhere got PAYMENT_LINK_EXHAUSTED.
 * Unpaid orders per client (address; IPv6 by its /64) per link are bounded by
 * PAYMENT_LINK_UNPAID_PER_CLIENT (default 2). Client addresses come from X-Forwarded-For (TRUST_PROXY).
 */
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { bearer } from '../support/graphql';
import { http, type HttpResult } from '../support/http';

const T = '/api/v2/testnet';
let gw: TestGateway;
let m: Awaited<ReturnType<typeof createMerchant>> & { token: string };
const sql = <R>(query: string, params: unknown[] = []) => gw.app.orm.em.fork().getConnection().execute<R[]>(query, params);

beforeAll(async () => {
  gw = await startTestGateway({ TRUST_PROXY: 'true', FALLBACK_RATE_USDT_IDR: '16250', FALLBACK_RATE_USDC_IDR: '16250' });
  const created = await createMerchant(gw.app);
  const login = await http(gw.url, '/api/v2/auth/login', { body: { email: created.email, password: created.password, user_type: 'merchant' } });
  m = { ...created, token: login.body.data.token as string };
});
afterAll(() => gw?.close());

async function createLink(maxUsage: number): Promise<string> {
  const res = await http(gw.url, `${T}/merchant/payment-link`, {
    body: {
      merchant_id: m.merchantId,
      title: 'Batik',
      expiration_time: 3600,
      max_usage: maxUsage,
      products: [{ name: 'Batik shirt', price: 150000, quantity: 1 }],
    },
    headers: bearer(m.token),
  });
  expect(res.status).toBe(201);
  return res.body.data.payment_link_id as string;
}
const open = (link: string, ip: string) => http(gw.url, `${T}/order/payment-link`, { body: { payment_link_id: link }, headers: { 'x-forwarded-for': ip } });
const usageOf = async (link: string) => (await sql<{ usage_count: number }>('select usage_count from payment_links where id = ?', [link]))[0]!.usage_count;
const orderIdOf = async (res: HttpResult) => (await sql<{ id: string }>('select id from orders where order_no = ?', [res.body.data.request.order_no]))[0]!.id;

function expectClientBound(res: HttpResult): void {
  expect(res.status).toBe(429);
  expect(res.body).toMatchObject({ status_code: 429, data: { code: 'RATE_LIMITED' } });
  expect(res.body.message).toMatch(/already holds 2 unpaid orders of this payment link/);
  const retryAfter = Number(res.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(24 * 3600);
}

it('twenty opens from one address hold two uses of a max_usage 20 link; a customer elsewhere still gets an order', async () => {
  const link = await createLink(20);
  const results: HttpResult[] = [];
  for (let i = 0; i < 20; i++) results.push(await open(link, '10.0.9.1'));
  expect(results.slice(0, 2).map((r) => r.status)).toEqual([201, 201]);
  for (const r of results.slice(2)) expectClientBound(r);
  expect(await usageOf(link)).toBe(2);
  expect((await sql('select id from orders where payment_link_id = ?', [link])).length).toBe(2); // nothing written for a refused open

  const customer = await open(link, '10.0.9.77');
  expect(customer.status).toBe(201);
  expect(await usageOf(link)).toBe(3);
});

it('concurrent opens from one address: exactly two pass; the slot returns when one of them is paid or expires', async () => {
  const link = await createLink(20);
  const results = await Promise.all(Array.from({ length: 10 }, () => open(link, '10.0.10.1')));
  const ok = results.filter((r) => r.status === 201);
  expect(ok).toHaveLength(2);
  for (const r of results.filter((x) => x.status !== 201)) expectClientBound(r);
  expect(await usageOf(link)).toBe(2);

  // A payment seen on one of them (Processing): it is no longer an unpaid reservation.
  const paying = await orderIdOf(ok[0]!);
  await gw.app.orm.em.fork().transactional((em) => gw.app.orderStatus.transition(em, paying, 'Processing', { kind: 'test' }));
  expect((await open(link, '10.0.10.1')).status).toBe(201);
  expectClientBound(await open(link, '10.0.10.1'));

  // The other expires unpaid: its use and the client's slot return.
  const idle = await orderIdOf(ok[1]!);
  await sql(`update orders set expires_at = now() - interval '1 second' where id = ?`, [idle]);
  await gw.app.settlement.expireDue(gw.app.orm.em.fork());
  expect((await open(link, '10.0.10.1')).status).toBe(201);
});

it('IPv6 addresses of one /64 are one client; IPv4-mapped IPv6 is its IPv4 address; other clients are unaffected', async () => {
  const link = await createLink(20);
  expect((await open(link, '2001:db8:5:6::1')).status).toBe(201);
  expect((await open(link, '2001:db8:5:6:ffff:ffff:ffff:fffe')).status).toBe(201);
  expectClientBound(await open(link, '2001:db8:5:6:1234::9'));
  expect((await open(link, '2001:db8:5:7::1')).status).toBe(201); // another /64

  expect((await open(link, '10.0.11.1')).status).toBe(201);
  expect((await open(link, '::ffff:10.0.11.1')).status).toBe(201);
  expectClientBound(await open(link, '10.0.11.1'));
  // The stored client is a hash, not the address.
  const clients = await sql<{ client: string }>('select client from payment_link_opens where payment_link_id = ?', [link]);
  expect(clients.length).toBe(5);
  for (const c of clients) expect(c.client).toMatch(/^[0-9a-f]{64}$/);
});
