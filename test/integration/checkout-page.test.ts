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
import { bearer, gql } from '../support/graphql';
import { CreatePaymentLinkDocument, LoginDocument, PaymentLinkDocument, UpdateMerchantSettingsDocument } from '../generated/graphql';
import { internalContext } from '../../src/common/context';
import { MerchantService } from '../../src/modules/merchants/merchant.service';

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
  const r = await http(gw.url, `${T}/merchant/fiat/order`, {
    body: { merchant_id: m.merchantId, order_no: `LOG-${Date.now()}-${Math.random()}`, amount: '150000' },
    headers: { 'api-key': m.sandboxKey },
  });
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
    expect(
      (await http(gw.url, `${T}/merchant/fiat/getOrder`, { body: { merchant_id: m.merchantId, order_no: o.orderNo }, headers: { 'api-key': o.key } })).status,
    ).toBe(200);
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
  const count = async (orderNo: string) =>
    (await gw.app.orm.em.fork().execute(`select count(*)::int as n from orders where order_no = ?`, [orderNo]))[0].n as number;
  it('are stored on the order; bad, over-long and (in production) plain-http URLs are refused and write nothing', async () => {
    const ok = `RET-${Date.now()}`;
    const r = await http(gw.url, `${T}/merchant/fiat/order`, {
      body: {
        merchant_id: m.merchantId,
        order_no: ok,
        amount: '150000',
        success_url: 'http://shop.test/ok',
        cancel_url: 'https://shop.test/cart',
        auto_redirect: true,
      },
      headers: { 'api-key': m.sandboxKey },
    });
    expect(r.status).toBe(201);
    const [row] = await gw.app.orm.em.fork().execute(`select success_url, cancel_url, auto_redirect from orders where order_no = ?`, [ok]);
    expect(row).toEqual({ success_url: 'http://shop.test/ok', cancel_url: 'https://shop.test/cart', auto_redirect: true });
    const refuse = async (base: string, key: string, extra: Record<string, unknown>, field: string) => {
      const no = `RET-BAD-${Date.now()}-${Math.random()}`;
      const res = await http(gw.url, `${base}/merchant/fiat/order`, {
        body: { merchant_id: m.merchantId, order_no: no, amount: '150000', ...extra },
        headers: { 'api-key': key },
      });
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
      body: {
        title: 'Sale',
        expiration_time: 3600,
        max_usage: 5,
        products: [{ name: 'Kain', price: 150000, quantity: 1 }],
        success_url: 'https://shop.test/ok',
        auto_redirect: true,
      },
      headers: { authorization: `Bearer ${login.body.data.token}` },
    });
    expect(link.status).toBe(201);
    // The link's own record shows what its orders will inherit (REST and GraphQL).
    expect(link.body.data).toMatchObject({ success_url: 'https://shop.test/ok', cancel_url: null, auto_redirect: true });
    const id = link.body.data.payment_link_id as string;
    const got = await http(gw.url, `${T}/merchant/payment-link/${id}`, { headers: { authorization: `Bearer ${login.body.data.token}` } });
    expect(got.body.data).toMatchObject({ payment_link_id: id, success_url: 'https://shop.test/ok', cancel_url: null, auto_redirect: true });
    const viaGql = await gql(gw.url, PaymentLinkDocument, { environment: 'SANDBOX', id }, bearer(login.body.data.token));
    expect(viaGql.data!.paymentLink).toMatchObject({ id, successUrl: 'https://shop.test/ok', cancelUrl: null, autoRedirect: true });
    const opened = await http(gw.url, `${T}/order/payment-link`, { body: { payment_link_id: id } });
    expect(opened.status).toBe(201);
    const [row] = await gw.app.orm.em
      .fork()
      .execute(`select success_url, cancel_url, auto_redirect from orders where order_no = ?`, [opened.body.data.request.order_no]);
    expect(row).toEqual({ success_url: 'https://shop.test/ok', cancel_url: null, auto_redirect: true });
    // ...and the checkout of that order offers the way back.
    const state = await http(gw.url, `/checkout/${opened.body.data.api_key.split('_')[1]}/state`, { headers: { 'x-checkout-key': opened.body.data.api_key } });
    expect(state.body.data.order).toMatchObject({ success_url: 'https://shop.test/ok', cancel_url: null, auto_redirect: true });
  });

  it('GraphQL: a link created with return URLs shows them; one without shows null and false', async () => {
    const token = (await gql(gw.url, LoginDocument, { email: m.email, password: m.password })).data!.login.token;
    const input = { title: 'Kopi', expirationTime: 3600, maxUsage: 2, products: [{ name: 'Kopi Gayo', price: '85000', quantity: 2 }] };
    const withUrls = await gql(
      gw.url,
      CreatePaymentLinkDocument,
      { environment: 'SANDBOX', input: { ...input, successUrl: 'https://shop.test/thanks', cancelUrl: 'https://shop.test/cart', autoRedirect: false } },
      bearer(token),
    );
    expect(withUrls.errors).toBeUndefined();
    expect(withUrls.data!.createPaymentLink).toMatchObject({
      successUrl: 'https://shop.test/thanks',
      cancelUrl: 'https://shop.test/cart',
      autoRedirect: false,
    });
    const without = await gql(gw.url, CreatePaymentLinkDocument, { environment: 'SANDBOX', input }, bearer(token));
    expect(without.data!.createPaymentLink).toMatchObject({ successUrl: null, cancelUrl: null, autoRedirect: false });
  });
});

