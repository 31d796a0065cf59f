import fc from 'fast-check';
import {
  CreatePaymentLinkDocument,
  DeletePaymentLinkDocument,
  OpenPaymentLinkDocument,
  PaymentLinkDocument,
  PaymentLinksDocument,
  type PaymentLinksQuery,
  UpdatePaymentLinkDocument,
  ValidatePaymentLinkDocument,
} from '../generated/graphql';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { bearer, gql, type GqlResult } from '../support/graphql';
import { http, type HttpResult } from '../support/http';

// Every REST answer of this suite must match schema/openapi.json.

/**
 * Payment links over both transports on real PostgreSQL: dashboard management (JWT), the public
 * open/validate calls, the usage quota under concurrency, and malformed input.
 *
 * Page size: `limit` 1–100 (default 20); a larger value is refused with VALIDATION_FAILED (not clamped).
 */
let gw: TestGateway;
type M = Awaited<ReturnType<typeof createMerchant>> & { token: string };
let a: M;
let b: M;

const T = '/api/v2/testnet';
const P = '/api/v2/mainnet';
const ORDER_MIN = 1000;
const ORDER_MAX = 1_000_000_000;

async function merchant(): Promise<M> {
  const m = await createMerchant(gw.app);
  const res = await http(gw.url, '/api/v2/auth/login', { body: { email: m.email, password: m.password, user_type: 'merchant' } });
  expect(res.status).toBe(200);
  return { ...m, token: res.body.data.token as string };
}

beforeAll(async () => {
  // Every open here comes from one address (127.0.0.1): the per-client bound is link-client-bound.test.ts's.
  gw = await startTestGateway({ PAYMENT_LINK_UNPAID_PER_CLIENT: '1000' });
  [a, b] = [await merchant(), await merchant()];
});
afterAll(() => gw?.close());

const linkBody = (m: M, over: Record<string, unknown> = {}) => ({
  merchant_id: m.merchantId,
  title: 'Batik Sale',
  expiration_time: 3600,
  max_usage: 10,
  products: [
    { name: 'Batik shirt', price: 150000, quantity: 2 },
    { name: 'Scarf', price: 25000, quantity: 1 },
  ],
  ...over,
});

async function createLink(m: M, over: Record<string, unknown> = {}, base = T) {
  const res = await http(gw.url, `${base}/merchant/payment-link`, { body: linkBody(m, over), headers: bearer(m.token) });
  expect(res.status).toBe(201);
  return res.body.data as { payment_link_id: string } & Record<string, unknown>;
}

const open = (id: unknown, base = T) => http(gw.url, `${base}/order/payment-link`, { body: { payment_link_id: id } });

const sql = <R = Record<string, unknown>>(q: string, params: unknown[] = []) => gw.app.orm.em.fork().getConnection().execute<R[]>(q, params);
const count = async (q: string, params: unknown[] = []) => Number((await sql<{ n: string }>(`select count(*)::text as n from ${q}`, params))[0]!.n);

const linkId = (l: { payment_link_id: string }) => l.payment_link_id;

/** Every error answer is the envelope with a code, and 4xx. */
function expectEnvelopeError(res: HttpResult, code?: string) {
  expect(res.status).toBeGreaterThanOrEqual(400);
  expect(res.status).toBeLessThan(500);
  expect(res.body).toMatchObject({ status_code: res.status, message: expect.any(String), data: { code: expect.any(String) } });
  if (code) expect(res.body.data.code).toBe(code);
}

