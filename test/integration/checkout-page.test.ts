/**
 * The checkout pages without a browser: the request log never holds a checkout key (captured from the
 * real logger the process uses), the page's weight budget, its security headers, and the language pick.
 */
import { Writable } from 'node:stream';
import { pickLang, renderShell } from '../../src/checkout/checkout.page';
import { createLogger, redactUrl } from '../../src/http/logger';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { http } from '../support/http';

const T = '/api/v2/testnet';
const lines: string[] = [];
let gw: TestGateway;
let m: Awaited<ReturnType<typeof createMerchant>>;

beforeAll(async () => {
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  gw = await startTestGateway({ LOG_LEVEL: 'info' }, { log: createLogger('info', sink) });
  m = await createMerchant(gw.app);
});
afterAll(() => gw?.close());

async function order() {
  const r = await http(gw.url, `${T}/merchant/fiat/order`, { body: { merchant_id: m.merchantId, order_no: `LOG-${Date.now()}-${Math.random()}`, amount: '150000' }, headers: { 'api-key': m.sandboxKey } });
  expect(r.status).toBe(201);
  return { url: r.body.data.url as string, key: r.body.data.key as string, orderNo: r.body.data.request.order_no as string };
}

describe('request log', () => {
  it('holds no checkout key: query strings are redacted, key headers too (the request lines are there)', async () => {
    const o = await order();
    const orderId = o.key.split('_')[1]!;
    const before = lines.length;
    expect((await http(gw.url, new URL(o.url).pathname + new URL(o.url).search)).status).toBe(200);
    expect((await http(gw.url, `/checkout/${orderId}/state`, { headers: { 'x-checkout-key': o.key } })).status).toBe(200);
    expect((await http(gw.url, `${T}/merchant/fiat/getOrder`, { body: { merchant_id: m.merchantId, order_no: o.orderNo }, headers: { 'api-key': o.key } })).status).toBe(200);
    expect((await http(gw.url, `${T}/pgqr/fiat/qr?merchant_id=${m.merchantId}&key=${o.key}`)).status).toBeGreaterThanOrEqual(400);
    const logged = lines.slice(before);
    const secret = o.key.split('_')[2]!;
    expect(logged.filter((l) => l.includes(`/checkout/${orderId}?key=[redacted]`)).length).toBeGreaterThan(0);
    expect(logged.filter((l) => l.includes('/pgqr/fiat/qr?merchant_id=[redacted]&key=[redacted]')).length).toBeGreaterThan(0);
    expect(logged.filter((l) => l.includes(secret))).toEqual([]);
  });

  it('redactUrl keeps the path and the parameter names only', () => {
    expect(redactUrl('/checkout/abc?key=ck_1_2&lang=en')).toBe('/checkout/abc?key=[redacted]&lang=[redacted]');
    expect(redactUrl('/healthz')).toBe('/healthz');
    expect(redactUrl('/x?')).toBe('/x?');
  });
});

describe('return URLs (success_url, cancel_url, auto_redirect)', () => {
  const count = async (orderNo: string) => (await gw.app.orm.em.fork().execute(`select count(*)::int as n from orders where order_no = ?`, [orderNo]))[0].n as number;
  it('are stored on the order; bad, over-long and (in production) plain-http URLs are refused and write nothing', async () => {
    const ok = `RET-${Date.now()}`;
    const r = await http(gw.url, `${T}/merchant/fiat/order`, {
      body: { merchant_id: m.merchantId, order_no: ok, amount: '150000', success_url: 'http://shop.test/ok', cancel_url: 'https://shop.test/cart', auto_redirect: true },
      headers: { 'api-key': m.sandboxKey },
    });
    expect(r.status).toBe(201);
    const [row] = await gw.app.orm.em.fork().execute(`select success_url, cancel_url, auto_redirect from orders where order_no = ?`, [ok]);
    expect(row).toEqual({ success_url: 'http://shop.test/ok', cancel_url: 'https://shop.test/cart', auto_redirect: true });
    const refuse = async (base: string, key: string, extra: Record<string, unknown>, field: string) => {
      const no = `RET-BAD-${Date.now()}-${Math.random()}`;
      const res = await http(gw.url, `${base}/merchant/fiat/order`, { body: { merchant_id: m.merchantId, order_no: no, amount: '150000', ...extra }, headers: { 'api-key': key } });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ status_code: 400, data: { code: 'VALIDATION_FAILED', fields: { [field]: expect.any(String) } } });
      expect(await count(no)).toBe(0);
    };
    await refuse(T, m.sandboxKey, { success_url: 'javascript:alert(1)' }, 'success_url');
    await refuse(T, m.sandboxKey, { cancel_url: `https://shop.test/${'a'.repeat(2100)}` }, 'cancel_url');
    await refuse(T, m.sandboxKey, { auto_redirect: 'yes' }, 'auto_redirect');
    await refuse('/api/v2/mainnet', m.productionKey, { success_url: 'http://shop.test/ok' }, 'success_url');
  });

  it('a payment link passes its return URLs to every order opened from it', async () => {
    const login = await http(gw.url, '/api/v2/auth/login', { body: { email: m.email, password: m.password, user_type: 'merchant' } });
    const link = await http(gw.url, `${T}/merchant/payment-link`, {
      body: { title: 'Sale', expiration_time: 3600, max_usage: 5, products: [{ name: 'Kain', price: 150000, quantity: 1 }], success_url: 'https://shop.test/ok', auto_redirect: true },
      headers: { authorization: `Bearer ${login.body.data.token}` },
    });
    expect(link.status).toBe(201);
    const opened = await http(gw.url, `${T}/order/payment-link`, { body: { payment_link_id: link.body.data.payment_link_id } });
    expect(opened.status).toBe(201);
    const [row] = await gw.app.orm.em.fork().execute(`select success_url, cancel_url, auto_redirect from orders where order_no = ?`, [opened.body.data.request.order_no]);
    expect(row).toEqual({ success_url: 'https://shop.test/ok', cancel_url: null, auto_redirect: true });
  });
});

