/**
 * What a shopper reads and does on the hosted checkout, in a real Chromium against the real gateway
 * and the local anvil chains, with a real SMTP server (smtp-server) for the customer's mails:
 *  - the page says true things: the unique code as it is added (0.000XYZ), why the IDR equivalent
 *    differs from the order amount, one <h1>, and the QR gone the moment the payment is detected;
 *  - the shopper picks a token, then a wallet application that fits its network, and the page asks
 *    for the QR once (no 422s from guessing wallets);
 *  - the ways back to the merchant name the order (order_no and status in the query), by button and
 *    by the automatic redirect;
 *  - the receipt: printable page with the transaction hash, and the mail that arrives.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { CUSTOMER_PRIVATE_KEYS, SANDBOX_TOKENS, startDevChains, type DevChains } from '../../src/devchain';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { http } from '../support/http';
import { fundedCustomer, pay, sql, WATCH_ENV } from '../support/evm-harness';
import { launchBrowser, MOBILE, snap, watchForScripts } from '../support/browser';
import { eventually } from '../support/order-watch';
import { startSmtp, type TestSmtp } from '../support/smtp';

const T = '/api/v2/testnet';
let chains: DevChains;
let gw: TestGateway;
let browser: Browser;
let smtp: TestSmtp;
let m: Awaited<ReturnType<typeof createMerchant>>;
let customer: string;
let seq = 0;

jest.setTimeout(180_000);

beforeAll(async () => {
  const cacheDir = join(tmpdir(), 'cpg-checkout-solc-cache');
  chains = await startDevChains({ cacheDir }).catch(() => startDevChains({ cacheDir }));
  browser = await launchBrowser();
  smtp = await startSmtp();
  gw = await startTestGateway(
    {
      ...WATCH_ENV,
      SANDBOX_ETHEREUM_CONFIRMATIONS: '1',
      SANDBOX_BINANCE_CONFIRMATIONS: '3',
      LATE_PAYMENT_WINDOW_S: '3600',
      SMTP_HOST: '127.0.0.1',
      SMTP_PORT: String(smtp.port),
      SMTP_FROM: 'Receipts <receipts@gateway.test>',
      SMTP_POLL_MS: '200',
    },
    { devChains: chains },
  );
  m = await createMerchant(gw.app);
  await sql(gw.app, `update merchants set name = ? where id = ?`, ['Toko Batik Sari', m.merchantId]);
  customer = await fundedCustomer(chains, CUSTOMER_PRIVATE_KEYS[2]!);
}, 180_000);
afterAll(async () => {
  await browser?.close();
  await gw?.close();
  await chains?.stop();
  await smtp?.close();
});

async function newOrder(over: Record<string, unknown> = {}) {
  const orderNo = `SHOP-${++seq}-${Date.now()}`;
  const r = await http(gw.url, `${T}/merchant/fiat/order`, {
    body: { merchant_id: m.merchantId, order_no: orderNo, amount: '150000', ...over },
    headers: { 'api-key': m.sandboxKey },
  });
  expect(r.status).toBe(201);
  return { orderNo, url: r.body.data.url as string, orderId: (r.body.data.key as string).split('_')[1]! };
}

async function open(url: string, lang = 'id-ID') {
  const ctx = await browser.newContext({ viewport: MOBILE, locale: lang, extraHTTPHeaders: { 'accept-language': lang } });
  const page = await ctx.newPage();
  const scripts = watchForScripts(page);
  // Every API call the page makes, with its answer's status.
  const calls: { url: string; status: number }[] = [];
  page.on('response', (r) => {
    if (r.url().includes('/api/v2/')) calls.push({ url: new URL(r.url()).pathname, status: r.status() });
  });
  const res = await page.goto(url);
  return { page, res, scripts, calls, close: () => ctx.close() };
}

const text = (page: Page, sel: string) => page.locator(sel).innerText();
const tokenCard = (page: Page, symbol: string, networkName: string) =>
  page.locator('button.choice', { hasText: symbol }).filter({ hasText: networkName }).first();

/**
 * Watches the page from now on: records every moment the QR is on screen together with a sign that the
 * payment was detected (the confirming screen, or the status line saying so).
 */