describe('dashboard REST', () => {
  it('create: 201 with the full record, total_price = Σ price × quantity, Active, usage_count 0', async () => {
    const before = Math.floor(Date.now() / 1000);
    const res = await http(gw.url, `${T}/merchant/payment-link`, { body: linkBody(a), headers: bearer(a.token) });
    expect(res.status).toBe(201);
    const d = res.body.data;
    expect(res.body).toMatchObject({ status_code: 201, message: expect.any(String) });
    expect(d).toMatchObject({
      merchant_id: a.merchantId,
      environment: 'sandbox',
      title: 'Batik Sale',
      link: `${gw.app.config.PUBLIC_BASE_URL}/pay/${d.payment_link_id}`,
      total_price: '325000',
      currency: 'IDR',
      status: 'Active',
      usage_count: 0,
      max_usage: 10,
      remaining: 10,
      expiration_time: 3600,
      products: [
        { name: 'Batik shirt', price: '150000', quantity: 2 },
        { name: 'Scarf', price: '25000', quantity: 1 },
      ],
    });
    expect(d.payment_link_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(d.expired_at).toBeGreaterThanOrEqual(before + 3600);
    expect(d.expired_at).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 3600);
    expect(typeof d.created_at).toBe('number');
    const [row] = await sql(`select total_price::text, status, usage_count, environment from payment_links where id = ?`, [d.payment_link_id]);
    expect(row).toEqual({ total_price: '325000', status: 'Active', usage_count: 0, environment: 'sandbox' });
  });

  it('create: merchant_id of another merchant → MERCHANT_MISMATCH; no JWT or an API key → 401; total outside the order bounds → VALIDATION_FAILED', async () => {
    expectEnvelopeError(
      await http(gw.url, `${T}/merchant/payment-link`, { body: linkBody(a, { merchant_id: b.merchantId }), headers: bearer(a.token) }),
      'MERCHANT_MISMATCH',
    );
    expectEnvelopeError(await http(gw.url, `${T}/merchant/payment-link`, { body: linkBody(a) }), 'UNAUTHENTICATED');
    expectEnvelopeError(await http(gw.url, `${T}/merchant/payment-link`, { body: linkBody(a), headers: { 'api-key': a.sandboxKey } }), 'UNAUTHENTICATED');
    const small = await http(gw.url, `${T}/merchant/payment-link`, {
      body: linkBody(a, { products: [{ name: 'Gum', price: ORDER_MIN - 1, quantity: 1 }] }),
      headers: bearer(a.token),
    });
    expectEnvelopeError(small, 'VALIDATION_FAILED');
    expect(small.body.data.fields.products).toMatch(/total price/);
    const big = await http(gw.url, `${T}/merchant/payment-link`, {
      body: linkBody(a, { products: [{ name: 'Car', price: ORDER_MAX, quantity: 2 }] }),
      headers: bearer(a.token),
    });
    expectEnvelopeError(big, 'VALIDATION_FAILED');
    // merchant_id may be left out: the JWT names the merchant.
    const { merchant_id: _omit, ...noMerchant } = linkBody(a);
    expect((await http(gw.url, `${T}/merchant/payment-link`, { body: noMerchant, headers: bearer(a.token) })).status).toBe(201);
  });

  it('list: newest first, limit/offset, total; limit above 100 is refused, not clamped; environments are separate', async () => {
    const m = await merchant();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await createLink(m, { title: `Link ${i}` })).payment_link_id);
    await createLink(m, { title: 'Production link' }, P);

    // Newest first (created_at desc, then id desc for links made in the same millisecond).
    const newestFirst = (
      await sql<{ id: string }>(`select id from payment_links where merchant_id = ? and environment = 'sandbox' order by created_at desc, id desc`, [
        m.merchantId,
      ])
    ).map((r) => r.id);
    expect([...newestFirst].sort()).toEqual([...ids].sort());
    const all = await http(gw.url, `${T}/merchant/payment-link`, { headers: bearer(m.token) });
    expect(all.body.data).toMatchObject({ total: 5, limit: 20, offset: 0 });
    expect(all.body.data.items.map(linkId)).toEqual(newestFirst);
    const created = (all.body.data.items as { created_at: number }[]).map((l) => l.created_at);
    expect(created).toEqual([...created].sort((x, y) => y - x));
    expect(all.body.data.items[0]).toMatchObject({ total_price: '325000', status: 'Active', link: expect.stringContaining('/pay/') });

    const first = await http(gw.url, `${T}/merchant/payment-link?limit=2`, { headers: bearer(m.token) });
    expect(first.status).toBe(200);
    expect(first.body.data).toMatchObject({ total: 5, limit: 2, offset: 0 });
    expect(first.body.data.items.map(linkId)).toEqual(newestFirst.slice(0, 2));
    const middle = await http(gw.url, `${T}/merchant/payment-link?limit=2&offset=2`, { headers: bearer(m.token) });
    expect(middle.body.data.items.map(linkId)).toEqual(newestFirst.slice(2, 4));
    const last = await http(gw.url, `${T}/merchant/payment-link?limit=2&offset=4`, { headers: bearer(m.token) });
    expect(last.body.data.items.map(linkId)).toEqual(newestFirst.slice(4));
    const beyond = await http(gw.url, `${T}/merchant/payment-link?offset=10`, { headers: bearer(m.token) });
    expect(beyond.body.data).toMatchObject({ items: [], total: 5 });

    const max = await http(gw.url, `${T}/merchant/payment-link?limit=100`, { headers: bearer(m.token) });
    expect(max.status).toBe(200);
    for (const q of ['limit=1000', 'limit=101', 'limit=0', 'limit=abc', 'offset=-1', 'limit=1.5']) {
      const res = await http(gw.url, `${T}/merchant/payment-link?${q}`, { headers: bearer(m.token) });
      expectEnvelopeError(res, 'VALIDATION_FAILED');
    }

    const prod = await http(gw.url, `${P}/merchant/payment-link`, { headers: bearer(m.token) });
    expect(prod.body.data.total).toBe(1);
    expect(prod.body.data.items[0]).toMatchObject({ title: 'Production link', environment: 'production' });
    // Another merchant sees none of them.
    expect((await http(gw.url, `${T}/merchant/payment-link`, { headers: bearer(b.token) })).body.data.items.map(linkId)).not.toContain(ids[0]);
  });

  it('get, update (title, expiry restarted from now, status), delete → Inactive (idempotent) → open refused', async () => {
    const link = await createLink(a);
    const id = link.payment_link_id;
    const got = await http(gw.url, `${T}/merchant/payment-link/${id}`, { headers: bearer(a.token) });
    expect(got.body).toMatchObject({ status_code: 200, data: { payment_link_id: id, title: 'Batik Sale', status: 'Active' } });
    // The link lives in the path's environment only.
    expectEnvelopeError(await http(gw.url, `${P}/merchant/payment-link/${id}`, { headers: bearer(a.token) }), 'PAYMENT_LINK_NOT_FOUND');
    expectEnvelopeError(await http(gw.url, `${T}/merchant/payment-link/not-a-uuid`, { headers: bearer(a.token) }), 'PAYMENT_LINK_NOT_FOUND');

    const upd = await http(gw.url, `${T}/merchant/payment-link`, {
      method: 'PUT',
      body: { payment_link_id: id, title: 'Batik Sale (extended)', expiration_time: 7200 },
      headers: bearer(a.token),
    });
    expect(upd.status).toBe(200);
    expect(upd.body.data).toMatchObject({ title: 'Batik Sale (extended)', expiration_time: 7200, status: 'Active', total_price: '325000' });
    expect(upd.body.data.expired_at).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000) + 7200 - 5);

    const off = await http(gw.url, `${T}/merchant/payment-link`, {
      method: 'PUT',
      body: { payment_link_id: id, status: 'Inactive' },
      headers: bearer(a.token),
    });
    expect(off.body.data.status).toBe('Inactive');
    expectEnvelopeError(await open(id), 'PAYMENT_LINK_INACTIVE');
    const on = await http(gw.url, `${T}/merchant/payment-link`, { method: 'PUT', body: { payment_link_id: id, status: 'Active' }, headers: bearer(a.token) });
    expect(on.body.data.status).toBe('Active');
    expectEnvelopeError(
      await http(gw.url, `${T}/merchant/payment-link`, { method: 'PUT', body: { payment_link_id: id, status: 'Expired' }, headers: bearer(a.token) }),
      'VALIDATION_FAILED',
    );
    expectEnvelopeError(
      await http(gw.url, `${T}/merchant/payment-link`, { method: 'PUT', body: { payment_link_id: id }, headers: bearer(a.token) }),
      'VALIDATION_FAILED',
    );

    const del = await http(gw.url, `${T}/merchant/payment-link/${id}`, { method: 'DELETE', headers: bearer(a.token) });
    expect(del.body).toMatchObject({ status_code: 200, data: { payment_link_id: id, status: 'Inactive' } });
    const again = await http(gw.url, `${T}/merchant/payment-link/${id}`, { method: 'DELETE', headers: bearer(a.token) });
    expect(again.body).toMatchObject({ status_code: 200, data: { status: 'Inactive' } });

    const refused = await open(id);
    expect(refused.status).toBe(409);
    expectEnvelopeError(refused, 'PAYMENT_LINK_INACTIVE');
    expect((await http(gw.url, `${T}/payment-links/${id}/validate`)).body.data).toMatchObject({ status: 'Inactive', valid: false, unusable: 'inactive' });
    expect(await count(`orders where payment_link_id = ?`, [id])).toBe(0);
    expect((await sql(`select usage_count from payment_links where id = ?`, [id]))[0]!.usage_count).toBe(0);
  });

  it('expired link: reported Expired, open refused PAYMENT_LINK_EXPIRED, reactivation needs a new expiration_time', async () => {
    const { payment_link_id: id } = await createLink(a);
    await sql(`update payment_links set expires_at = now() - interval '1 second' where id = ?`, [id]);
    expect((await http(gw.url, `${T}/merchant/payment-link/${id}`, { headers: bearer(a.token) })).body.data.status).toBe('Expired');
    expect((await http(gw.url, `${T}/payment-links/${id}/validate`)).body.data).toMatchObject({
      status: 'Expired',
      valid: false,
      unusable: 'expired',
      remaining: 10,
    });
    const refused = await open(id);
    expect(refused.status).toBe(409);
    expectEnvelopeError(refused, 'PAYMENT_LINK_EXPIRED');

    expectEnvelopeError(
      await http(gw.url, `${T}/merchant/payment-link`, { method: 'PUT', body: { payment_link_id: id, status: 'Active' }, headers: bearer(a.token) }),
      'PAYMENT_LINK_EXPIRED',
    );
    const renewed = await http(gw.url, `${T}/merchant/payment-link`, {
      method: 'PUT',
      body: { payment_link_id: id, expiration_time: 600 },
      headers: bearer(a.token),
    });
    expect(renewed.body.data).toMatchObject({ status: 'Active', expiration_time: 600 });
    expect((await open(id)).status).toBe(201);
    expect(await count(`orders where payment_link_id = ?`, [id])).toBe(1);
  });

  it("another merchant's JWT cannot see, update or delete the link (PAYMENT_LINK_NOT_FOUND)", async () => {
    const { payment_link_id: id } = await createLink(a);
    expectEnvelopeError(await http(gw.url, `${T}/merchant/payment-link/${id}`, { headers: bearer(b.token) }), 'PAYMENT_LINK_NOT_FOUND');
    expectEnvelopeError(
      await http(gw.url, `${T}/merchant/payment-link`, {
        method: 'PUT',
        body: { payment_link_id: id, title: 'Hijacked', status: 'Inactive' },
        headers: bearer(b.token),
      }),
      'PAYMENT_LINK_NOT_FOUND',
    );
    expectEnvelopeError(await http(gw.url, `${T}/merchant/payment-link/${id}`, { method: 'DELETE', headers: bearer(b.token) }), 'PAYMENT_LINK_NOT_FOUND');
    const [row] = await sql(`select title, status from payment_links where id = ?`, [id]);
    expect(row).toEqual({ title: 'Batik Sale', status: 'Active' });
  });

  it('a viewer may read links but not change them', async () => {
    const em = gw.app.orm.em.fork();
    const ctx = {
      em,
      caller: { kind: 'dashboard' as const, merchantId: a.merchantId, userId: 'u', sessionId: 's', role: 'viewer' },
      environment: 'sandbox' as const,
      ip: '127.0.0.1',
      requestId: 'r',
    };
    const { title, expiration_time: expirationTime, max_usage: maxUsage, products } = linkBody(a);
    await expect(gw.app.paymentLinks.create(ctx, { title, expirationTime, maxUsage, products })).rejects.toMatchObject({ code: 'FORBIDDEN' });
    await expect(gw.app.paymentLinks.list(ctx, {})).resolves.toMatchObject({ limit: 20, offset: 0 });
  });
});

