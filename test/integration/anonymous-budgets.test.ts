/**
 * What anonymous callers can spend, on the real gateway and PostgreSQL:
 *  - opening public payment links is bounded per IP and per link (each open is an order whose
 *    checkout key can allocate deposits and unique codes) — 429 in the envelope with Retry-After,
 *    while the merchant's own server keeps working;
 *  - checkout keys (anyone gets one from a public link) have their own per-key and per-IP budgets
 *    and never spend the merchant's server-to-server quota;
 *  - a payment-link use is reserved at open and released when the order expires unpaid, so opens
 *    that never pay cannot burn `max_usage`; a late payment re-takes a use if there is room and is
 *    honoured as paid either way (usage_count never passes max_usage, whatever the concurrency).
 * Client IPs are set with X-Forwarded-For (TRUST_PROXY), as a load balancer would.
 */
import type { ObservedTransfer } from '../../src/chains/chain-adapter';
import { TokensDocument } from '../generated/graphql';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { bearer, gql } from '../support/graphql';
import { http, type HttpResult } from '../support/http';

const T = '/api/v2/testnet';
const NILE_USDT = 'TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf';
const CUSTOMER = 'TLa2f6VPqDgRE67v1736s7bJ8Ray5wYjU7';
const OPENS_PER_IP = 5;
const OPENS_PER_LINK = 25;
const CHECKOUT_KEY_PER_MIN = 50;
const CHECKOUT_IP_PER_MIN = 120;
const MERCHANT_PER_MIN = 1000;
/** One more than the merchant's own per-minute budget: had checkout calls spent it, the merchant would be refused. */
const FLOOD = MERCHANT_PER_MIN + 10;

type M = Awaited<ReturnType<typeof createMerchant>> & { token: string };
let gw: TestGateway;
let m: M;

const sql = <R>(query: string, params: unknown[] = []) => gw.app.orm.em.fork().getConnection().execute<R[]>(query, params);
const from = (ip: string) => ({ 'x-forwarded-for': ip });

beforeAll(async () => {
  gw = await startTestGateway({
    TRUST_PROXY: 'true',
    FALLBACK_RATE_USDT_IDR: '16250',
    FALLBACK_RATE_USDC_IDR: '16250',
    RATE_LIMIT_LINK_OPENS_PER_IP_PER_HOUR: String(OPENS_PER_IP),
    RATE_LIMIT_LINK_OPENS_PER_LINK_PER_HOUR: String(OPENS_PER_LINK),
    RATE_LIMIT_CHECKOUT_KEY_PER_MIN: String(CHECKOUT_KEY_PER_MIN),
    RATE_LIMIT_CHECKOUT_IP_PER_MIN: String(CHECKOUT_IP_PER_MIN),
    RATE_LIMIT_MERCHANT_PER_MIN: String(MERCHANT_PER_MIN),
    // These tests open OPENS_PER_IP orders of one link from one IP; the per-client bound is link-client-bound.test.ts's.
    PAYMENT_LINK_UNPAID_PER_CLIENT: String(OPENS_PER_IP),
  });
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
const open = (link: string, ip: string) => http(gw.url, `${T}/order/payment-link`, { body: { payment_link_id: link }, headers: from(ip) });
const qrWithKey = (orderNo: string, key: string, ip: string) =>
  http(gw.url, `${T}/pgqr/fiat/create`, {
    body: { merchant_id: m.merchantId, transactionID: orderNo, tokenAddress: NILE_USDT, network: 'TRON', walletType: 'TRUSTWALLET' },
    headers: { 'api-key': key, ...from(ip) },
  });
const usageOf = async (link: string) => (await sql<{ usage_count: number }>('select usage_count from payment_links where id = ?', [link]))[0]!.usage_count;

function expectLimited(res: HttpResult, message: RegExp, windowS: number): void {
  expect(res.status).toBe(429);
  expect(res.body).toMatchObject({ status_code: 429, data: { code: 'RATE_LIMITED' } });
  expect(res.body.message).toMatch(message);
  const retryAfter = Number(res.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(windowS);
  expect(res.body.data.retryAfterS).toBe(retryAfter);
}

/** `n` calls, `width` at a time; returns the responses in order. */
async function flood(n: number, width: number, call: (i: number) => Promise<HttpResult>): Promise<HttpResult[]> {
  const out: HttpResult[] = new Array(n);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      for (let i = next++; i < n; i = next++) out[i] = await call(i);
    }),
  );
  return out;
}

