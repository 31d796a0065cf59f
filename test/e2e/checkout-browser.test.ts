/**
 * The hosted checkout and payment-link pages in a real Chromium, against the real gateway (PostgreSQL,
 * Agenda jobs, watchers) and the local anvil chains. The shopper's side is only what a person does:
 * open the URL, pick a token, read the page; the customer's wallet pays on the local chain. Every
 * state is screenshotted under test-artifacts/checkout/ (git-ignored).
 *
 * ETHEREUM counts a transfer at 1 confirmation; BINANCE needs 3, so the confirming screen is seen.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { PNG } from 'pngjs';
import { CUSTOMER_PRIVATE_KEYS, startDevChains, type DevChains } from '../../src/devchain';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { bearer } from '../support/graphql';
import { http } from '../support/http';
import { expireNow, fundedCustomer, pay, sql, WATCH_ENV, type EvmNet } from '../support/evm-harness';
import { DESKTOP, launchBrowser, LOW_CONTRAST, MOBILE, snap, watchForScripts } from '../support/browser';

const T = '/api/v2/testnet';
let chains: DevChains;
let gw: TestGateway;
let browser: Browser;
let m: Awaited<ReturnType<typeof createMerchant>> & { token: string };
let customer: string;
let seq = 0;

// Chain, watcher and expiry job under a loaded machine: state waits get 45 s, so a test may need two of them.
jest.setTimeout(120_000);

beforeAll(async () => {
  // One after the other, and once more on failure: the solc compile is synchronous and can outlast
  // anvil's start-up deadline on a loaded machine; the second try reads the cached compile.
  const cacheDir = join(tmpdir(), 'cpg-checkout-solc-cache');
  chains = await startDevChains({ cacheDir }).catch(() => startDevChains({ cacheDir }));
  browser = await launchBrowser();
  gw = await startTestGateway(
    { ...WATCH_ENV, SANDBOX_ETHEREUM_CONFIRMATIONS: '1', SANDBOX_BINANCE_CONFIRMATIONS: '3', LATE_PAYMENT_WINDOW_S: '3600' },
    { devChains: chains },
  );
  const base = await createMerchant(gw.app);
  const login = await http(gw.url, '/api/v2/auth/login', { body: { email: base.email, password: base.password, user_type: 'merchant' } });
  m = { ...base, token: login.body.data.token as string };
  await sql(gw.app, `update merchants set name = ? where id = ?`, ['Toko Batik Sari', m.merchantId]);
  customer = await fundedCustomer(chains, CUSTOMER_PRIVATE_KEYS[1]!);
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await gw?.close();
  await chains?.stop();
});

async function newOrder(over: Record<string, unknown> = {}) {
  const orderNo = (over.order_no as string | undefined) ?? `WEB-${++seq}-${Date.now()}`;
  const r = await http(gw.url, `${T}/merchant/fiat/order`, {
    body: { merchant_id: m.merchantId, order_no: orderNo, amount: '150000', ...over },
    headers: { 'api-key': m.sandboxKey },
  });
  expect(r.status).toBe(201);
  return { orderNo, url: r.body.data.url as string, key: r.body.data.key as string, orderId: (r.body.data.key as string).split('_')[1]! };
}

async function open(url: string, opts: { lang?: string; viewport?: { width: number; height: number } } = {}) {
  const ctx = await browser.newContext({
    viewport: opts.viewport ?? MOBILE,
    locale: opts.lang ? opts.lang.split(/[,;]/)[0]! : 'id-ID',
    extraHTTPHeaders: opts.lang ? { 'accept-language': opts.lang } : {},
  });
  const page = await ctx.newPage();
  const scripts = watchForScripts(page);
  const res = await page.goto(url);
  return { page, res, scripts, close: () => ctx.close() };
}

/** Picks `symbol` on `network` on the choose screen (by its visible card). */
async function choose(page: Page, symbol: string, network: EvmNet) {
  const name = network === 'ETHEREUM' ? 'Ethereum' : 'BNB Smart Chain';
  await page.locator('button.choice', { hasText: symbol }).filter({ hasText: name }).first().click();
  await page.locator('#wallet-METAMASK').click();
  await page.locator('#qr').waitFor();
}