describe('public REST', () => {
  it('validate: status, title, products, total, remaining; unknown or malformed id → 404 envelope', async () => {
    const { payment_link_id: id } = await createLink(a, { max_usage: 3 });
    const v = await http(gw.url, `${T}/payment-links/${id}/validate`);
    expect(v.status).toBe(200);
    expect(v.body.data).toEqual({
      payment_link_id: id,
      status: 'Active',
      valid: true,
      unusable: null,
      title: 'Batik Sale',
      products: [
        { name: 'Batik shirt', price: '150000', quantity: 2 },
        { name: 'Scarf', price: '25000', quantity: 1 },
      ],
      total_price: '325000',
      currency: 'IDR',
      remaining: 3,
      usage_count: 0,
      max_usage: 3,
      expired_at: expect.any(Number),
    });
    expect((await open(id)).status).toBe(201);
    expect((await http(gw.url, `${T}/payment-links/${id}/validate`)).body.data).toMatchObject({ remaining: 2, usage_count: 1, valid: true, unusable: null });

    for (const bad of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid', "1'; drop table payment_links;--", 'x'.repeat(90)]) {
      const res = await http(gw.url, `${T}/payment-links/${encodeURIComponent(bad)}/validate`);
      expect(res.status).toBe(404);
      expectEnvelopeError(res, 'PAYMENT_LINK_NOT_FOUND');
    }
    // A sandbox link is not reachable under /mainnet.
    expectEnvelopeError(await http(gw.url, `${P}/payment-links/${id}/validate`), 'PAYMENT_LINK_NOT_FOUND');
    expectEnvelopeError(await open(id, P), 'PAYMENT_LINK_NOT_FOUND');
    expectEnvelopeError(await open('00000000-0000-4000-8000-000000000000'), 'PAYMENT_LINK_NOT_FOUND');
  });

  it('open: 201 with request (generated order_no), expired_at and a scoped api_key that works only for its own order', async () => {
    const { payment_link_id: id } = await createLink(a);
    const res = await open(id);
    expect(res.status).toBe(201);
    const d = res.body.data;
    expect(d.request).toMatchObject({
      merchant_id: a.merchantId,
      amount: '325000',
      currency: 'IDR',
      status: 'Created',
      source: 'payment_link',
      payment_link_id: id,
      name: null,
      email: null,
    });
    expect(d.request.order_no).toMatch(new RegExp(`^PL-${id.slice(0, 8)}-[0-9a-f]{12}$`));
    expect(d.expired_at).toBe(d.request.expired_at);
    expect(d.expired_at).toBeGreaterThan(Math.floor(Date.now() / 1000));
    expect(d.api_key).toMatch(/^ck_[0-9a-f-]{36}_[0-9a-f]{64}$/);

    const mine = await http(gw.url, `${T}/merchant/fiat/getOrder`, {
      body: { merchant_id: a.merchantId, order_no: d.request.order_no },
      headers: { 'api-key': d.api_key },
    });
    expect(mine.status).toBe(200);
    expect(mine.body.data.request).toMatchObject({ order_no: d.request.order_no, amount: '325000', payment_link_id: id });

    const other = (await open(id)).body.data;
    expect(other.request.order_no).not.toBe(d.request.order_no);
    expectEnvelopeError(
      await http(gw.url, `${T}/merchant/fiat/getOrder`, {
        body: { merchant_id: a.merchantId, order_no: other.request.order_no },
        headers: { 'api-key': d.api_key },
      }),
      'SCOPE_DENIED',
    );
    expectEnvelopeError(
      await http(gw.url, `${P}/merchant/fiat/getOrder`, {
        body: { merchant_id: a.merchantId, order_no: d.request.order_no },
        headers: { 'api-key': d.api_key },
      }),
    );

    const before = await count('orders');
    const create = await http(gw.url, `${T}/merchant/fiat/order`, {
      body: { merchant_id: a.merchantId, order_no: 'SNEAKY-1', amount: '150000' },
      headers: { 'api-key': d.api_key },
    });
    expectEnvelopeError(create);
    expect(['SCOPE_DENIED', 'INVALID_API_KEY', 'FORBIDDEN']).toContain(create.body.data.code);
    expect(await count('orders')).toBe(before);
  });

  it('max_usage 1 and 100 concurrent opens: exactly one order, 99 × 409 PAYMENT_LINK_EXHAUSTED, usage_count 1', async () => {
    const { payment_link_id: id } = await createLink(a, { max_usage: 1 });
    const started = Date.now();
    const results = await Promise.all(Array.from({ length: 100 }, () => open(id)));
    const ms = Date.now() - started;
    const ok = results.filter((r) => r.status === 201);
    const refused = results.filter((r) => r.status !== 201);
    expect(ok).toHaveLength(1);
    expect(refused).toHaveLength(99);
    for (const r of refused) {
      expect(r.status).toBe(409);
      expectEnvelopeError(r, 'PAYMENT_LINK_EXHAUSTED');
    }
    expect((await sql(`select usage_count, max_usage from payment_links where id = ?`, [id]))[0]).toEqual({ usage_count: 1, max_usage: 1 });
    expect(await count(`orders where payment_link_id = ?`, [id])).toBe(1);
    expect((await http(gw.url, `${T}/payment-links/${id}/validate`)).body.data).toMatchObject({
      status: 'Active',
      remaining: 0,
      valid: false,
      unusable: 'exhausted',
    }); // says why
    console.log(`100 concurrent opens of a single-use link: ${ms} ms`);
  });

  it('max_usage 5 and 30 concurrent opens: exactly 5 orders', async () => {
    const { payment_link_id: id } = await createLink(a, { max_usage: 5 });
    const results = await Promise.all(Array.from({ length: 30 }, () => open(id)));
    expect(results.filter((r) => r.status === 201)).toHaveLength(5);
    expect(results.filter((r) => r.status === 409 && r.body.data.code === 'PAYMENT_LINK_EXHAUSTED')).toHaveLength(25);
    expect((await sql(`select usage_count from payment_links where id = ?`, [id]))[0]!.usage_count).toBe(5);
    expect(await count(`orders where payment_link_id = ?`, [id])).toBe(5);
    const orderNos = results.filter((r) => r.status === 201).map((r) => r.body.data.request.order_no);
    expect(new Set(orderNos).size).toBe(5);
  });

  it('the database refuses usage_count > max_usage even outside the service', async () => {
    const { payment_link_id: id } = await createLink(a, { max_usage: 1 });
    await expect(sql(`update payment_links set usage_count = 2 where id = ?`, [id])).rejects.toThrow(/check constraint/);
  });
});