describe('merchant logo (logo_url / logoUrl)', () => {
  const settings = (token: string, body: unknown, raw?: string) =>
    http(gw.url, '/api/v2/merchant/settings', {
      method: 'PUT',
      ...(raw !== undefined
        ? { raw, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } }
        : { body, headers: { authorization: `Bearer ${token}` } }),
    });
  const stored = async (merchantId: string) =>
    ((await gw.app.orm.em.fork().execute(`select settings from merchants where id = ?`, [merchantId]))[0].settings as Record<string, unknown>).logoUrl;

  it('REST and GraphQL set, show and clear it; bad URLs, unknown fields and non-JSON are 400 and change nothing; API keys cannot', async () => {
    const own = await createMerchant(gw.app);
    const token = (await http(gw.url, '/api/v2/auth/login', { body: { email: own.email, password: own.password, user_type: 'merchant' } })).body.data
      .token as string;
    const set = await settings(token, { logo_url: 'https://cdn.shop.test/logo.png' });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ status_code: 200, data: { merchant_id: own.merchantId, logo_url: 'https://cdn.shop.test/logo.png' } });
    expect(await stored(own.merchantId)).toBe('https://cdn.shop.test/logo.png');
    expect((await http(gw.url, '/api/v2/auth/me', { headers: { authorization: `Bearer ${token}` } })).body.data.merchant.logo_url).toBe(
      'https://cdn.shop.test/logo.png',
    );

    for (const [body, field] of [
      [{ logo_url: 'javascript:alert(1)' }, 'logo_url'],
      [{ logo_url: 'ftp://cdn.shop.test/logo.png' }, 'logo_url'],
      [{ logo_url: 'https://user:pw@cdn.shop.test/logo.png' }, 'logo_url'],
      [{ logo_url: 'https://*/logo.png' }, 'logo_url'], // a wildcard host: the CSP would allow every https host
      [{ logo_url: 'https://a;script-src/x.png' }, 'logo_url'], // CSP syntax in a host
      [{ logo_url: `https://cdn.shop.test/${'a'.repeat(520)}.png` }, 'logo_url'],
      [{ logo_url: 42 }, 'logo_url'],
      [{ logoUrl: 'https://cdn.shop.test/x.png' }, null],
      [{}, null],
      [[], null],
    ] as const) {
      const res = await settings(token, body);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ status_code: 400, data: { code: 'VALIDATION_FAILED' } });
      if (field) expect(res.body.data.fields).toHaveProperty(field);
    }
    const notJson = await settings(token, undefined, '{"logo_url":');
    expect(notJson.status).toBe(400);
    expect(notJson.body.status_code).toBe(400);
    expect(
      (
        await http(gw.url, '/api/v2/merchant/settings', {
          method: 'PUT',
          body: { logo_url: 'https://evil.test/x.png' },
          headers: { 'api-key': own.sandboxKey },
        })
      ).status,
    ).toBe(401);
    expect(await stored(own.merchantId)).toBe('https://cdn.shop.test/logo.png');

    const gqlToken = (await gql(gw.url, LoginDocument, { email: own.email, password: own.password })).data!.login.token;
    const viaGql = await gql(gw.url, UpdateMerchantSettingsDocument, { input: { logoUrl: 'http://127.0.0.1:8080/brand.svg' } }, bearer(gqlToken));
    expect(viaGql.data?.updateMerchantSettings.logoUrl).toBe('http://127.0.0.1:8080/brand.svg');
    const badGql = await gql(gw.url, UpdateMerchantSettingsDocument, { input: { logoUrl: 'data:image/png;base64,AAAA' } }, bearer(gqlToken));
    expect(badGql.errors?.[0]?.extensions?.code).toBe('VALIDATION_FAILED');
    const cleared = await gql(gw.url, UpdateMerchantSettingsDocument, { input: { logoUrl: null } }, bearer(gqlToken));
    expect(cleared.data?.updateMerchantSettings.logoUrl).toBeNull();
    expect(await stored(own.merchantId)).toBeUndefined();
  });

  it('a production gateway refuses a plain-http logo (https only) before reading anything', async () => {
    const own = await createMerchant(gw.app);
    const strict = new MerchantService(gw.app.apiKeys, { httpsLogos: true });
    const owner = (await gw.app.orm.em.fork().execute(`select user_id as id from memberships where merchant_id = ? and role = 'owner'`, [own.merchantId]))[0]
      .id as string;
    const ctx = {
      ...internalContext(gw.app.orm.em.fork()),
      caller: { kind: 'dashboard' as const, userId: owner, merchantId: own.merchantId, sessionId: 'test', role: 'owner' },
    };
    await expect(strict.updateSettings(ctx, { logoUrl: 'http://cdn.shop.test/logo.png' })).rejects.toMatchObject({
      code: 'VALIDATION_FAILED',
      details: { fields: { logoUrl: expect.any(String) } },
    });
    expect(await stored(own.merchantId)).toBeUndefined();
    expect((await strict.updateSettings(ctx, { logoUrl: 'https://cdn.shop.test/logo.png' })).settings.logoUrl).toBe('https://cdn.shop.test/logo.png');
  });

  it('the checkout and payment-link pages show the logo and allow exactly its origin as an image source; without one, no outside origin', async () => {
    const own = await createMerchant(gw.app);
    const o1 = await http(gw.url, `${T}/merchant/fiat/order`, {
      body: { merchant_id: own.merchantId, order_no: `LOGO-${Date.now()}`, amount: '150000' },
      headers: { 'api-key': own.sandboxKey },
    });
    const plain = await http(gw.url, new URL(o1.body.data.url).pathname + new URL(o1.body.data.url).search);
    expect(plain.headers.get('content-security-policy')).toContain("img-src 'self' data:;");
    expect(plain.text).not.toContain('<img');

    await sqlSet(own.merchantId, 'https://cdn.shop.test:8443/a/logo.png?v=1&x="><script>');
    const page = await http(gw.url, new URL(o1.body.data.url).pathname + new URL(o1.body.data.url).search);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("img-src 'self' data: https://cdn.shop.test:8443;");
    expect(page.text).toContain('<img class="logo" id="logo" src="https://cdn.shop.test:8443/a/logo.png?v=1&#38;x=&#34;&#62;&#60;script&#62;" alt=""');

    const token = (await http(gw.url, '/api/v2/auth/login', { body: { email: own.email, password: own.password, user_type: 'merchant' } })).body.data
      .token as string;
    const link = await http(gw.url, `${T}/merchant/payment-link`, {
      body: { title: 'Logo sale', expiration_time: 3600, max_usage: 5, products: [{ name: 'Kain', price: 150000, quantity: 1 }] },
      headers: { authorization: `Bearer ${token}` },
    });
    const pay = await http(gw.url, new URL(link.body.data.link).pathname);
    expect(pay.headers.get('content-security-policy')).toContain("img-src 'self' data: https://cdn.shop.test:8443;");
    expect(pay.text).toContain('id="logo"');

    // A plain-http logo (allowed while trying the sandbox) never reaches a production order's page.
    await sqlSet(own.merchantId, 'http://127.0.0.1:9/logo.png');
    const prod = await http(gw.url, '/api/v2/mainnet/merchant/fiat/order', {
      body: { merchant_id: own.merchantId, order_no: `LOGO-P-${Date.now()}`, amount: '150000' },
      headers: { 'api-key': own.productionKey },
    });
    expect(prod.status).toBe(201);
    const prodPage = await http(gw.url, new URL(prod.body.data.url).pathname + new URL(prod.body.data.url).search);
    expect(prodPage.headers.get('content-security-policy')).toContain("img-src 'self' data:;");
    expect(prodPage.text).not.toContain('<img');
    const sandboxPage = await http(gw.url, new URL(o1.body.data.url).pathname + new URL(o1.body.data.url).search);
    expect(sandboxPage.headers.get('content-security-policy')).toContain("img-src 'self' data: http://127.0.0.1:9;");
  });
});