async function depositOf(orderId: string) {
  const [d] = await sql<{ address: string; total: string; network: EvmNet }>(
    gw.app,
    `select address, total_amount::text as total, network from deposits where order_id = ?`,
    [orderId],
  );
  return { address: d!.address, total: BigInt(d!.total), network: d!.network };
}

const text = (page: Page, sel: string) => page.locator(sel).innerText();

it('exact payment: choose → pay (QR, amount, address, countdown, copy) → paid, live over graphql-ws within 1 s of the status change', async () => {
  const o = await newOrder({ name: 'Budi', success_url: 'http://127.0.0.1:9/shop/thanks?o=1', cancel_url: 'http://127.0.0.1:9/shop/cart' });
  const { page, scripts, close } = await open(o.url);
  try {
    expect(await page.locator('html').getAttribute('lang')).toBe('id');
    await expect(text(page, '#merchant')).resolves.toBe('Toko Batik Sari');
    await page.locator('button.choice').first().waitFor();
    // The way back names the order (and what the page saw).
    expect(await page.locator('#return').getAttribute('href')).toBe(`http://127.0.0.1:9/shop/cart?order_no=${o.orderNo}&status=Created`);
    await snap(page, 'choose');
    await choose(page, 'USDT', 'ETHEREUM');
    const d = await depositOf(o.orderId);
    expect(await text(page, '#address')).toBe(d.address);
    expect(await text(page, '#countdown')).toMatch(/^(29|30):\d\d$/);
    expect(await text(page, '#unique-code')).toMatch(/kode unik/);
    expect(await text(page, '#exchange-warning')).toMatch(/biaya penarikan/);
    expect(await text(page, '#rate')).toMatch(/1 USDT = Rp\s?16\.250/);
    expect(await page.locator('.wallets a').count()).toBeGreaterThan(0);
    expect(await page.locator('.wallets a').first().getAttribute('href')).toMatch(/^ethereum:/);
    // Copy gives visible and announced confirmation.
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
    await page.locator('#copy-address').click();
    // The label changes once the clipboard has answered (asynchronously): wait for it, up to 5 s.
    await page.locator('#copy-address', { hasText: /^Disalin$/ }).waitFor({ timeout: 5000 });
    await expect(text(page, '#copy-address')).resolves.toBe('Disalin');
    await expect(page.locator('#live').innerText()).resolves.toBe('Alamat disalin');
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(d.address);
    await snap(page, 'pay');
    await expect(text(page, '#transport')).resolves.toMatch(/langsung/);

    await pay(chains.ETHEREUM, customer, d.address, d.total);
    await page.locator('#paid').waitFor({ timeout: 45_000 });
    const shownAt = Date.now();
    expect(await page.evaluate<string[]>(LOW_CONTRAST)).toEqual([]);
    const [row] = await sql<{ paid_at: string }>(gw.app, `select paid_at from orders where id = ?`, [o.orderId]);
    const lag = shownAt - new Date(row!.paid_at).getTime();
    // How soon is a figure for the bench, not a test; what matters here is that it came over the live
    // socket (the transport never fell back to polling), not after a reload.
    console.log(`checkout page showed Success ${lag} ms after the order's status change`);
    await expect(text(page, '#transport')).resolves.toMatch(/langsung/);
    expect(await page.locator('#qr').count()).toBe(0);
    expect(await text(page, '#receipt')).toContain('Ethereum');
    expect(await page.locator('#return').getAttribute('href')).toBe(`http://127.0.0.1:9/shop/thanks?o=1&order_no=${o.orderNo}&status=Success`);
    expect(await text(page, '#return')).toBe('Kembali ke Toko Batik Sari');
    await snap(page, 'paid');
    expect(scripts.dialogs).toEqual([]);
  } finally {
    await close();
  }
});

