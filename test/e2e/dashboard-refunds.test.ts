/**
 * Refunds in the merchant dashboard, in a real Chromium against the real gateway, PostgreSQL and the
 * local anvil chain (the worker's refund engine runs as in production). A paid order's page: more than
 * was received is refused in the page and nothing is created; a partial refund gives the claim link; the
 * lost claim link is replaced by a new one (the old stops working); the customer claims an address
 * with it (the service the claim page calls); the merchant approves after the
 * password again; the refund reaches confirmed on the page and the tokens reach the address. The
 * Refunds screen lists it under its filters, with the settings and the refund wallets, at 1280 and 390 px.
 * A wrong-token payment to the order is then refunded from the order page, picked as the source.
 */
import path from 'node:path';
import { tmpdir } from 'node:os';
import { Wallet } from 'ethers';
import type { Browser, Page } from 'playwright-core';
import { buildDashboard } from '../../scripts/dashboard-build.js';
import { balanceOf, CUSTOMER_PRIVATE_KEYS, startDevChains, type DevChains } from '../../src/devchain';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { eventually, fundedCustomer, pay, placeOrder, sql, WATCH_ENV } from '../support/evm-harness';
import { DESKTOP, launchBrowser, MOBILE, watchForScripts } from '../support/browser';
import { dashboardSnap } from '../support/dashboard';

let chains: DevChains;
let gw: TestGateway;
let browser: Browser;
let customer: string;

jest.setTimeout(240_000);

beforeAll(async () => {
  buildDashboard({ out: path.join(__dirname, '..', '..', 'dist', 'dashboard-app'), production: true });
  const cacheDir = path.join(tmpdir(), 'cpg-dashboard-solc-cache');
  chains = await startDevChains({ cacheDir }).catch(() => startDevChains({ cacheDir }));
  browser = await launchBrowser();
  gw = await startTestGateway({ ...WATCH_ENV, SANDBOX_ETHEREUM_CONFIRMATIONS: '1', SWEEP_POLL_MS: '200', REFUND_POLL_MS: '300' }, { devChains: chains });
  customer = await fundedCustomer(chains, CUSTOMER_PRIVATE_KEYS[4]!);
}, 240_000);
afterAll(async () => {
  await browser?.close();
  await gw?.close();
  await chains?.stop();
});

const mine = () => chains.ETHEREUM.rpc.call('anvil_mine', ['0x1']);
/** A full-page screenshot from the top (the sticky header where it belongs). */
const snap = async (page: Page, name: string) => {
  await page.evaluate('scrollTo(0, 0)');
  await dashboardSnap(page, name);
};
const noSideways = (page: Page) => page.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');