const sqlSet = (merchantId: string, logoUrl: string) =>
  gw.app.orm.em.fork().execute(`update merchants set settings = settings || jsonb_build_object('logoUrl', ?::text) where id = ?`, [logoUrl, merchantId]);

describe('printable receipt page', () => {
  it("needs the order's own key (401 bad, 403 another order's); an unpaid order says it has no receipt; the way back names the order", async () => {
    const o = await order();
    const orderId = o.key.split('_')[1]!;
    const other = await order();
    const page = await http(gw.url, `/checkout/${orderId}/receipt?key=${o.key}&lang=en`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(page.text).toContain('This order is not paid, so there is no receipt yet. (Awaiting payment)');
    expect(page.text.match(/<h1/g)).toHaveLength(1);
    expect((await http(gw.url, `/checkout/${orderId}/receipt?key=${other.key}`)).status).toBe(403);
    expect((await http(gw.url, `/checkout/${orderId}/receipt?key=ck_${orderId}_${'0'.repeat(64)}`)).status).toBe(401);
    expect((await http(gw.url, `/checkout/${orderId}/receipt`)).status).toBe(401);

    const withUrls = await http(gw.url, `${T}/merchant/fiat/order`, {
      body: {
        merchant_id: m.merchantId,
        order_no: `RCPT-${Date.now()}`,
        amount: '150000',
        success_url: 'https://shop.test/ok?x=1',
        cancel_url: 'https://shop.test/cart',
      },
      headers: { 'api-key': m.sandboxKey },
    });
    const id = (withUrls.body.data.key as string).split('_')[1]!;
    const state = await http(gw.url, `/checkout/${id}/state`, { headers: { 'x-checkout-key': withUrls.body.data.key } });
    expect(state.body.data.order.return_url).toBe(`https://shop.test/cart?order_no=${withUrls.body.data.request.order_no}&status=Created`);
    await gw.app.orm.em.fork().transactional((em) => gw.app.orderStatus.transition(em, id, 'Success', { kind: 'test' }));
    const paid = await http(gw.url, `/checkout/${id}/state`, { headers: { 'x-checkout-key': withUrls.body.data.key } });
    expect(paid.body.data.order.return_url).toBe(`https://shop.test/ok?x=1&order_no=${withUrls.body.data.request.order_no}&status=Success`);
    const receipt = await http(gw.url, `/checkout/${id}/receipt?key=${withUrls.body.data.key}&lang=en`);
    expect(receipt.text).toContain('<dl id="receipt">');
    expect(receipt.text).toContain(`href="https://shop.test/ok?x=1&#38;order_no=${withUrls.body.data.request.order_no}&#38;status=Success"`);
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