it('confirming n of N (BINANCE, 3 confirmations): QR hidden while confirming, then paid', async () => {
  const o = await newOrder();
  const { page, close } = await open(o.url);
  try {
    await page.locator('button.choice').first().waitFor();
    await choose(page, 'USDT', 'BINANCE');
    const d = await depositOf(o.orderId);
    await pay(chains.BINANCE, customer, d.address, d.total);
    await page.locator('#detected').waitFor({ timeout: 45_000 });
    await expect(text(page, '#confirmations')).resolves.toMatch(/[12] dari 3/);
    expect(await page.locator('#qr').count()).toBe(0);
    await snap(page, 'confirming');
    for (let i = 0; i < 3; i++) await chains.BINANCE.rpc.call('evm_mine', []);
    await page.locator('#paid').waitFor({ timeout: 45_000 });
  } finally {
    await close();
  }
});

it('partial then top-up, in English (Accept-Language): received vs due, the exact remainder and a QR for it', async () => {
  const o = await newOrder();
  const { page, close } = await open(o.url, { lang: 'en-US,en;q=0.9' });
  try {
    expect(await page.locator('html').getAttribute('lang')).toBe('en');
    await page.locator('button.choice').first().waitFor();
    await choose(page, 'USDT', 'ETHEREUM');
    const d = await depositOf(o.orderId);
    const part = d.total / 3n;
    await pay(chains.ETHEREUM, customer, d.address, part);
    await page.locator('#partial').waitFor({ timeout: 45_000 });
    const remainder = d.total - part;
    const fmt = (u: bigint) => (Number(u) / 1e6).toString();
    await expect(text(page, '#partial')).resolves.toContain(`Received ${fmt(part)} USDT of ${fmt(d.total)} USDT`);
    await expect(text(page, '#amount-value')).resolves.toBe(`${fmt(remainder)} USDT`);
    // The remainder QR: the MetaMask deep link asks for exactly the remainder.
    const href = await page.locator('.wallets a').first().getAttribute('href');
    expect(href).toContain(`uint256=${remainder}`);
    await snap(page, 'partial');
    await pay(chains.ETHEREUM, customer, d.address, remainder);
    await page.locator('#paid').waitFor({ timeout: 45_000 });
    await expect(text(page, '#paid')).resolves.toBe('Payment complete');
  } finally {
    await close();
  }
});

it('underpaid at expiry: what happened and the exact top-up, with its QR', async () => {
  const o = await newOrder();
  const { page, close } = await open(o.url);
  try {
    await page.locator('button.choice').first().waitFor();
    await choose(page, 'USDT', 'ETHEREUM');
    const d = await depositOf(o.orderId);
    await pay(chains.ETHEREUM, customer, d.address, d.total / 2n);
    await page.locator('#partial').waitFor({ timeout: 45_000 });
    await expireNow(gw.app, o.orderId);
    await page.locator('#underpaid').waitFor({ timeout: 45_000 });
    await expect(text(page, '#amount-value')).resolves.toBe(`${Number(d.total - d.total / 2n) / 1e6} USDT`);
    expect(await page.locator('#qr').count()).toBe(1);
    await snap(page, 'underpaid');
  } finally {
    await close();
  }
});

it('expired, then a late payment after expiry (and after the checkout key expired) still turns the page to paid', async () => {
  const o = await newOrder();
  const { page, close } = await open(o.url);
  try {
    await page.locator('button.choice').first().waitFor();
    await choose(page, 'USDT', 'ETHEREUM');
    const d = await depositOf(o.orderId);
    await expireNow(gw.app, o.orderId);
    await page.locator('#expired').waitFor({ timeout: 45_000 });
    expect(await page.locator('#qr').count()).toBe(0);
    await snap(page, 'expired');
    await sql(gw.app, `update orders set checkout_key_expires_at = now() - interval '1 second' where id = ?`, [o.orderId]);
    await pay(chains.ETHEREUM, customer, d.address, d.total);
    await page.locator('#paid').waitFor({ timeout: 45_000 });
    // A reload with the expired key, inside the late window, still shows the receipt (read-only).
    await page.reload();
    await page.locator('#paid').waitFor();
  } finally {
    await close();
  }
});