describe('GraphQL (codegen documents)', () => {
  const input = {
    title: 'Kopi bundle',
    expirationTime: 3600,
    maxUsage: 2,
    products: [
      { name: 'Kopi Gayo 250g', price: '85000', quantity: 2 },
      { name: 'Drip bag', price: '5000', quantity: 10 },
    ],
  };

  it('paymentLinks is a connection: pages of `first` with cursors give every link of the environment once, newest first', async () => {
    await Promise.all(
      [1, 2, 3].map((i) => gql(gw.url, CreatePaymentLinkDocument, { environment: 'SANDBOX', input: { ...input, title: `Paged ${i}` } }, bearer(a.token))),
    );
    const seen: { id: string; createdAt: string }[] = [];
    let after: string | null = null;
    let total = 0;
    for (let pages = 0; pages < 100; pages++) {
      const r: GqlResult<PaymentLinksQuery> = await gql(gw.url, PaymentLinksDocument, { environment: 'SANDBOX', first: 2, after }, bearer(a.token));
      expect(r.errors).toBeUndefined();
      const c = r.data!.paymentLinks;
      total = c.totalCount;
      expect(c.pageInfo.hasPreviousPage).toBe(after !== null);
      seen.push(...c.edges.map((e) => ({ id: e.node.id, createdAt: e.node.createdAt as string })));
      if (!c.pageInfo.hasNextPage) break;
      expect(c.pageInfo.endCursor).toBe(c.edges[c.edges.length - 1]!.cursor);
      after = c.pageInfo.endCursor;
    }
    expect(new Set(seen.map((l) => l.id)).size).toBe(seen.length);
    expect(seen.length).toBe(total);
    const rows = await gw.app.orm.em
      .fork()
      .execute<{ n: string }[]>(`select count(*) as n from payment_links where merchant_id = ? and environment = 'sandbox'`, [a.merchantId]);
    expect(total).toBe(Number(rows[0]!.n));
    const times = seen.map((l) => Date.parse(l.createdAt));
    expect(times).toEqual([...times].sort((x, y) => y - x));
  });

  it('create, list, get, update, delete, validate and open', async () => {
    const created = await gql(gw.url, CreatePaymentLinkDocument, { environment: 'SANDBOX', input }, bearer(a.token));
    expect(created.errors).toBeUndefined();
    const link = created.data!.createPaymentLink;
    expect(link).toMatchObject({
      merchantId: a.merchantId,
      environment: 'SANDBOX',
      totalPrice: '220000',
      currency: 'IDR',
      status: 'ACTIVE',
      usageCount: 0,
      maxUsage: 2,
      remaining: 2,
      expirationTime: 3600,
    });
    expect(link.link).toBe(`${gw.app.config.PUBLIC_BASE_URL}/pay/${link.id}`);

    const list = await gql(gw.url, PaymentLinksDocument, { environment: 'SANDBOX', first: 1 }, bearer(a.token));
    expect(list.data!.paymentLinks).toMatchObject({ pageInfo: { hasNextPage: true, hasPreviousPage: false }, edges: [{ node: { id: link.id } }] });
    expect(list.data!.paymentLinks.totalCount).toBeGreaterThan(1);
    expect((await gql(gw.url, PaymentLinksDocument, { environment: 'SANDBOX', first: 1000 }, bearer(a.token))).errors?.[0]?.extensions?.code).toBe(
      'VALIDATION_FAILED',
    );
    expect(
      (await gql(gw.url, PaymentLinksDocument, { environment: 'SANDBOX', after: 'bm90LWEtY3Vyc29y' }, bearer(a.token))).errors?.[0]?.extensions?.code,
    ).toBe('BAD_USER_INPUT');
    expect(
      (await gql(gw.url, PaymentLinksDocument, { environment: 'PRODUCTION' }, bearer(a.token))).data!.paymentLinks.edges.map((e) => e.node.id),
    ).not.toContain(link.id);
    expect(
      (await gql(gw.url, PaymentLinksDocument, { environment: 'SANDBOX', first: 100 }, bearer(b.token))).data!.paymentLinks.edges.map((e) => e.node.id),
    ).not.toContain(link.id);

    expect((await gql(gw.url, PaymentLinkDocument, { environment: 'SANDBOX', id: link.id }, bearer(a.token))).data!.paymentLink.title).toBe('Kopi bundle');
    const upd = await gql(
      gw.url,
      UpdatePaymentLinkDocument,
      { environment: 'SANDBOX', input: { id: link.id, title: 'Kopi bundle v2', expirationTime: 120 } },
      bearer(a.token),
    );
    expect(upd.data!.updatePaymentLink).toMatchObject({ title: 'Kopi bundle v2', expirationTime: 120, status: 'ACTIVE' });

    const v = await gql(gw.url, ValidatePaymentLinkDocument, { id: link.id });
    expect(v.data!.validatePaymentLink).toMatchObject({
      id: link.id,
      status: 'ACTIVE',
      valid: true,
      remaining: 2,
      totalPrice: '220000',
      products: input.products,
    });

    const opened = await gql(gw.url, OpenPaymentLinkDocument, { id: link.id });
    expect(opened.errors).toBeUndefined();
    const o = opened.data!.openPaymentLink;
    expect(o.order).toMatchObject({
      merchantId: a.merchantId,
      amount: '220000',
      currency: 'IDR',
      status: 'Created',
      source: 'payment_link',
      paymentLinkId: link.id,
    });
    expect(o.order.orderNo).toMatch(new RegExp(`^PL-${link.id.slice(0, 8)}-[0-9a-f]{12}$`));
    expect(o.checkoutKey).toMatch(/^ck_[0-9a-f-]{36}_[0-9a-f]{64}$/);
    expect(o.expiresAt).toBe(o.order.expiresAt);
    // The GraphQL key is the same kind of credential as the REST api_key.
    const viaKey = await http(gw.url, `${T}/merchant/fiat/getOrder`, {
      body: { merchant_id: a.merchantId, order_no: o.order.orderNo },
      headers: { 'api-key': o.checkoutKey },
    });
    expect(viaKey.status).toBe(200);

    const del = await gql(gw.url, DeletePaymentLinkDocument, { environment: 'SANDBOX', id: link.id }, bearer(a.token));
    expect(del.data!.deletePaymentLink.status).toBe('INACTIVE');
    expect((await gql(gw.url, OpenPaymentLinkDocument, { id: link.id })).errors?.[0]?.extensions?.code).toBe('PAYMENT_LINK_INACTIVE');
    expect((await gql(gw.url, ValidatePaymentLinkDocument, { id: link.id })).data!.validatePaymentLink).toMatchObject({
      status: 'INACTIVE',
      valid: false,
      remaining: 1,
    });
  });

  it('exhausted, expired, unknown and malformed ids give the same codes as REST', async () => {
    const link = (await gql(gw.url, CreatePaymentLinkDocument, { environment: 'SANDBOX', input: { ...input, maxUsage: 1 } }, bearer(a.token))).data!
      .createPaymentLink;
    expect((await gql(gw.url, OpenPaymentLinkDocument, { id: link.id })).errors).toBeUndefined();
    expect((await gql(gw.url, OpenPaymentLinkDocument, { id: link.id })).errors?.[0]?.extensions?.code).toBe('PAYMENT_LINK_EXHAUSTED');
    await sql(`update payment_links set expires_at = now() - interval '1 minute' where id = ?`, [link.id]);
    expect((await gql(gw.url, OpenPaymentLinkDocument, { id: link.id })).errors?.[0]?.extensions?.code).toBe('PAYMENT_LINK_EXPIRED');
    expect((await gql(gw.url, ValidatePaymentLinkDocument, { id: link.id })).data!.validatePaymentLink.status).toBe('EXPIRED');
    expect((await gql(gw.url, ValidatePaymentLinkDocument, { id: 'nope' })).errors?.[0]?.extensions?.code).toBe('PAYMENT_LINK_NOT_FOUND');
    expect((await gql(gw.url, OpenPaymentLinkDocument, { id: '00000000-0000-4000-8000-000000000000' })).errors?.[0]?.extensions?.code).toBe(
      'PAYMENT_LINK_NOT_FOUND',
    );
  });

  it('dashboard fields need the JWT of the owning merchant; validation errors match REST', async () => {
    const link = (await gql(gw.url, CreatePaymentLinkDocument, { environment: 'SANDBOX', input }, bearer(a.token))).data!.createPaymentLink;
    expect((await gql(gw.url, CreatePaymentLinkDocument, { environment: 'SANDBOX', input })).errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    expect((await gql(gw.url, CreatePaymentLinkDocument, { environment: 'SANDBOX', input }, { 'api-key': a.sandboxKey })).errors?.[0]?.extensions?.code).toBe(
      'FORBIDDEN',
    );
    expect((await gql(gw.url, PaymentLinkDocument, { environment: 'SANDBOX', id: link.id }, bearer(b.token))).errors?.[0]?.extensions?.code).toBe(
      'PAYMENT_LINK_NOT_FOUND',
    );
    expect(
      (await gql(gw.url, UpdatePaymentLinkDocument, { environment: 'SANDBOX', input: { id: link.id, status: 'INACTIVE' } }, bearer(b.token))).errors?.[0]
        ?.extensions?.code,
    ).toBe('PAYMENT_LINK_NOT_FOUND');
    expect((await gql(gw.url, DeletePaymentLinkDocument, { environment: 'SANDBOX', id: link.id }, bearer(b.token))).errors?.[0]?.extensions?.code).toBe(
      'PAYMENT_LINK_NOT_FOUND',
    );
    expect((await gql(gw.url, PaymentLinkDocument, { environment: 'PRODUCTION', id: link.id }, bearer(a.token))).errors?.[0]?.extensions?.code).toBe(
      'PAYMENT_LINK_NOT_FOUND',
    );
    expect((await sql(`select status from payment_links where id = ?`, [link.id]))[0]!.status).toBe('Active');

    const bad = await gql(
      gw.url,
      CreatePaymentLinkDocument,
      { environment: 'SANDBOX', input: { ...input, products: [{ name: 'x', price: '0', quantity: 1 }] } },
      bearer(a.token),
    );
    expect(bad.errors?.[0]?.extensions).toMatchObject({ code: 'VALIDATION_FAILED', fields: { 'products.0.price': expect.any(String) } });
    expect(
      (await gql(gw.url, UpdatePaymentLinkDocument, { environment: 'SANDBOX', input: { id: link.id, status: 'EXPIRED' } }, bearer(a.token))).errors?.[0]
        ?.extensions?.code,
    ).toBe('VALIDATION_FAILED');
  });
});

// Codes a malformed body may get: the service's validation, or the transport's own refusals
// (MALFORMED_JSON for a forbidden __proto__ key, BAD_REQUEST for NUL characters).
describe('malformed input (fast-check, fixed seed)', () => {
  const valid = () => linkBody(a);
  const notInt = fc.oneof(
    fc.string(),
    fc.boolean(),
    fc.constant(null),
    fc.double({ noInteger: true }),
    fc.array(fc.integer(), { maxLength: 2 }),
    fc.object({ maxDepth: 1 }),
  );
  const notString = fc.oneof(fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.string(), { maxLength: 2 }), fc.object({ maxDepth: 1 }));
  const badTitle = fc.oneof(notString, fc.constantFrom('', '   ', 'a'.repeat(201), 'tab\tin title', 'nul\u0000'));
  const badExpiration = fc.oneof(notInt, fc.integer({ min: -1e9, max: 59 }), fc.integer({ min: 365 * 86400 + 1, max: 2 ** 31 }));
  const badMaxUsage = fc.oneof(notInt, fc.integer({ min: -1e6, max: 0 }), fc.integer({ min: 1_000_001, max: 2 ** 31 }));
  const goodProduct = { name: 'Shirt', price: 150000, quantity: 1 };
  const badProduct = fc.oneof(
    fc.record({ name: badTitle, price: fc.constant(150000), quantity: fc.constant(1) }),
    fc.record({
      name: fc.constant('Shirt'),
      price: fc.oneof(
        fc.integer({ min: -1e9, max: 0 }),
        fc.double({ noInteger: true, min: 0.001, max: 1e6 }),
        fc.constantFrom('abc', '01', '-5', '', '1e5', null, true),
      ),
      quantity: fc.constant(1),
    }),
    fc.record({
      name: fc.constant('Shirt'),
      price: fc.constant(150000),
      quantity: fc.oneof(notInt, fc.integer({ min: -100, max: 0 }), fc.integer({ min: 10_001, max: 1e9 })),
    }),
    fc.oneof(fc.integer(), fc.string(), fc.constant(null)),
  );
  const badProducts = fc.oneof(
    notString.filter((v) => !Array.isArray(v)),
    fc.constant([]),
    fc.constant(Array.from({ length: 51 }, () => goodProduct)),
    fc.tuple(badProduct, fc.nat(3)).map(([p, i]) => Array.from({ length: i + 1 }, (_, k) => (k === i ? p : goodProduct))),
    fc.constant([{ name: 'Too big', price: ORDER_MAX, quantity: 2 }]),
    fc.constant([{ name: 'Too small', price: 1, quantity: 1 }]),
  );
  const field = <K extends string>(key: K, bad: fc.Arbitrary<unknown>) => bad.map((v) => ({ ...valid(), [key]: v }));
  const without = fc.constantFrom('title', 'expiration_time', 'max_usage', 'products').map((k) => {
    const body: Record<string, unknown> = valid();
    delete body[k];
    return body;
  });
  const badCreate = fc.oneof(
    field('title', badTitle),
    field('expiration_time', badExpiration),
    field('max_usage', badMaxUsage),
    field('products', badProducts),
    field('merchant_id', fc.oneof(notString, fc.string({ maxLength: 40 }), fc.uuid())),
    without,
    fc.oneof(fc.constant(null), fc.integer(), fc.string(), fc.array(fc.anything(), { maxLength: 3 })),
  );

  it('≥150 malformed create bodies → 4xx envelope, nothing written', async () => {
    const linksBefore = await count('payment_links');
    const ordersBefore = await count('orders');
    await fc.assert(
      fc.asyncProperty(badCreate, async (body) => {
        const res = await http(gw.url, `${T}/merchant/payment-link`, {
          raw: JSON.stringify(body),
          headers: { 'content-type': 'application/json', ...bearer(a.token) },
        });
        expectEnvelopeError(res);
        expect(['VALIDATION_FAILED', 'MERCHANT_MISMATCH', 'MALFORMED_JSON', 'BAD_REQUEST']).toContain(res.body.data.code);
      }),
      { seed: 20261121, numRuns: 150 },
    );
    expect(await count('payment_links')).toBe(linksBefore);
    expect(await count('orders')).toBe(ordersBefore);
  });

  it('≥100 malformed update bodies → 4xx envelope, the link row untouched', async () => {
    const { payment_link_id: id } = await createLink(a);
    const snapshot = async () => (await sql(`select * from payment_links where id = ?`, [id]))[0];
    const before = await snapshot();
    const badUpdate = fc.oneof(
      fc.constant({ payment_link_id: id }),
      fc.record({ payment_link_id: fc.constant(id), title: badTitle }),
      fc.record({ payment_link_id: fc.constant(id), expiration_time: badExpiration }),
      fc.record({ payment_link_id: fc.constant(id), status: fc.oneof(notString, fc.constantFrom('Expired', 'active', 'ACTIVE', 'Deleted', '')) }),
      fc.record({ payment_link_id: fc.oneof(notString, fc.string({ maxLength: 40 }), fc.uuid()), title: fc.constant('New title') }),
      fc.oneof(fc.constant(null), fc.integer(), fc.string(), fc.array(fc.anything(), { maxLength: 3 })),
    );
    await fc.assert(
      fc.asyncProperty(badUpdate, async (body) => {
        const res = await http(gw.url, `${T}/merchant/payment-link`, {
          method: 'PUT',
          raw: JSON.stringify(body),
          headers: { 'content-type': 'application/json', ...bearer(a.token) },
        });
        expectEnvelopeError(res);
        expect(['VALIDATION_FAILED', 'PAYMENT_LINK_NOT_FOUND', 'MALFORMED_JSON', 'BAD_REQUEST']).toContain(res.body.data.code);
      }),
      { seed: 20261122, numRuns: 100 },
    );
    expect(await snapshot()).toEqual(before);
  });

  it('≥100 malformed open bodies and raw non-JSON → 4xx envelope, no order and no use taken', async () => {
    const { payment_link_id: id } = await createLink(a);
    const ordersBefore = await count('orders');
    const badOpen = fc.oneof(
      fc.record({ payment_link_id: notString }),
      fc.record({ payment_link_id: fc.oneof(fc.string({ maxLength: 120 }), fc.uuid(), fc.constant(id.toUpperCase() + 'x'), fc.constant(`${id} `)) }),
      fc.record({ link_id: fc.constant(id) }),
      fc.oneof(fc.constant(null), fc.integer(), fc.string(), fc.array(fc.constant(id), { maxLength: 2 })),
    );
    await fc.assert(
      fc.asyncProperty(badOpen, async (body) => {
        const res = await http(gw.url, `${T}/order/payment-link`, { raw: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
        expectEnvelopeError(res);
        expect(['VALIDATION_FAILED', 'PAYMENT_LINK_NOT_FOUND', 'MALFORMED_JSON', 'BAD_REQUEST']).toContain(res.body.data.code);
      }),
      { seed: 20261123, numRuns: 100 },
    );
    const notJson = fc.string({ minLength: 1, maxLength: 40 }).filter((s) => {
      try {
        JSON.parse(s);
        return false;
      } catch {
        return true;
      }
    });
    await fc.assert(
      fc.asyncProperty(notJson, async (raw) => {
        const res = await http(gw.url, `${T}/order/payment-link`, { raw, headers: { 'content-type': 'application/json' } });
        expectEnvelopeError(res, 'MALFORMED_JSON');
      }),
      { seed: 20261124, numRuns: 50 },
    );
    expect(await count('orders')).toBe(ordersBefore);
    expect((await sql(`select usage_count from payment_links where id = ?`, [id]))[0]!.usage_count).toBe(0);
  });
});