describe('rate limit', () => {
  it('the pages and the state read spend the per-IP public budget (429 with a message, not a render)', async () => {
    const small = await startTestGateway({ RATE_LIMIT_PUBLIC_PER_MIN: '2' });
    try {
      const path = '/pay/00000000-0000-4000-8000-000000000000';
      expect((await http(small.url, path)).status).toBe(404);
      expect((await http(small.url, path)).status).toBe(404);
      const third = await http(small.url, path);
      expect(third.status).toBe(429);
      expect(third.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
      expect((await http(small.url, '/checkout/00000000-0000-4000-8000-000000000000/state', { headers: { 'x-checkout-key': 'x' } })).status).toBe(429);
    } finally {
      await small.close();
    }
  });
});

describe('page', () => {
  it('HTML + CSS + scripts weigh at most 60 KB uncompressed; the page carries its security headers', async () => {
    const o = await order();
    const page = await http(gw.url, new URL(o.url).pathname + new URL(o.url).search);
    const csp = page.headers.get('content-security-policy')!;
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:/);
    expect(page.headers.get('referrer-policy')).toBe('no-referrer');
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(page.text).not.toMatch(/<script>(?!<\/script>)|<script\s+(?!src=|type="application\/json")/);
    let total = Buffer.byteLength(page.text);
    for (const src of page.text.match(/(?:src|href)="(\/checkout\/assets\/[^"]+)"/g)!.map((s) => s.split('"')[1]!)) {
      const a = await http(gw.url, src);
      expect(a.status).toBe(200);
      total += Buffer.byteLength(a.text);
    }
    console.log(`checkout page weight: ${total} bytes`);
    expect(total).toBeLessThanOrEqual(60 * 1024);
    expect((await http(gw.url, '/checkout/assets/..%2Fcheckout.page.ts')).status).toBe(404);
  });

  it('boot data is inserted literally: $-patterns and </script> in merchant strings stay text', () => {
    const html = renderShell({ kind: 'link', lang: 'id', env: 'testnet', linkId: 'x', merchant: `A$'$&$\`</script><script>alert(1)</script>` }, 'T');
    expect(html).toContain('A$&#39;$&#38;$`&#60;/script&#62;&#60;script&#62;alert(1)&#60;/script&#62;');
    const data = /<script type="application\/json" id="boot">(.*?)<\/script>/s.exec(html)![1]!;
    expect(JSON.parse(data).merchant).toBe(`A$'$&$\`</script><script>alert(1)</script>`);
    expect(html.match(/<script/g)).toHaveLength(3); // the data block and the two static scripts
  });

  it('language: ?lang wins, then Accept-Language by q, then Indonesian', () => {
    expect(pickLang(undefined, undefined)).toBe('id');
    expect(pickLang(undefined, 'en-GB,en;q=0.9')).toBe('en');
    expect(pickLang(undefined, 'fr-FR,en;q=0.5,id;q=0.8')).toBe('id');
    expect(pickLang(undefined, 'fr-FR,de')).toBe('id');
    expect(pickLang('en', 'id')).toBe('en');
    expect(pickLang('xx', 'en')).toBe('en');
    expect(pickLang(undefined, 'en;q=0')).toBe('id');
  });
});