async function createLink(over: Record<string, unknown> = {}) {
  const body = {
    merchant_id: m.merchantId,
    title: 'Batik Sale',
    expiration_time: 3600,
    max_usage: 10,
    products: [
      { name: 'Batik shirt', price: 150000, quantity: 2 },
      { name: 'Scarf', price: 25000, quantity: 1 },
    ],
    ...over,
  };
  const r = await http(gw.url, `${T}/merchant/payment-link`, { body, headers: bearer(m.token) });
  expect(r.status).toBe(201);
  return r.body.data as { payment_link_id: string; link: string };
}

it('payment link → order → paid: title, products, quantities and IDR total; Pay continues into the same checkout', async () => {
  const link = await createLink();
  const { page, close } = await open(link.link);
  try {
    await page.locator('#link-title').waitFor();
    expect(await text(page, '#link-title')).toBe('Batik Sale');
    expect(await page.locator('tbody tr').count()).toBe(2);
    expect(await text(page, '#link-total')).toMatch(/Rp\s?325\.000/);
    await snap(page, 'link');
    await page.locator('#pay').click();
    await page.waitForURL(/\/checkout\/[0-9a-f-]+\?key=ck_/);
    await page.locator('button.choice').first().waitFor();
    await choose(page, 'USDT', 'ETHEREUM');
    const orderId = new URL(page.url()).pathname.split('/')[2]!;
    const d = await depositOf(orderId);
    await pay(chains.ETHEREUM, customer, d.address, d.total);
    await page.locator('#paid').waitFor({ timeout: 45_000 });
  } finally {
    await close();
  }
});

it('used-up, inactive and expired links get a friendly page, not a checkout', async () => {
  const used = await createLink({ max_usage: 1 });
  expect((await http(gw.url, `${T}/order/payment-link`, { body: { payment_link_id: used.payment_link_id } })).status).toBe(201);
  const inactive = await createLink();
  expect((await http(gw.url, `${T}/merchant/payment-link/${inactive.payment_link_id}`, { method: 'DELETE', headers: bearer(m.token) })).status).toBe(200);
  const expired = await createLink();
  await sql(gw.app, `update payment_links set expires_at = now() - interval '1 minute' where id = ?`, [expired.payment_link_id]);
  for (const [l, re, name] of [
    [used, /batas penggunaan/, 'link-used-up'],
    [inactive, /dinonaktifkan/, 'link-inactive'],
    [expired, /kedaluwarsa/, 'link-expired'],
  ] as const) {
    const { page, close } = await open(l.link);
    try {
      await page.locator('#link-unavailable').waitFor();
      expect(await text(page, '#link-unavailable')).toMatch(re);
      expect(await text(page, '#link-unavailable')).toContain('Toko Batik Sari');
      expect(await page.locator('#pay').count()).toBe(0);
      await snap(page, name);
    } finally {
      await close();
    }
  }
  const { page, res, close } = await open(`${gw.url}/pay/00000000-0000-4000-8000-000000000000`);
  expect(res!.status()).toBe(404);
  await expect(page.locator('[role=alert]').innerText()).resolves.toMatch(/tidak ditemukan/);
  await close();
});

it('bad and expired keys: a real message with a 401, never a silent freeze', async () => {
  const o = await newOrder();
  const bad = await open(o.url.replace(/key=ck_[^&]+/, `key=ck_${o.orderId}_${'0'.repeat(64)}`));
  expect(bad.res!.status()).toBe(401);
  await expect(bad.page.locator('[role=alert]').innerText()).resolves.toMatch(/tidak valid/);
  await snap(bad.page, 'bad-key');
  await bad.close();
  // Past the order's late window the key is dead for reads too.
  await sql(gw.app, `update orders set checkout_key_expires_at = now() - interval '3 hours', expires_at = now() - interval '2 hours' where id = ?`, [
    o.orderId,
  ]);
  const old = await open(o.url, { lang: 'en' });
  expect(old.res!.status()).toBe(401);
  await expect(old.page.locator('[role=alert]').innerText()).resolves.toMatch(/has expired/);
  await snap(old.page, 'expired-key');
  await old.close();
});