it('a paid order’s page: too much is refused; a partial refund → claim link → the customer claims → approved after the password → confirmed on chain; the rest requested and cancelled; the Refunds screen lists them', async () => {
  const m = await createMerchant(gw.app); // no settlement wallet: the funds stay at the deposit
  const o = await placeOrder(gw.url, gw.app, m, 'ETHEREUM');
  await pay(chains.ETHEREUM, customer, o.address, o.total);
  await eventually(
    async () => {
      await mine();
      return (await sql<{ status: string }>(gw.app, `select status from orders where id = ?`, [o.orderId]))[0]!.status === 'Success';
    },
    'order paid',
    60_000,
  );
  const refundRows = () => sql<{ id: string; status: string }>(gw.app, `select id, status from refunds where order_id = ?`, [o.orderId]);
  const totalText = (Number(o.total) / 1e6).toString(); // USDT, 6 decimals on the dev chain

  const ctx = await browser.newContext({ viewport: DESKTOP, locale: 'en-US' });
  const page = await ctx.newPage();
  const scripts = watchForScripts(page);
  try {
    await page.goto(`${gw.url}/dashboard`);
    await page.locator('#email').fill(m.email);
    await page.locator('#password').fill(m.password);
    await page.locator('#sign-in-submit').click();
    await page.locator('#nav-refunds').waitFor();
    await page.goto(`${gw.url}/dashboard#/order/${encodeURIComponent(o.orderNo)}`);
    await page.locator('#order-refunds .empty').waitFor();
    expect(await page.locator('#order-refunds').innerText()).toContain('No refunds yet.');

    // The form says the most that can be refunded and who pays the network fee, before anything is sent.
    await page.locator('#refund-open').click();
    expect(await page.locator('#refund-max').innerText()).toBe(`At most ${totalText} USDT can be refunded`);
    expect(await page.locator('#refund-fee-rule').innerText()).toContain('The gas tank pays the network fee');
    await page.locator('#refund-full').uncheck();
    // One base unit more than received: refused in the page, nothing created.
    await page.locator('#refund-amount').fill((Number(o.total + 1n) / 1e6).toFixed(6));
    await page.locator('#refund-review').click();
    expect(await page.locator('#refund-form .error').innerText()).toBe(`More than was received: at most ${totalText} USDT.`);
    expect(await page.locator('#refund-confirm').count()).toBe(0);
    expect(await refundRows()).toEqual([]);

    // 1.5 USDT with a reason: reviewed, then requested; the claim link is shown to copy.
    await page.locator('#refund-amount').fill('1.5');
    await page.locator('#refund-reason').fill('one item out of stock');
    await page.locator('#refund-review').click();
    expect(await page.locator('#refund-summary').innerText()).toContain('1.5 USDT · ETHEREUM · Merchant’s decision');
    await snap(page, 'refund-form');
    await page.setViewportSize(MOBILE);
    expect(await noSideways(page)).toBeLessThanOrEqual(0);
    await snap(page, 'refund-form');
    await page.setViewportSize(DESKTOP);
    await page.locator('#refund-confirm').click();
    const claimUrl = (await page.locator('#order-refunds .claim-url').innerText()).trim();
    expect(claimUrl).toMatch(/\/refund#token=[A-Za-z0-9_-]{43}$/);
    const [row] = await refundRows();
    expect(row).toEqual({ id: expect.any(String), status: 'requested' });
    const item = page.locator(`#order-refunds li[data-refund="${row!.id}"]`);
    expect(await item.innerText()).toMatch(/1\.5 USDT[\s\S]*ETHEREUM[\s\S]*Merchant’s decision[\s\S]*requested[\s\S]*one item out of stock/);
    await snap(page, 'order-refund');
    await page.setViewportSize(MOBILE);
    expect(await noSideways(page)).toBeLessThanOrEqual(0);
    await snap(page, 'order-refund');
    await page.setViewportSize(DESKTOP);

    // A new claim link (the first was lost): shown in its place; the old one stops working.
    await item.locator('.renew-claim').click();
    await eventually(async () => (await item.locator('.claim-url').innerText()).trim() !== claimUrl, 'the new claim link shown', 30_000);
    const newUrl = (await item.locator('.claim-url').innerText()).trim();
    expect(newUrl).toMatch(/\/refund#token=[A-Za-z0-9_-]{43}$/);
    const tokenOf = (url: string) => new URL(url).hash.replace(/^#token=/, '');
    await expect(gw.app.refunds.claimInfo(gw.app.orm.em.fork(), tokenOf(claimUrl))).rejects.toMatchObject({ code: 'CLAIM_NOT_FOUND' });

    // The customer claims an address (what the claim page calls) with the new link; the page follows live.
    const to = Wallet.createRandom().address;
    const token = tokenOf(newUrl);
    await gw.app.refunds.claim(gw.app.orm.em.fork(), token, to, to);
    await item.locator('.approve').waitFor({ timeout: 60_000 });
    expect(await item.getAttribute('data-status')).toBe('claimed');
    expect(await item.innerText()).toContain(to);

    // Approve: the gateway asks for the password again (the existing dialog), then approves.
    await item.locator('.approve').click();
    await page.locator('#reauth-password').fill(m.password);
    await page.locator('#reauth-submit').click();
    await page.locator('#reauth').waitFor({ state: 'detached' });
    // The worker's engine sends it from the deposit; blocks are mined until it is confirmed, and the page shows it.
    await eventually(
      async () => {
        await mine();
        return (await page.locator(`#order-refunds li[data-refund="${row!.id}"][data-status="confirmed"]`).count()) === 1;
      },
      'the refund confirmed on the order page',
      120_000,
    );
    const done = page.locator(`#order-refunds li[data-refund="${row!.id}"]`);
    const tx = (await done.locator('.tx').innerText()).trim();
    expect(tx).toMatch(/^0x[0-9a-f]{64}$/);
    expect((await sql<{ tx_hash: string }>(gw.app, `select tx_hash from refunds where id = ?`, [row!.id]))[0]!.tx_hash).toBe(tx);
    expect(await balanceOf(chains.ETHEREUM, o.token, to)).toBe(1_500_000n);
    expect(await done.locator('.approve, .cancel-refund, .renew-claim').count()).toBe(0);
    // The explorer link is the gateway's (Refund.explorerUrl): none on the local dev chain.
    expect(await done.locator('a[target="_blank"]').count()).toBe(0);
    await snap(page, 'order-refund-confirmed');

    // The rest cannot be more than what is left: the form now says total − 1.5.
    await page.locator('#refund-open').click();
    expect(await page.locator('#refund-max').innerText()).toBe(`At most ${(Number(o.total - 1_500_000n) / 1e6).toString()} USDT can be refunded`);
    // All of what is left, requested and then cancelled: nothing was signed, the state says so.
    await page.locator('#refund-review').click();
    expect(await page.locator('#refund-summary').innerText()).toContain(`${(Number(o.total - 1_500_000n) / 1e6).toString()} USDT`);
    await page.locator('#refund-confirm').click();
    await page.locator('#order-refunds li[data-status="requested"] .claim-url').waitFor();
    await page.locator('#order-refunds li[data-status="requested"] .cancel-refund').click();
    await page.locator('#order-refunds li[data-status="cancelled"]').waitFor();
    expect((await refundRows()).map((r) => r.status).sort()).toEqual(['cancelled', 'confirmed']);

    // The Refunds screen: the filters, the settings and the refund wallets.
    await page.locator('#nav-refunds').click();
    await page.locator('#refund-list').waitFor();
    expect(await page.locator('#refund-list li[data-refund]').count()).toBe(2);
    await page.locator('#rf-status').selectOption('requested');
    await page.locator('#refund-list .empty').waitFor();
    await page.locator('#rf-status').selectOption('confirmed');
    await page.locator(`#refund-list li[data-refund="${row!.id}"]`).waitFor();
    await page.locator('#refund-wallets li[data-network="ETHEREUM"]').waitFor();
    expect(await page.locator('#refund-wallets li[data-network="ETHEREUM"] .wallet-address').innerText()).toMatch(/^0x[0-9a-fA-F]{40}$/);
    expect(await page.locator('#rs-fee-mode').inputValue()).toBe('tank');
    await page.locator('#refund-wallets li[data-network="ETHEREUM"] .qr-toggle').click();
    await page.locator('#refund-wallets img.qr').waitFor();
    // The settings change after the password again.
    await page.locator('#rs-limit').fill('5');
    await page.locator('#rs-fee-mode').selectOption('deduct');
    await page.locator('#rs-save').click();
    await page.locator('#refund-settings .saved, #reauth').first().waitFor();
    if (await page.locator('#reauth').count()) {
      await page.locator('#reauth-password').fill(m.password);
      await page.locator('#reauth-submit').click();
    }
    await page.locator('#refund-settings .saved').waitFor();
    // Read back from the gateway: another screen and back.
    await page.locator('#nav-orders').click();
    await page.locator('#nav-refunds').click();
    await page.locator('#refund-settings').waitFor();
    expect(Number(await page.locator('#rs-limit').inputValue())).toBe(5);
    expect(await page.locator('#rs-fee-mode').inputValue()).toBe('deduct');
    await page.locator('#refund-wallets li[data-network="ETHEREUM"] .qr-toggle').click();
    await snap(page, 'refunds');
    await page.setViewportSize(MOBILE);
    expect(await noSideways(page)).toBeLessThanOrEqual(0);
    await snap(page, 'refunds');
    // In Indonesian.
    await page.locator('#lang').click();
    await page.getByText('Pengaturan refund').waitFor();
    expect(await page.locator('#refund-count').innerText()).toBe('2 refund');
    expect(await page.locator('#nav-refunds').textContent()).toBe('Refund');

    // A wrong-token payment to the same order: the order page offers its refund next to what is left of
    // the deposit (a choice of source), with the gateway's own figure for each.
    await pay(chains.ETHEREUM, customer, o.address, 4_500_000n, 'USDC');
    await eventually(
      async () => {
        await mine();
        return (
          (await sql(gw.app, `select id from unattributed_receipts where order_id = ? and reason = 'wrong_token' and status = 'confirmed'`, [o.orderId]))
            .length === 1
        );
      },
      'wrong-token receipt confirmed',
      60_000,
    );
    await page.setViewportSize(DESKTOP);
    await page.goto(`${gw.url}/dashboard#/order/${encodeURIComponent(o.orderNo)}`);
    await page.locator('#refund-open').click();
    await page.locator('#refund-source').waitFor();
    expect(await page.locator('#refund-max').innerText()).toContain(`${(Number(o.total - 1_500_000n) / 1e6).toString()} USDT`);
    const receiptOption = await page.locator('#refund-source option[value^="r:"]').getAttribute('value');
    await page.locator('#refund-source').selectOption(receiptOption!);
    await eventually(async () => (await page.locator('#refund-max').innerText()).includes('4.5 USDC'), 'the receipt’s figure shown', 10_000);
    expect(await page.locator('#refund-kind').inputValue()).toBe('wrong_token');
    await page.locator('#refund-review').click();
    await page.locator('#refund-confirm').click();
    await page.locator('#order-refunds li[data-status="requested"] .claim-url').waitFor();
    const wrongRefunds = await sql<{ amount: string; receipt_id: string | null }>(
      gw.app,
      `select amount::text as amount, receipt_id from refunds where order_id = ? and kind = 'wrong_token'`,
      [o.orderId],
    );
    expect(wrongRefunds).toEqual([{ amount: '4500000', receipt_id: receiptOption!.slice(2) }]);

    expect(scripts.cspViolations).toEqual([]);
    expect(scripts.dialogs).toEqual([]);
  } finally {
    await ctx.close();
  }
});
