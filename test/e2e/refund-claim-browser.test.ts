/**
 * The customer's refund claim page in a real Chromium, against the real gateway (PostgreSQL, Agenda
 * jobs, watchers, the refund engine) and the local anvil chain. The merchant asks for the refund of an
 * overpayment's excess over GraphQL; the customer only does what a person does: open the link, type
 * an address, confirm it, read the status. The money is checked on chain at the claimed address.
 * Screens are kept under test-artifacts/checkout/ (git-ignored); docs/refunds/ holds a chosen few.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Wallet } from 'ethers';
import type { Browser, Page } from 'playwright-core';
import { balanceOf, CUSTOMER_PRIVATE_KEYS, DEV_TOKEN_ADDRESSES, startDevChains, type DevChains } from '../../src/devchain';
import {
  ApproveRefundForClaimDocument,
  CreateRefundForClaimDocument,
  LoginDocument,
  ReauthenticateDocument,
  RefundForClaimDocument,
} from '../generated/graphql';
import { DESKTOP, launchBrowser, LOW_CONTRAST, MOBILE, snap, watchForScripts } from '../support/browser';
import { fundedCustomer, pay, placeOrder, sql, waitForStatus, WATCH_ENV } from '../support/evm-harness';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { bearer, gql } from '../support/graphql';
import { http } from '../support/http';

let chains: DevChains;
let gw: TestGateway;
let browser: Browser;
let m: Awaited<ReturnType<typeof createMerchant>>;
let session: string;
let customer: string;

jest.setTimeout(240_000);

beforeAll(async () => {
  const cacheDir = join(tmpdir(), 'cpg-checkout-solc-cache');
  chains = await startDevChains({ cacheDir }).catch(() => startDevChains({ cacheDir }));
  browser = await launchBrowser();
  gw = await startTestGateway({ ...WATCH_ENV, SANDBOX_ETHEREUM_CONFIRMATIONS: '1', REFUND_POLL_MS: '500' }, { devChains: chains });
  m = await createMerchant(gw.app);
  await sql(gw.app, `update merchants set name = ? where id = ?`, ['Toko Batik Sari', m.merchantId]);
  const login = await gql(gw.url, LoginDocument, { email: m.email, password: m.password });
  session = login.data!.login.token;
  customer = await fundedCustomer(chains, CUSTOMER_PRIVATE_KEYS[2]!);
}, 180_000);
afterAll(async () => {
  await browser?.close();
  await gw?.close();
  await chains?.stop();
});

/** An order on ETHEREUM paid `excess` base units too much, settled Success: its refund's claim link (the fragment carries the token). */
async function overpaidRefund(excess: bigint, reason: string) {
  const o = await placeOrder(gw.url, gw.app, m, 'ETHEREUM');
  await pay(chains.ETHEREUM, customer, o.address, o.total + excess);
  await waitForStatus(gw.url, m, o.orderNo, 'Success', 60_000);
  const created = await gql(
    gw.url,
    CreateRefundForClaimDocument,
    { environment: 'SANDBOX', input: { orderId: o.orderId, kind: 'overpayment_excess', reason } },
    bearer(session),
  );
  expect(created.errors).toBeUndefined();
  const { claimUrl, refund } = created.data!.createRefund;
  expect(refund.status).toBe('requested');
  expect(refund.amount.units).toBe(excess.toString());
  const url = new URL(claimUrl!);
  expect(url.pathname).toBe('/refund');
  expect(url.search).toBe('');
  const token = new URLSearchParams(url.hash.slice(1)).get('token')!;
  expect(token.length).toBeGreaterThanOrEqual(32);
  return { order: o, refundId: refund.id, token, link: `${gw.url}/refund${url.hash}` };
}

async function open(link: string, opts: { lang?: string; viewport?: { width: number; height: number } } = {}) {
  const ctx = await browser.newContext({
    viewport: opts.viewport ?? MOBILE,
    locale: opts.lang === 'en' ? 'en-US' : 'id-ID',
    extraHTTPHeaders: { 'accept-language': opts.lang === 'en' ? 'en-US,en;q=0.9' : 'id-ID,id;q=0.9' },
  });
  const page = await ctx.newPage();
  const scripts = watchForScripts(page);
  const res = await page.goto(link);
  return { page, res, scripts, close: () => ctx.close() };
}