const WATCH_QR = `(() => {
  window.__qrWhileDetected = [];
  const check = () => {
    const status = document.getElementById('status');
    const detected = document.getElementById('detected') || (status && /Payment detected|Pembayaran terdeteksi/.test(status.textContent));
    if (detected && document.getElementById('qr')) window.__qrWhileDetected.push(status ? status.textContent : '');
  };
  new MutationObserver(check).observe(document.body, { subtree: true, childList: true, characterData: true });
})()`;

it('true sentences, one h1, a wallet chosen for the network with one QR request, the QR gone at detection, the way back naming the order, a printable receipt and the mail', async () => {
  const email = `budi.${Date.now()}@example.id`;
  const o = await newOrder({ name: 'Budi', email, success_url: 'http://127.0.0.1:9/shop/thanks?ref=1', cancel_url: 'http://127.0.0.1:9/shop/cart' });
  const { page, calls, scripts, close } = await open(o.url, 'en-US');
  try {
    await page.locator('button.choice').first().waitFor();
    expect(await page.locator('h1').count()).toBe(1);
    expect(await text(page, 'h1')).toBe(`Order ${o.orderNo}`);
    // The way back while unpaid: cancel_url, naming the order.
    expect(await page.locator('#return').getAttribute('href')).toBe(`http://127.0.0.1:9/shop/cart?order_no=${o.orderNo}&status=Created`);

    // Token, then a wallet that can pay it on that network (Phantom cannot pay on BNB Smart Chain).
    await tokenCard(page, 'USDT', 'BNB Smart Chain').click();
    await page.locator('#wallet-title').waitFor();
    expect(await page.locator('button.choice').evaluateAll((els) => els.map((e) => e.id))).toEqual([
      'wallet-METAMASK',
      'wallet-TRUSTWALLET',
      'wallet-WALLETCONNECT',
    ]);
    await snap(page, 'choose-wallet');
    await page.locator('#change-token').click();
    await tokenCard(page, 'USDT', 'BNB Smart Chain').click();
    await page.locator('#wallet-TRUSTWALLET').click();
    await page.locator('#qr').waitFor();
    expect(calls.filter((c) => c.url.endsWith('/pgqr/fiat/create'))).toEqual([{ url: `${T}/pgqr/fiat/create`, status: 201 }]);
    expect(calls.filter((c) => c.status >= 400)).toEqual([]);
    const [d] = await sql<{ address: string; total: string; code: number; code_amount: string; wallet_type: string; fiat: string }>(
      gw.app,
      `select address, total_amount::text as total, unique_code as code, unique_code_amount::text as code_amount, wallet_type, total_amount_fiat::text as fiat from deposits where order_id = ?`,
      [o.orderId],
    );
    expect(d!.wallet_type).toBe('TRUSTWALLET');
    expect(await page.locator('.wallets a').first().innerText()).toBe('Open in Trust Wallet');

    // The unique code, as it is added: code × 10^-6 token (BNB Smart Chain USDT has 18 decimals).
    const codeTokens = (Number(BigInt(d!.code_amount) / 10n ** 12n) / 1e6).toFixed(6).replace(/0+$/, '');
    expect(codeTokens).toBe(`0.${String(d!.code).padStart(6, '0')}`.replace(/0+$/, ''));
    await expect(text(page, '#unique-code')).resolves.toBe(
      `This amount includes ${codeTokens} USDT added as this order’s unique code (${String(d!.code).padStart(3, '0')}): send exactly this amount so your payment is recognised at once.`,
    );
    // The IDR equivalent names its parts, and they add up.
    const equivalent = await text(page, '#idr-equivalent');
    const nums = [...equivalent.matchAll(/IDR\s?([\d,]+)/g)].map((x) => Number(x[1]!.replace(/,/g, '')));
    expect(nums[0]).toBe(Number(d!.fiat));
    // A small code (under IDR 0.5 at the locked rate) rounds to IDR 0 and is not named as a part: only true parts are listed.
    if (Number(d!.fiat) > 150_000) {
      expect(equivalent).toMatch(/^Equivalent to IDR\s?[\d,]+ \(order amount IDR\s?150,000( \+ service fee IDR\s?[\d,]+)?( \+ unique code IDR\s?[\d,]+)?\)$/);
      expect(nums.slice(1).reduce((a, b) => a + b, 0)).toBe(nums[0]);
    } else {
      expect(equivalent).toBe('Equivalent to IDR 150,000');
    }
    // And in Indonesian.
    await page.locator('#lang').click();
    await expect(text(page, '#unique-code')).resolves.toContain(`Jumlah ini sudah termasuk ${codeTokens} USDT yang ditambahkan sebagai kode unik pesanan ini`);
    await expect(text(page, '#idr-equivalent')).resolves.toMatch(
      Number(d!.fiat) > 150_000 ? /^Setara Rp\s?[\d.]+ \(harga pesanan Rp\s?150\.000/ : /^Setara Rp\s?150\.000$/,
    );
    await page.locator('#lang').click();
    await snap(page, 'pay-truthful');

    // Pay; from now on, the QR and "payment detected" are never on screen together.
    await page.evaluate(WATCH_QR);
    const sent = await pay(chains.BINANCE, customer, d!.address, BigInt(d!.total));
    await page.locator('#detected').waitFor({ timeout: 60_000 });
    expect(await page.locator('#qr').count()).toBe(0);
    for (let i = 0; i < 3; i++) await chains.BINANCE.rpc.call('evm_mine', []);
    await page.locator('#paid').waitFor({ timeout: 60_000 });
    expect(await page.evaluate<string[]>('window.__qrWhileDetected')).toEqual([]);
    expect(await page.locator('h1').count()).toBe(1);

    // Back to the merchant: success_url with its own query kept, naming the order.
    expect(await page.locator('#return').getAttribute('href')).toBe(`http://127.0.0.1:9/shop/thanks?ref=1&order_no=${o.orderNo}&status=Success`);
    expect(await text(page, '#return')).toBe('Return to Toko Batik Sari');

    // The printable receipt: the transaction hash, no explorer link for a local chain, the way back.
    await page.locator('#print-receipt').click();
    await page.locator('#receipt').waitFor();
    expect(await page.locator('h1').count()).toBe(1);
    expect(await text(page, 'h1')).toBe('Receipt');
    const receipt = await text(page, '#receipt');
    expect(receipt).toContain(sent.txHash);
    expect(receipt).toContain(o.orderNo);
    expect(receipt).toContain('Budi');
    expect(receipt).toMatch(/IDR\s?150,000/);
    expect(await page.locator('#receipt a').count()).toBe(0);
    expect(await page.locator('#return').getAttribute('href')).toBe(`http://127.0.0.1:9/shop/thanks?ref=1&order_no=${o.orderNo}&status=Success`);
    await page.emulateMedia({ media: 'print' });
    expect(await page.locator('#print').isVisible()).toBe(false);
    await page.emulateMedia({ media: 'screen' });
    expect(await page.locator('#print').isVisible()).toBe(true);
    expect(scripts.cspViolations).toEqual([]);
    await snap(page, 'receipt');

    // The receipt mail, with the same transaction hash.
    await eventually(async () => smtp.mails.some((x) => x.to.includes(email)), 'the receipt mail', 60_000);
    const mail = smtp.mails.find((x) => x.to.includes(email))!.parsed;
    expect(mail.subject).toContain(`Receipt for order ${o.orderNo} at Toko Batik Sari`);
    expect(mail.text).toContain(`Transaction hash: ${sent.txHash}`);
    expect(mail.text).toContain('Network: BNB Smart Chain');
    expect(scripts.dialogs).toEqual([]);
  } finally {
    await close();
  }
});

it('the automatic redirect after payment names the order', async () => {
  const seen: string[] = [];
  const shop = createServer((req, res) => {
    seen.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'text/html' }).end('<h1>Thanks</h1>');
  });
  await new Promise<void>((r) => shop.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${(shop.address() as AddressInfo).port}`;
  try {
    const o = await newOrder({ success_url: `${origin}/thanks`, auto_redirect: true });
    const { page, close } = await open(o.url);
    try {
      await tokenCard(page, 'USDT', 'Ethereum').click();
      await page.locator('#wallet-METAMASK').click();
      await page.locator('#qr').waitFor();
      const [d] = await sql<{ address: string; total: string }>(gw.app, `select address, total_amount::text as total from deposits where order_id = ?`, [
        o.orderId,
      ]);
      await pay(chains.ETHEREUM, customer, d!.address, BigInt(d!.total));
      await page.waitForURL(`${origin}/thanks?order_no=${encodeURIComponent(o.orderNo)}&status=Success`, { timeout: 60_000 });
      expect(seen).toContain(`/thanks?order_no=${o.orderNo}&status=Success`);
    } finally {
      await close();
    }
  } finally {
    await new Promise((r) => shop.close(r));
  }
});

it('each network offers the wallets that can pay there; on TRON and Solana the page asks for the QR once, no 422', async () => {
  // The local sandbox's TRON and Solana tokens (no chain needed to choose and get an address).
  const em = gw.app.orm.em.fork();
  for (const network of ['TRON', 'SOLANA'] as const)
    for (const t of SANDBOX_TOKENS[network]) await gw.app.tokens.upsert(em, { environment: 'sandbox', network, ...t });
  const first = await newOrder();
  const state = await http(gw.url, `/checkout/${first.orderId}/state`, { headers: { 'x-checkout-key': new URL(first.url).searchParams.get('key')! } });
  const wallets = Object.fromEntries((state.body.data.choices as { network: string; wallets: string[] }[]).map((c) => [c.network, c.wallets]));
  expect(wallets).toEqual({
    ETHEREUM: ['METAMASK', 'TRUSTWALLET', 'WALLETCONNECT'],
    BINANCE: ['METAMASK', 'TRUSTWALLET', 'WALLETCONNECT'],
    TRON: ['TRUSTWALLET'],
    SOLANA: ['TRUSTWALLET', 'PHANTOM', 'WALLETCONNECT'],
  });
  for (const [network, name, wallet] of [
    ['TRON', 'TRON', 'TRUSTWALLET'],
    ['SOLANA', 'Solana', 'PHANTOM'],
  ] as const) {
    const o = await newOrder();
    const { page, calls, close } = await open(o.url, 'en-US');
    try {
      await tokenCard(page, 'USDT', name).click();
      await page.locator('#wallet-title').waitFor();
      expect(await page.locator('button.choice').evaluateAll((els) => els.map((e) => e.id))).toEqual(wallets[network]!.map((w) => `wallet-${w}`));
      await page.locator(`#wallet-${wallet}`).click();
      await page.locator('#qr').waitFor();
      expect(calls.filter((c) => c.url.endsWith('/pgqr/fiat/create'))).toEqual([{ url: `${T}/pgqr/fiat/create`, status: 201 }]);
      expect(calls.filter((c) => c.status >= 400)).toEqual([]);
      const [d] = await sql<{ network: string; wallet_type: string }>(gw.app, `select network, wallet_type from deposits where order_id = ?`, [o.orderId]);
      expect(d).toEqual({ network, wallet_type: wallet });
      if (network === 'SOLANA') await snap(page, 'pay-solana-phantom');
    } finally {
      await close();
    }
  }
});