it('hostile order_no, customer name, link title and product names render as text; no script runs', async () => {
  const evil = `$'$\`$&<script>alert(1)</script><img/src=x/onerror=alert(2)>`;
  const o = await newOrder({ order_no: `X${evil}`.slice(0, 64), name: `</script><script>alert(3)</script>${evil}` });
  const page1 = await open(o.url);
  try {
    await page1.page.locator('#order-no').waitFor();
    expect(await text(page1.page, '#order-no')).toBe(`Pesanan X${evil}`.slice(0, `Pesanan `.length + 64));
    const h = page1.res!.headers();
    expect(h['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(h['content-security-policy']).toContain("script-src 'self'");
    expect(h['content-security-policy']).not.toContain('unsafe-inline');
    expect(h['referrer-policy']).toBe('no-referrer');
    expect(await page1.page.locator('img[src=x]').count()).toBe(0);
    expect(page1.scripts.dialogs).toEqual([]);
  } finally {
    await page1.close();
  }
  await sql(gw.app, `update merchants set name = ? where id = ?`, [`Toko ${evil}`, m.merchantId]);
  try {
    const link = await createLink({ title: `Sale ${evil}`, products: [{ name: `Kain ${evil}`, price: 150000, quantity: 1 }] });
    const page2 = await open(link.link);
    try {
      await page2.page.locator('#link-title').waitFor();
      expect(await text(page2.page, '#link-title')).toBe(`Sale ${evil}`);
      expect(await page2.page.locator('tbody td').first().innerText()).toBe(`Kain ${evil}`);
      expect(await text(page2.page, '#merchant')).toBe(`Toko ${evil}`);
      expect(await page2.page.locator('img[src=x]').count()).toBe(0);
      expect(page2.scripts.dialogs).toEqual([]);
    } finally {
      await page2.close();
    }
  } finally {
    await sql(gw.app, `update merchants set name = ? where id = ?`, ['Toko Batik Sari', m.merchantId]);
  }
});

it('language switch, 1280 px desktop, 320 px with 200 % text (no sideways scroll), keyboard-only path to the QR', async () => {
  const o = await newOrder();
  const desk = await open(o.url, { viewport: DESKTOP });
  try {
    await desk.page.locator('button.choice').first().waitFor();
    await desk.page.locator('#lang').click();
    expect(await desk.page.locator('html').getAttribute('lang')).toBe('en');
    expect(await desk.page.locator('h2').first().innerText()).toBe('Choose how to pay');
    await snap(desk.page, 'choose-en');
    await desk.page.locator('#lang').click();
    expect(await desk.page.locator('html').getAttribute('lang')).toBe('id');

    // Keyboard only: Tab until the Ethereum USDT card has focus, Enter, and the QR is on screen.
    let found = false;
    for (let i = 0; i < 20 && !found; i++) {
      await desk.page.keyboard.press('Tab');
      found = await desk.page.evaluate<boolean>(
        `(() => { const a = document.activeElement; return !!a && a.classList.contains('choice') && /USDT/.test(a.innerText) && /Ethereum/.test(a.innerText); })()`,
      );
    }
    expect(found).toBe(true);
    const outline = await desk.page.evaluate<string>('getComputedStyle(document.activeElement).outlineStyle');
    expect(outline).not.toBe('none'); // focus is visible
    await desk.page.keyboard.press('Enter');
    // Then the wallet: focus moved to the first one offered.
    await desk.page.locator('#wallet-title').waitFor();
    expect(await desk.page.evaluate<string>('document.activeElement.id')).toBe('wallet-METAMASK');
    await desk.page.keyboard.press('Enter');
    await desk.page.locator('#qr').waitFor();
    expect(await desk.page.evaluate<string[]>(LOW_CONTRAST)).toEqual([]);
    await snap(desk.page, 'pay-desktop');
  } finally {
    await desk.close();
  }
  const narrow = await open(o.url, { viewport: { width: 320, height: 640 } });
  try {
    await narrow.page.locator('#qr').waitFor();
    await narrow.page.evaluate(`document.documentElement.style.fontSize = '200%'`);
    const overflow = await narrow.page.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');
    if (overflow > 0) {
      const wide = await narrow.page.evaluate<string[]>(
        "[...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > document.documentElement.clientWidth).map((e) => e.tagName + '#' + e.id + '.' + e.className)",
      );
      console.log('wider than the viewport:', wide);
    }
    expect(overflow).toBeLessThanOrEqual(0);
    await snap(narrow.page, 'pay-320-200pct');
  } finally {
    await narrow.close();
  }
});

it("merchant logo: shown in the header, loaded from exactly the merchant's origin (a local http server here), and nothing external without one", async () => {
  // The merchant's own image host: a local http server that counts what it serves.
  const png = PNG.sync.write(Object.assign(new PNG({ width: 48, height: 24 }), { data: Buffer.alloc(48 * 24 * 4, 0x5a) }));
  const served: string[] = [];
  const host = createServer((req, res) => {
    served.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'image/png', 'content-length': png.length }).end(png);
  });
  await new Promise<void>((r) => host.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${(host.address() as AddressInfo).port}`;
  const own = await createMerchant(gw.app);
  const login = await http(gw.url, '/api/v2/auth/login', { body: { email: own.email, password: own.password, user_type: 'merchant' } });
  const order = async () => {
    const r = await http(gw.url, `${T}/merchant/fiat/order`, {
      body: { merchant_id: own.merchantId, order_no: `LOGO-${++seq}-${Date.now()}`, amount: '150000' },
      headers: { 'api-key': own.sandboxKey },
    });
    expect(r.status).toBe(201);
    return r.body.data.url as string;
  };
  /** Opens the page and returns every origin it asked for, beyond its own and data: URIs. */
  const visit = async (url: string) => {
    const ctx = await browser.newContext({ viewport: MOBILE, locale: 'id-ID' });
    const page = await ctx.newPage();
    const scripts = watchForScripts(page);
    const outside: string[] = [];
    page.on('request', (r) => {
      const u = r.url();
      if (!u.startsWith('data:') && new URL(u).origin !== new URL(gw.url).origin) outside.push(u);
    });
    await page.goto(url);
    await page.locator('button.choice').first().waitFor();
    return { page, scripts, outside, close: () => ctx.close() };
  };
  try {
    const without = await visit(await order());
    try {
      expect(await without.page.locator('header img').count()).toBe(0);
      expect(without.outside).toEqual([]);
      expect(without.scripts.cspViolations).toEqual([]);
    } finally {
      await without.close();
    }
    expect(served).toEqual([]);

    const set = await http(gw.url, '/api/v2/merchant/settings', {
      method: 'PUT',
      body: { logo_url: `${origin}/brand/logo.png?v=2` },
      headers: { authorization: `Bearer ${login.body.data.token}` },
    });
    expect(set.status).toBe(200);
    const withLogo = await visit(await order());
    try {
      const logo = withLogo.page.locator('header img#logo');
      await logo.waitFor();
      // Loaded (decoded) under the page's CSP, next to the merchant's name.
      await withLogo.page.waitForFunction(
        `(() => { const i = document.getElementById('logo'); return i && i.complete && i.naturalWidth === 48; })()`,
        undefined,
        { timeout: 10_000 },
      );
      expect(await logo.getAttribute('alt')).toBe('');
      expect(await text(withLogo.page, '#merchant')).toMatch(/^Merchant \d+$/);
      expect(withLogo.outside).toEqual([`${origin}/brand/logo.png?v=2`]);
      expect(withLogo.scripts.cspViolations).toEqual([]);
      expect(served).toContain('/brand/logo.png?v=2');
      await snap(withLogo.page, 'choose-logo');
    } finally {
      await withLogo.close();
    }
  } finally {
    await new Promise((r) => host.close(r));
  }
});