const text = (page: Page, sel: string) => page.locator(sel).innerText();
const noSideScroll = (page: Page) => page.evaluate<boolean>('document.documentElement.scrollWidth <= window.innerWidth');

async function typeAddress(page: Page, address: string, confirm = address) {
  await page.locator('#address').fill(address);
  await page.locator('#next').click();
  await page.locator('#confirm-address').fill(confirm);
  await page.locator('#submit').click();
}

it('the customer claims an overpayment refund: bad, contract and deposit addresses refused with messages, a good one confirmed, approved, sent, confirmed on chain', async () => {
  const r = await overpaidRefund(2_500_000n, 'Kelebihan pembayaran');
  const to = Wallet.createRandom().address;
  const { page, res, scripts, close } = await open(r.link);
  try {
    // The page: its own origin only, no framing, nothing cached, and the token never in the URL the server saw.
    expect(res!.status()).toBe(200);
    const h = res!.headers();
    expect(h['content-security-policy']).toContain("script-src 'self'");
    expect(h['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(h['cache-control']).toBe('no-store');
    expect(h['referrer-policy']).toBe('no-referrer');

    await page.locator('#address').waitFor();
    expect(await page.locator('html').getAttribute('lang')).toBe('id');
    await expect(text(page, '#merchant')).resolves.toBe('Toko Batik Sari');
    await expect(text(page, '#amount')).resolves.toBe('2.5 USDT');
    await expect(text(page, '#network')).resolves.toBe('Ethereum');
    await expect(text(page, '#reason')).resolves.toBe('Kelebihan pembayaran');
    await expect(text(page, '#order-no')).resolves.toBe(r.order.orderNo);
    expect(await noSideScroll(page)).toBe(true);
    expect(await page.evaluate<string[]>(LOW_CONTRAST)).toEqual([]);
    await snap(page, 'refund-claim-address');

    // Empty, then a mistyped confirmation: refused in the page, nothing sent.
    await page.locator('#next').click();
    await expect(text(page, '#claim-error')).resolves.toBe('Masukkan alamat dompet Anda.');
    await typeAddress(page, to, to.slice(0, -1) + (to.endsWith('a') ? 'b' : 'a'));
    await expect(text(page, '#claim-error')).resolves.toMatch(/Kedua alamat berbeda/);
    await page.locator('#back').click();

    // Not an address: the server refuses it (format), the page says why in Indonesian.
    await typeAddress(page, '0x1234');
    await page.locator('#address[aria-invalid=true]').waitFor();
    await expect(text(page, '#claim-error')).resolves.toMatch(/bukan alamat Ethereum yang valid/);
    // The order's own deposit address: the gateway's, refused.
    await typeAddress(page, r.order.address);
    await page.locator('#claim-error', { hasText: 'milik gateway pembayaran' }).waitFor();
    // A contract (the token itself): refused.
    await typeAddress(page, DEV_TOKEN_ADDRESSES.ETHEREUM.USDT);
    await page.locator('#claim-error', { hasText: 'smart contract' }).waitFor();
    expect(await page.evaluate<string[]>(LOW_CONTRAST)).toEqual([]);
    await snap(page, 'refund-claim-refused');
    const [still] = await sql<{ status: string; to_address: string | null }>(gw.app, `select status, to_address from refunds where id = ?`, [r.refundId]);
    expect(still).toEqual({ status: 'requested', to_address: null });

    // The good address, lower-cased as a person might paste it: confirmed once more, then claimed in its checksummed form.
    await page.locator('#address').fill(to.toLowerCase());
    await page.locator('#next').click();
    await expect(text(page, '#confirm-shown')).resolves.toBe(to.toLowerCase());
    expect(await noSideScroll(page)).toBe(true);
    await snap(page, 'refund-claim-confirm');
    await page.locator('#confirm-address').fill(to.toLowerCase());
    await page.locator('#submit').click();
    await page.locator('#status-card[data-status=claimed]').waitFor();
    await expect(text(page, '#status')).resolves.toBe('Alamat diterima');
    await expect(text(page, '#to-address')).resolves.toBe(to);
    await snap(page, 'refund-claim-claimed');

    // A second claim through the same link is refused (the JSON endpoint, as a script would try).
    const other = Wallet.createRandom().address;
    const again = await http(gw.url, '/refund/claim', { body: { token: r.token, address: other, confirm_address: other } });
    expect([again.status, again.body.data.code]).toEqual([409, 'REFUND_STATE']);
    const twice = await http(gw.url, '/refund/claim', { body: { token: r.token, address: to, confirm_address: to } });
    expect(twice.status).toBe(409);
    expect(twice.body.data.code).toBe('REFUND_STATE');

    // The merchant approves (re-authenticated); the engine sends; the page follows to confirmed.
    const reauth = await gql(gw.url, ReauthenticateDocument, { password: m.password }, bearer(session));
    expect(reauth.errors).toBeUndefined();
    const approved = await gql(gw.url, ApproveRefundForClaimDocument, { environment: 'SANDBOX', id: r.refundId }, bearer(session));
    expect(approved.errors).toBeUndefined();
    expect(approved.data!.approveRefund.status).toBe('approved');
    await page.locator('#status-card[data-status=confirmed]').waitFor({ timeout: 120_000 });
    await expect(text(page, '#status')).resolves.toBe('Terkirim');
    const got = await gql(gw.url, RefundForClaimDocument, { environment: 'SANDBOX', id: r.refundId }, bearer(session));
    const row = got.data!.refund;
    expect(row.status).toBe('confirmed');
    await expect(text(page, '#tx-hash')).resolves.toBe(row.txHash);
    // A local dev chain has no public explorer: no dead link.
    expect(await page.locator('#explorer').count()).toBe(0);
    expect(await balanceOf(chains.ETHEREUM, 'USDT', to)).toBe(2_500_000n);
    expect(await page.locator('#updates').count()).toBe(0);
    expect(await noSideScroll(page)).toBe(true);
    expect(await page.evaluate<string[]>(LOW_CONTRAST)).toEqual([]);
    await snap(page, 'refund-claim-confirmed');

    // English, by the language button: the same refund, the fragment kept.
    await page.locator('#lang').click();
    expect(await page.locator('html').getAttribute('lang')).toBe('en');
    await expect(text(page, '#status')).resolves.toBe('Sent');
    expect(new URL(page.url()).hash).toBe(`#token=${r.token}`);
    expect(new URL(page.url()).searchParams.get('lang')).toBe('en');
    await page.setViewportSize(DESKTOP);
    await snap(page, 'refund-claim-confirmed-en');
    expect(scripts.cspViolations).toEqual([]);
    expect(scripts.dialogs).toEqual([]);
  } finally {
    await close();
  }
});

it('in English at desktop width and at 390 px; an unknown link and a page without a token say so in the page language', async () => {
  const r = await overpaidRefund(1_000_000n, 'Overpaid <b>by</b> 1 USDT');
  for (const viewport of [DESKTOP, MOBILE]) {
    const { page, close } = await open(r.link, { lang: 'en', viewport });
    try {
      await page.locator('#address').waitFor();
      expect(await page.locator('html').getAttribute('lang')).toBe('en');
      await expect(text(page, '#address-help')).resolves.toMatch(/^Paste an address of your own wallet that can receive USDT on the Ethereum network/);
      // The merchant's words are text, never markup.
      await expect(text(page, '#reason')).resolves.toBe('Overpaid <b>by</b> 1 USDT');
      expect(await page.locator('#reason b').count()).toBe(0);
      expect(await noSideScroll(page)).toBe(true);
      await snap(page, 'refund-claim-address-en');
      await typeAddress(page, 'not-an-address');
      await page.locator('#claim-error', { hasText: 'This is not a valid Ethereum address' }).waitFor();
    } finally {
      await close();
    }
  }

  const unknown = await open(`${gw.url}/refund#token=${'x'.repeat(43)}`, { lang: 'en' });
  try {
    await unknown.page.locator('#page-error').waitFor();
    await expect(text(unknown.page, '#page-error')).resolves.toMatch(/This refund link is not valid/);
    await snap(unknown.page, 'refund-claim-unknown');
  } finally {
    await unknown.close();
  }
  const bare = await open(`${gw.url}/refund`);
  try {
    await bare.page.locator('#page-error').waitFor();
    await expect(text(bare.page, '#page-error')).resolves.toMatch(/Tautan pengembalian dana ini tidak valid/);
  } finally {
    await bare.close();
  }
});

it('the JSON endpoints answer every malformed request in the envelope, never a 500, and change nothing', async () => {
  const r = await overpaidRefund(700_000n, 'x');
  const cases: { body?: unknown; raw?: string; headers?: Record<string, string>; method?: string; status: number; code: string }[] = [
    { method: 'GET', status: 404, code: 'CLAIM_NOT_FOUND' },
    { method: 'GET', headers: { 'x-claim-token': 'short' }, status: 404, code: 'CLAIM_NOT_FOUND' },
    { method: 'GET', headers: { 'x-claim-token': 'y'.repeat(500) }, status: 404, code: 'CLAIM_NOT_FOUND' },
    { body: [], status: 400, code: 'VALIDATION_FAILED' },
    { body: 'token', status: 400, code: 'VALIDATION_FAILED' },
    { body: { token: 5, address: 'a', confirm_address: 'a' }, status: 400, code: 'VALIDATION_FAILED' },
    { body: { token: r.token }, status: 400, code: 'VALIDATION_FAILED' },
    { body: { token: r.token, address: { a: 1 }, confirm_address: null }, status: 400, code: 'VALIDATION_FAILED' },
    { body: { token: r.token, address: '0xabc', confirm_address: '0xabd' }, status: 400, code: 'VALIDATION_FAILED' },
    { body: { token: r.token, address: 'x'.repeat(10_000), confirm_address: 'x' }, status: 400, code: 'VALIDATION_FAILED' },
    { body: { token: 'z'.repeat(43), address: Wallet.createRandom().address, confirm_address: 'same?' }, status: 400, code: 'VALIDATION_FAILED' },
    { body: { token: r.token, address: r.order.address, confirm_address: r.order.address }, status: 422, code: 'REFUND_ADDRESS_REFUSED' },
    { raw: '{"token":', status: 400, code: 'MALFORMED_JSON' },
  ];
  const unknownAddress = Wallet.createRandom().address;
  cases.push({ body: { token: 'z'.repeat(43), address: unknownAddress, confirm_address: unknownAddress }, status: 404, code: 'CLAIM_NOT_FOUND' });
  for (const c of cases) {
    const res = await fetch(`${gw.url}/refund/claim`, {
      method: c.method ?? 'POST',
      headers: { ...(c.method === 'GET' ? {} : { 'content-type': 'application/json' }), ...(c.headers ?? {}) },
      body: c.method === 'GET' ? undefined : (c.raw ?? JSON.stringify(c.body)),
    });
    const body = (await res.json()) as { status_code: number; message: string; data: { code: string } };
    expect({ case: c.body ?? c.raw ?? c.headers ?? null, status: res.status, code: body.data?.code, envelope: body.status_code }).toEqual({
      case: c.body ?? c.raw ?? c.headers ?? null,
      status: c.status,
      code: c.code,
      envelope: c.status,
    });
  }
  const [row] = await sql<{ status: string; to_address: string | null }>(gw.app, `select status, to_address from refunds where id = ?`, [r.refundId]);
  expect(row).toEqual({ status: 'requested', to_address: null });
  // The read answers the refund as the page shows it, nothing internal.
  const read = await fetch(`${gw.url}/refund/claim`, { headers: { 'x-claim-token': r.token } });
  const view = (await read.json()) as { data: Record<string, unknown> };
  expect(view.data).toMatchObject({
    status: 'requested',
    open: true,
    merchant: 'Toko Batik Sari',
    network: 'ETHEREUM',
    token_symbol: 'USDT',
    amount: '0.7',
    reason: 'x',
  });
  expect(Object.keys(view.data)).not.toContain('refund_id');
  expect(JSON.stringify(view.data)).not.toContain(m.merchantId);
});