describe('item 1: anonymous allocation through public payment links is bounded', () => {
  it('per IP, then per link: 429 with Retry-After; what was opened allocated at most that many codes; the merchant server still works', async () => {
    const link = await createLink(1000);
    // One IP: OPENS_PER_IP orders, then 429 (nothing written for the refused call).
    const opened: { orderNo: string; key: string; ip: string }[] = [];
    for (let i = 0; i < OPENS_PER_IP; i++) {
      const res = await open(link, '10.0.1.1');
      expect(res.status).toBe(201);
      opened.push({ orderNo: res.body.data.request.order_no, key: res.body.data.api_key, ip: '10.0.1.1' });
    }
    const ordersBefore = (await sql('select id from orders where payment_link_id = ?', [link])).length;
    expectLimited(await open(link, '10.0.1.1'), /Too many payment-link orders from this IP address/, 3600);
    expect((await sql('select id from orders where payment_link_id = ?', [link])).length).toBe(ordersBefore);

    // Many IPs: the link's own budget stops them all together.
    let ipN = 2;
    let res: HttpResult | undefined;
    for (let used = OPENS_PER_IP; used < OPENS_PER_LINK; used++) {
      const ip = `10.0.1.${ipN}`;
      res = await open(link, ip);
      expect(res.status).toBe(201);
      opened.push({ orderNo: res.body.data.request.order_no, key: res.body.data.api_key, ip });
      if ((used + 1) % OPENS_PER_IP === 0) ipN++;
    }
    expectLimited(await open(link, `10.0.1.${ipN + 1}`), /Too many orders opened from this payment link/, 3600);
    expect((await sql('select id from orders where payment_link_id = ?', [link])).length).toBe(OPENS_PER_LINK);

    // Each opened order's checkout key allocates one deposit (one code) per token, asked twice: still one.
    for (const o of opened) {
      expect((await qrWithKey(o.orderNo, o.key, o.ip)).status).toBe(201);
      expect((await qrWithKey(o.orderNo, o.key, o.ip)).status).toBe(201);
    }
    const [codes] = await sql<{ n: number }>(
      `select count(*)::int as n from deposits d join orders o on o.id = d.order_id where o.payment_link_id = ? and d.status = 'open'`,
      [link],
    );
    expect(codes!.n).toBe(OPENS_PER_LINK);

    // The merchant's own server is not affected by any of it.
    const order = await http(gw.url, `${T}/merchant/fiat/order`, {
      body: { merchant_id: m.merchantId, order_no: 'SERVER-1', amount: '150000' },
      headers: { 'api-key': m.sandboxKey, ...from('10.0.1.1') },
    });
    expect(order.status).toBe(201);
    expect((await qrWithKey('SERVER-1', m.sandboxKey, '10.0.1.1')).status).toBe(201);
  });
});

describe('item 5: checkout keys have their own budget', () => {
  it('1,010 checkout-key calls (more than the merchant’s own budget) get 429 past the key budget, while the merchant API key still gets 200', async () => {
    const created = await http(gw.url, `${T}/merchant/fiat/order`, {
      body: { merchant_id: m.merchantId, order_no: 'CK-FLOOD', amount: '150000' },
      headers: { 'api-key': m.sandboxKey },
    });
    expect(created.status).toBe(201);
    const key = created.body.data.key as string;

    const results = await flood(FLOOD, 20, () => http(gw.url, `${T}/listToken`, { headers: { 'api-key': key, ...from('10.0.5.1') } }));
    const ok = results.filter((r) => r.status === 200).length;
    expect(ok).toBe(CHECKOUT_KEY_PER_MIN);
    expect(results.filter((r) => r.status === 429).length).toBe(FLOOD - CHECKOUT_KEY_PER_MIN);
    expectLimited(results[FLOOD - 1]!, /Too many (checkout requests from this IP address|requests with this checkout key)/, 60);

    // The merchant's server-to-server quota was not spent: REST and GraphQL answer.
    const mine = await http(gw.url, `${T}/listToken`, { headers: { 'api-key': m.sandboxKey, ...from('10.0.5.1') } });
    expect(mine.status).toBe(200);
    expect(mine.body.data.tokens.length).toBeGreaterThan(0);
    expect((await gql(gw.url, TokensDocument, {}, { 'api-key': m.sandboxKey })).errors).toBeUndefined();

    // The key's budget follows the key to another IP; another key on another IP has its own.
    expectLimited(await http(gw.url, `${T}/listToken`, { headers: { 'api-key': key, ...from('10.0.5.2') } }), /Too many requests with this checkout key/, 60);
    const overGql = await gql(gw.url, TokensDocument, {}, { 'x-checkout-key': key, ...from('10.0.5.3') });
    expect(overGql.errors?.[0]?.extensions).toMatchObject({ code: 'RATE_LIMITED' });
    expect(overGql.errors?.[0]?.message).toMatch(/Too many requests with this checkout key/);
    const other = await http(gw.url, `${T}/merchant/fiat/order`, {
      body: { merchant_id: m.merchantId, order_no: 'CK-OTHER', amount: '150000' },
      headers: { 'api-key': m.sandboxKey },
    });
    expect((await http(gw.url, `${T}/listToken`, { headers: { 'api-key': other.body.data.key, ...from('10.0.5.2') } })).status).toBe(200);
  }, 120_000);

  it('many checkout keys from one IP share that IP’s checkout budget', async () => {
    const keys: string[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await http(gw.url, `${T}/merchant/fiat/order`, {
        body: { merchant_id: m.merchantId, order_no: `CK-IP-${i}`, amount: '150000' },
        headers: { 'api-key': m.sandboxKey },
      });
      keys.push(r.body.data.key);
    }
    // 4 keys × 50 = 200 per-key points, but the IP allows 120.
    const results = await flood(200, 10, (i) => http(gw.url, `${T}/listToken`, { headers: { 'api-key': keys[i % 4]!, ...from('10.0.6.1') } }));
    expect(results.filter((r) => r.status === 200).length).toBe(CHECKOUT_IP_PER_MIN);
    expectLimited(
      results.find((r) => r.status === 429)!,
      /Too many checkout requests from this IP address/,
      60,
    );
    expect((await http(gw.url, `${T}/listToken`, { headers: { 'api-key': m.sandboxKey, ...from('10.0.6.1') } })).status).toBe(200);
  });
});

describe('item 6: payment-link uses are reserved at open and released on unpaid expiry', () => {
  const expireOrders = async (ids: string[]) => {
    await sql(`update orders set expires_at = now() - interval '1 second' where id = any(?::uuid[])`, [`{${ids.join(',')}}`]);
    await gw.app.settlement.expireDue(gw.app.orm.em.fork());
  };

  /** A confirmed late transfer of the order's full total, recorded as a watcher records it (not settled yet). */
  async function latePayment(orderId: string, n: number): Promise<void> {
    const [dep] = await sql<{ id: string; token_id: string; address: string; total_amount: string }>(
      'select id, token_id, address, total_amount from deposits where order_id = ?',
      [orderId],
    );
    const t: ObservedTransfer = {
      txHash: n.toString(16).padStart(64, '0'),
      index: 0,
      blockNumber: 400n,
      blockHash: 'cd'.repeat(32),
      token: NILE_USDT,
      from: CUSTOMER,
      to: dep!.address,
      amount: BigInt(dep!.total_amount),
    };
    await gw.app.orm.em
      .fork()
      .transactional((tx) => gw.app.payments.record(tx, 'sandbox', 'TRON', [{ transfer: t, depositId: dep!.id, orderId, tokenId: dep!.token_id }]));
    const [p] = await sql<{ id: string }>('select id from payments where tx_hash = ?', [t.txHash]);
    await gw.app.payments.markConfirmed(gw.app.orm.em.fork(), [p!.id]);
  }

  it('20 anonymous opens fill a max_usage 20 link; once those orders expire unpaid, the link opens again', async () => {
    const link = await createLink(20);
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await open(link, `10.0.7.${Math.floor(i / OPENS_PER_IP) + 1}`);
      expect(res.status).toBe(201);
      ids.push(res.body.data.request.id ?? (await sql<{ id: string }>('select id from orders where order_no = ?', [res.body.data.request.order_no]))[0]!.id);
    }
    expect(await usageOf(link)).toBe(20);
    const full = await open(link, '10.0.7.9');
    expect(full.body).toMatchObject({ status_code: 409, data: { code: 'PAYMENT_LINK_EXHAUSTED' } });

    await expireOrders(ids);
    expect(await usageOf(link)).toBe(0);
    const validated = await http(gw.url, `${T}/payment-links/${link}/validate`);
    expect(validated.body.data).toMatchObject({ valid: true });
    expect((await open(link, '10.0.7.9')).status).toBe(201);
    expect(await usageOf(link)).toBe(1);
    // Expiring again does not release twice.
    await gw.app.settlement.expireDue(gw.app.orm.em.fork());
    expect(await usageOf(link)).toBe(1);
  });

  it('late payments race for the last use: both honoured as paid, usage_count stays at max_usage', async () => {
    const link = await createLink(2);
    const orders: { id: string; orderNo: string }[] = [];
    for (let i = 0; i < 2; i++) {
      const res = await open(link, `10.0.8.${i + 1}`);
      expect(res.status).toBe(201);
      const orderNo = res.body.data.request.order_no as string;
      expect((await qrWithKey(orderNo, res.body.data.api_key, `10.0.8.${i + 1}`)).status).toBe(201);
      orders.push({ id: (await sql<{ id: string }>('select id from orders where order_no = ?', [orderNo]))[0]!.id, orderNo });
    }
    await expireOrders(orders.map((o) => o.id));
    expect(await usageOf(link)).toBe(0);
    // A new shopper takes one of the two uses while both expired orders are still in their late window.
    expect((await open(link, '10.0.8.3')).status).toBe(201);
    expect(await usageOf(link)).toBe(1);

    // Both expired orders are paid late, and settled at the same time: one use is left for two orders.
    await latePayment(orders[0]!.id, 1001);
    await latePayment(orders[1]!.id, 1002);
    await Promise.all(orders.map((o) => gw.app.settlement.settle(gw.app.orm.em.fork(), o.id)));

    const rows = await sql<{ status: string; link_use_held: boolean }>('select status, link_use_held from orders where id = any(?::uuid[]) order by id', [
      `{${orders.map((o) => o.id).join(',')}}`,
    ]);
    expect(rows.map((r) => r.status)).toEqual(['Success', 'Success']); // money is never refused
    expect(rows.filter((r) => r.link_use_held)).toHaveLength(1); // only one fitted
    expect(await usageOf(link)).toBe(2);
    expect((await open(link, '10.0.8.4')).body).toMatchObject({ status_code: 409, data: { code: 'PAYMENT_LINK_EXHAUSTED' } });
  });
});
