/**
 * The merchant dashboard (/dashboard) in a real Chromium against the real gateway, PostgreSQL and the
 * local anvil chains. A merchant signs in, gets a new sandbox API key (after giving the password again),
 * creates a payment link; a customer opens it in another page and pays on the local chain; the order
 * turns Success on the Orders page without a reload; the merchant sets a settlement wallet and sweeps,
 * and finds the order in the CSV export. Then the screens' empty, loading and error states, the second
 * sign-in step, and the phone width.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { tmpdir } from 'node:os';
import { Wallet } from 'ethers';
import jsQR from 'jsqr';
import { PNG } from 'pngjs';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { buildDashboard } from '../../scripts/dashboard-build.js';
import { balanceOf, CUSTOMER_PRIVATE_KEYS, startDevChains, type DevChains } from '../../src/devchain';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { http } from '../support/http';
import { fundedCustomer, pay, sql, WATCH_ENV } from '../support/evm-harness';
import { DESKTOP, launchBrowser, MOBILE, watchForScripts } from '../support/browser';
import { eventually } from '../support/order-watch';
import { enrolTotp, forgetSpentStep, totpNow } from '../support/second-factor';
import { dashboardSnap } from '../support/dashboard';
import { startSmtp, type TestSmtp } from '../support/smtp';
import { gql } from '../support/graphql';
import { AcceptTeamInviteDocument, LoginDocument } from '../generated/graphql';

let chains: DevChains;
let gw: TestGateway;
let browser: Browser;
let customer: string;
let smtp: TestSmtp;

jest.setTimeout(240_000);

beforeAll(async () => {
  // The bundle the gateway serves, built from the sources under test.
  buildDashboard({ out: path.join(__dirname, '..', '..', 'dist', 'dashboard-app'), production: true });
  const cacheDir = path.join(tmpdir(), 'cpg-dashboard-solc-cache');
  chains = await startDevChains({ cacheDir }).catch(() => startDevChains({ cacheDir }));
  browser = await launchBrowser();
  smtp = await startSmtp();
  const mail = {
    SMTP_HOST: '127.0.0.1',
    SMTP_PORT: String(smtp.port),
    SMTP_FROM: 'Gateway <team@gateway.test>',
    TEAM_INVITE_URL: 'https://dashboard.gateway.test/invite',
  };
  gw = await startTestGateway(
    { ...WATCH_ENV, ...mail, SANDBOX_ETHEREUM_CONFIRMATIONS: '1', SWEEP_POLL_MS: '200', LATE_PAYMENT_WINDOW_S: '3600' },
    { devChains: chains },
  );
  customer = await fundedCustomer(chains, CUSTOMER_PRIVATE_KEYS[3]!);
}, 240_000);
afterAll(async () => {
  await browser?.close();
  await gw?.close();
  await chains?.stop();
  await smtp?.close();
});

async function openDashboard(viewport = DESKTOP, locale = 'en-US'): Promise<{ ctx: BrowserContext; page: Page; scripts: ReturnType<typeof watchForScripts> }> {
  const ctx = await browser.newContext({ viewport, locale, acceptDownloads: true });
  const page = await ctx.newPage();
  const scripts = watchForScripts(page);
  const res = await page.goto(`${gw.url}/dashboard`);
  expect(res!.status()).toBe(200);
  return { ctx, page, scripts };
}

async function signIn(page: Page, account: { email: string; password: string }) {
  await page.locator('#email').fill(account.email);
  await page.locator('#password').fill(account.password);
  await page.locator('#sign-in-submit').click();
}

const text = (page: Page, sel: string) => page.locator(sel).innerText();

it('sign in → new sandbox API key → payment link → a customer pays → Success live on Orders → settlement wallet and sweep → the order in the CSV export', async () => {
  const m = await createMerchant(gw.app);
  const { ctx, page, scripts } = await openDashboard();
  try {
    // The page's headers: the checkout's discipline.
    const res = await page.request.get(`${gw.url}/dashboard`);
    expect(res.headers()['content-security-policy']).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    expect(res.headers()['x-frame-options']).toBe('DENY');
    expect(res.headers()['cache-control']).toBe('no-store');

    // A wrong password is said, in the page, with its code.
    await signIn(page, { email: m.email, password: 'not the password' });
    await expect(text(page, '#sign-in .error')).resolves.toMatch(/INVALID_CREDENTIALS|INVALID_PASSWORD/);
    await signIn(page, m);
    await page.locator('#nav-orders').waitFor();
    expect(await page.locator('#env-SANDBOX').getAttribute('aria-pressed')).toBe('true');
    // Home: the networks the workers watch, as /readyz sees them — the local Ethereum chain followed.
    const ready = (await http(gw.url, '/readyz')).body as { data: { chains?: { environment: string; network: string; state: string }[] } };
    expect(ready.data.chains?.find((c) => c.environment === 'sandbox' && c.network === 'ETHEREUM')).toBeDefined();
    await eventually(
      async () => {
        await page.locator('#nav-orders').click();
        await page.locator('#nav-home').click();
        await page.locator('#network-health h2').waitFor();
        return (await page.locator('#network-health li[data-network="ETHEREUM"][data-watcher="FOLLOWING"]').count()) === 1;
      },
      'Home says the gateway follows the local Ethereum chain',
      60_000,
    );
    const eth = await page.locator('#network-health li[data-network="ETHEREUM"]').innerText();
    expect(eth).toMatch(/Following the chain[\s\S]*last block \d+, \d+ s ago · providers: [1-9]\d* up/);
    expect(await page.locator('#network-health').innerText()).not.toMatch(/127\.0\.0\.1|localhost|http/);
    await dashboardSnap(page, 'home');

    // Developers: a new sandbox key, after the password again; shown once, and it works.
    await page.locator('#nav-developers').click();
    await page.locator('#rotate-key').click();
    await page.locator('#reauth-password').fill(m.password);
    await page.locator('#reauth-submit').click();
    const apiKey = (await text(page, '#new-api-key')).trim();
    expect(apiKey).not.toBe(m.sandboxKey);
    const probe = await http(gw.url, '/graphql', { body: { query: '{ orders(first: 1) { totalCount } }' }, headers: { 'api-key': apiKey } });
    expect(probe.body).toEqual({ data: { orders: { totalCount: 0 } } });
    const old = await http(gw.url, '/graphql', { body: { query: '{ orders(first: 1) { totalCount } }' }, headers: { 'api-key': m.sandboxKey } });
    expect(old.body.errors?.[0]?.extensions?.code).toBe('INVALID_API_KEY');
    await dashboardSnap(page, 'developers');
    await page.setViewportSize(MOBILE);
    await dashboardSnap(page, 'developers');
    await page.setViewportSize(DESKTOP);

    // Payment links: create one.
    await page.locator('#nav-links').click();
    await page.locator('#link-title').fill('Kain Batik');
    await page.locator('#link-price').fill('150000');
    await page.locator('#link-create').click();
    const link = await page.locator('#links .link-url').first().getAttribute('href');
    expect(link).toMatch(/\/pay\/[0-9a-f-]{36}/);
    // Its QR, drawn in the page, reads back as the link.
    await page.locator('#links .qr-toggle').first().click();
    const png = PNG.sync.read(await page.locator('#links img.qr').first().screenshot());
    expect(jsQR(new Uint8ClampedArray(png.data), png.width, png.height)?.data).toBe(link);
    await dashboardSnap(page, 'links');
    await page.setViewportSize(MOBILE);
    await dashboardSnap(page, 'links');
    await page.setViewportSize(DESKTOP);

    // Orders, live: no order yet, and the subscription is up.
    await page.locator('#nav-orders').click();
    await page.locator('#live.ok').waitFor();
    expect(await text(page, '#total-count')).toBe('0 orders');
    let navigations = 0;
    page.on('framenavigated', (f) => f === page.mainFrame() && !f.url().includes('#') && navigations++);
    const loads: string[] = [];
    page.on('load', () => loads.push(page.url()));

    // The customer, in another page: the link, Pay, a token, the chain.
    const shopper = await browser.newContext({ viewport: MOBILE, locale: 'id-ID' });
    const sp = await shopper.newPage();
    try {
      await sp.goto(link!);
      await sp.locator('#pay').click();
      await sp.waitForURL(/\/checkout\/[0-9a-f-]+\?key=ck_/);
      await sp.locator('button.choice', { hasText: 'USDT' }).filter({ hasText: 'Ethereum' }).first().click();
      await sp.locator('#wallet-METAMASK').click();
      await sp.locator('#qr').waitFor();
      const orderId = new URL(sp.url()).pathname.split('/')[2]!;
      const [d] = await sql<{ address: string; total: string; order_no: string }>(
        gw.app,
        `select d.address, d.total_amount::text as total, o.order_no from deposits d join orders o on o.id = d.order_id where d.order_id = ?`,
        [orderId],
      );
      // The new order appears on its own.
      const row = page.locator(`tr[data-order="${d!.order_no}"]`);
      await row.waitFor({ timeout: 60_000 });
      await pay(chains.ETHEREUM, customer, d!.address, BigInt(d!.total));
      await row.locator('.status', { hasText: 'Success' }).waitFor({ timeout: 90_000 });
      expect(loads).toEqual([]);
      expect(navigations).toBe(0);
      expect(await text(page, '#total-count')).toBe('1 order');
      await dashboardSnap(page, 'orders');
      await page.setViewportSize(MOBILE);
      await dashboardSnap(page, 'orders');
      await page.setViewportSize(DESKTOP);

      // The order page: its payment with the transaction.
      await row.locator('a').click();
      await page.locator('#order-status', { hasText: 'Success' }).waitFor();
      const [p] = await sql<{ tx_hash: string }>(gw.app, `select tx_hash from payments where order_id = ?`, [orderId]);
      expect(await text(page, '#payments')).toContain(p!.tx_hash);
      await dashboardSnap(page, 'order');

      // Settlement: a wallet for Ethereum, then sweep now; the deposit's USDT reaches the wallet.
      const wallet = Wallet.createRandom().address;
      await page.locator('#nav-settlement').click();
      await page.locator('#wallet-network').selectOption('ETHEREUM');
      await page.locator('#wallet-address').fill(wallet);
      await page.locator('#wallet-password').fill(m.password);
      await page.locator('#wallet-save').click();
      await page.locator('#wallets tr[data-network="ETHEREUM"]', { hasText: wallet }).waitFor();
      await page.locator('#sweep-now').click();
      await page.locator('#sweep-requested').waitFor();
      await eventually(
        async () => {
          await chains.ETHEREUM.rpc.call('anvil_mine', ['0x2']);
          return (await balanceOf(chains.ETHEREUM, 'USDT', wallet)) > 0n;
        },
        'the sweep reaches the settlement wallet',
        120_000,
      );
      await eventually(
        async () => {
          await page.locator('#nav-home').click();
          await page.locator('#nav-settlement').click();
          return (await page.locator('#sweeps tr', { hasText: 'ETHEREUM' }).count()) > 0;
        },
        'the sweep in the history',
        60_000,
      );
      await dashboardSnap(page, 'settlement');
      await page.setViewportSize(MOBILE);
      await dashboardSnap(page, 'settlement');
      await page.setViewportSize(DESKTOP);
      // The sweep job checked the Ethereum gas tank (the dev chain's, funded): Home says so, nothing waits for gas.
      await eventually(
        async () => {
          await page.locator('#nav-home').click();
          await page.locator('#network-health h2').waitFor();
          return (await page.locator('#network-health li[data-network="ETHEREUM"][data-gas="OK"]').count()) === 1;
        },
        'Home shows the funded gas tank',
        60_000,
      );
      expect(await page.locator('#network-health li[data-network="ETHEREUM"]').innerText()).toContain('Gas tank funded');
      expect(await page.locator('#network-health li[data-network="ETHEREUM"]').innerText()).not.toContain('waiting for gas');

      // Home: today's and this month's figures count the paid order.
      await page.locator('#nav-home').click();
      await page.locator('#figures').waitFor();
      const figures = await page.locator('#figures .card').allInnerTexts();
      expect(figures).toHaveLength(2);
      for (const f of figures) expect(f).toMatch(/IDR 150,000[\s\S]*Paid orders: 1\b/);
      await dashboardSnap(page, 'home');

      // Export: the CSV of the current filter (Success) holds the order.
      await page.locator('#nav-orders').click();
      await page.locator('#f-status').selectOption('Success');
      await page.locator(`tr[data-order="${d!.order_no}"]`).waitFor();
      const [download] = await Promise.all([page.waitForEvent('download'), page.locator('#export-csv').click()]);
      const csv = readFileSync((await download.path())!, 'utf8');
      expect(csv).toContain(d!.order_no);
      expect(csv.split('\n')[0]).toMatch(/order_no/);
    } finally {
      await shopper.close();
    }

    // Sign out: back to the sign-in form, and a reload stays signed out.
    await page.locator('#sign-out').click();
    await page.locator('#sign-in').waitFor();
    await page.reload();
    await page.locator('#sign-in').waitFor();
    expect(scripts.cspViolations).toEqual([]);
    expect(scripts.dialogs).toEqual([]);
  } finally {
    await ctx.close();
  }
});

it('empty, loading and error states; a reload keeps the session; Indonesian', async () => {
  const m = await createMerchant(gw.app);
  const { ctx, page, scripts } = await openDashboard();
  try {
    await signIn(page, m);
    await page.locator('#nav-orders').click();
    await page.locator('main .empty', { hasText: 'No orders match these filters yet.' }).waitFor();
    expect(await text(page, '#total-count')).toBe('0 orders');
    await page.locator('#nav-home').click();
    // Nothing of this merchant's needs attention (a local chain's watcher slowed down by a busy machine may be listed: not this merchant's doing).
    await page.locator('#attention').waitFor();
    expect(await page.locator('#attention li', { hasNotText: 'not following the chain' }).allInnerTexts()).toEqual([]);
    await page.locator('#nav-links').click();
    await page.locator('main h1', { hasText: 'Payment links' }).waitFor();
    await page.locator('main .empty').waitFor();

    // A link edited (title) and deactivated: the customer's page says it is unavailable.
    await page.locator('#link-title').fill('Draft');
    await page.locator('#link-price').fill('50000');
    await page.locator('#link-create').click();
    const card = page.locator('#links li').first();
    await card.locator('.edit-toggle').click();
    await card.locator('input[name="title"]').fill('Kaos Polos');
    await card.locator('.edit-link button[type="submit"]').click();
    await card.locator('strong', { hasText: 'Kaos Polos' }).waitFor();
    await card.locator('button', { hasText: 'Deactivate' }).click();
    await card.locator('.status', { hasText: 'INACTIVE' }).waitFor();
    const shopper = await ctx.newPage();
    await shopper.goto((await card.locator('.link-url').getAttribute('href'))!);
    await shopper.locator('#link-unavailable').waitFor();
    await shopper.close();

    // The sweep schedule, after the password again.
    await page.locator('#nav-settlement').click();
    await page.locator('#sweep-schedule input[name="enabled"]').uncheck();
    await page.locator('#sweep-schedule button[type="submit"]').click();
    await page.locator('#reauth-password').fill(m.password);
    await page.locator('#reauth-submit').click();
    await page.locator('#sweep-schedule', { hasText: 'Saved' }).waitFor();
    await page.locator('#nav-home').click();
    await page.locator('#nav-settlement').click();
    expect(await page.locator('#sweep-schedule input[name="enabled"]').isChecked()).toBe(false);

    // Loading: the orders answer is held back until the test lets it go.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    await page.route('**/graphql', async (route) => {
      if (String(route.request().postData()).includes('DashOrders')) await held;
      await route.continue();
    });
    await page.locator('#nav-orders').click();
    await page.locator('.loading').waitFor();
    release();
    await page.locator('#total-count').waitFor();
    await page.unroute('**/graphql');

    // Error: the gateway unreachable → the error and a retry that works once it is back.
    await page.route('**/graphql', (route) => route.abort('connectionrefused'));
    await page.locator('#nav-home').click();
    await page.locator('[role="alert"]').first().waitFor();
    // Home's three parts (what needs attention, the networks, the figures) each say so and offer a retry.
    await eventually(async () => (await page.locator('[role="alert"] button').count()) === 3, 'the three parts of Home in error', 30_000);
    expect(await page.locator('#network-health [role="alert"]').count()).toBe(1);
    await dashboardSnap(page, 'error');
    await page.unroute('**/graphql');
    await page.locator('[role="alert"] button').first().click();
    await page.locator('#attention').waitFor();
    await page.locator('#network-health [role="alert"] button').click();
    await page.locator('#network-health li[data-network="ETHEREUM"]').waitFor();
    await page.locator('[role="alert"] button').click();
    await page.locator('#figures').waitFor();

    // A reload keeps the session (this tab's); Indonesian on the switch, and it stays.
    await page.reload();
    await page.locator('#nav-orders').waitFor();
    await page.locator('#lang').click();
    expect(await text(page, '#nav-orders')).toBe('Pesanan');
    await page.reload();
    expect(await text(page, '#nav-orders')).toBe('Pesanan');
    expect(await page.locator('html').getAttribute('lang')).toBe('id');
    expect(scripts.cspViolations).toEqual([]);
  } finally {
    await ctx.close();
  }
});

/** Gives the password (and the app's current code, once TOTP is on) when the screen asks again. */
async function reauthIfAsked(page: Page, m: { email: string; password: string }, ready: string, secret?: string) {
  await page.locator(`#reauth, ${ready}`).first().waitFor();
  if (!(await page.locator('#reauth').isVisible())) return;
  await page.locator('#reauth-password').fill(m.password);
  if (secret) {
    await forgetSpentStep(gw.app, m.email);
    await page.locator('#reauth-code').fill(await totpNow(secret));
  }
  await page.locator('#reauth-submit').click();
  await page.locator(ready).first().waitFor();
}

/** Resolves when the page's `operation` (a dashboard mutation) has answered with data, not an error. */
function answered(page: Page, operation: string, field: string): Promise<unknown> {
  return page.waitForResponse(
    async (r) =>
      r.url().endsWith('/graphql') &&
      (r.request().postData() ?? '').includes(operation) &&
      (((await r.json()) as { data?: Record<string, unknown> | null }).data?.[field] ?? null) !== null,
    { timeout: 90_000 },
  );
}

it('Settings → Two-factor: TOTP enrolled through the screen (QR, code, recovery codes once), the merchant policy; Settings → Team: a finance member invited by mail, role changed, removed', async () => {
  const m = await createMerchant(gw.app);
  const { ctx, page, scripts } = await openDashboard();
  try {
    await signIn(page, m);
    await page.locator('#nav-settings').click();
    await page.locator('#tab-twoFactor').click();
    await page.locator('#totp-status', { hasText: 'Authenticator app is off' }).waitFor();

    // Enrol: the QR holds the otpauth URI with the secret shown beside it; the app's code confirms.
    await page.locator('#totp-begin').click();
    await reauthIfAsked(page, m, '#totp-enrol');
    const secret = (await text(page, '#totp-secret')).trim();
    expect(secret).toMatch(/^[A-Z2-7]{16,}$/);
    const png = PNG.sync.read(await page.locator('#totp-qr').screenshot());
    const uri = jsQR(new Uint8ClampedArray(png.data), png.width, png.height)?.data ?? '';
    expect(uri).toMatch(/^otpauth:\/\/totp\//);
    expect(new URL(uri).searchParams.get('secret')).toBe(secret);
    await page.locator('#totp-code').fill('000000');
    await page.locator('#totp-confirm').click();
    await page.locator('#totp-enrol .error').waitFor();
    await page.locator('#totp-code').fill(await totpNow(secret));
    await page.locator('#totp-confirm').click();
    await page.locator('#totp-status', { hasText: 'Authenticator app is on' }).waitFor();
    const codes = await page.locator('#recovery-codes li').allInnerTexts();
    expect(codes).toHaveLength(10);
    await expect(text(page, '#totp-status')).resolves.toContain('10 recovery codes left');
    // The gateway agrees: a password alone no longer signs in.
    const login = await gql(gw.url, LoginDocument, { email: m.email, password: m.password });
    expect(login.errors?.[0]?.extensions?.code).toBe('SECOND_FACTOR_REQUIRED');

    // The policy: every dashboard user of the merchant needs a second factor; it holds after a reload.
    const policySet = answered(page, 'DashSetSecondFactorPolicy', 'setSecondFactorPolicy');
    await page.locator('#require-2fa').click();
    await reauthIfAsked(page, m, '#require-2fa:checked', secret);
    await policySet;
    await page.locator('#require-2fa:checked:enabled').waitFor();
    await dashboardSnap(page, 'two-factor');
    await page.setViewportSize(MOBILE);
    await dashboardSnap(page, 'two-factor');
    await page.setViewportSize(DESKTOP);
    await page.reload();
    await page.locator('#totp-status').waitFor();
    expect(await page.locator('#require-2fa').isChecked()).toBe(true);
    // Recovery codes are shown once: not after a reload.
    expect(await page.locator('#recovery-codes').count()).toBe(0);

    // Team: invite a finance member; the mail with the link reaches the SMTP server.
    const email = `finance-${Date.now()}@team.test`;
    await page.locator('#tab-team').click();
    await page.locator('#members li', { hasText: m.email }).waitFor();
    await page.locator('#invite-email').fill(email);
    await page.locator('#invite-role').selectOption('FINANCE');
    await page.locator('#invite-submit').click();
    await reauthIfAsked(page, m, '#invite-sent', secret);
    await page.locator(`#invites li[data-invite="${email}"]`, { hasText: 'Finance' }).waitFor();
    await eventually(async () => smtp.mails.some((x) => x.to.includes(email)), `the invite mail to ${email}`, 60_000);
    const mailText = smtp.mails.find((x) => x.to.includes(email))!.parsed.text ?? '';
    const token = mailText.match(/invite#token=([A-Za-z0-9_-]+)/)?.[1];
    expect(token).toBeDefined();
    await dashboardSnap(page, 'team');
    await page.setViewportSize(MOBILE);
    await dashboardSnap(page, 'team');
    await page.setViewportSize(DESKTOP);

    // The invitee accepts; the owner sees them, makes them a viewer, then removes them.
    const accepted = await gql(gw.url, AcceptTeamInviteDocument, { token: token!, password: 'finance password 1' });
    expect(accepted.data?.acceptTeamInvite).toMatchObject({ email, role: 'FINANCE' });
    // The policy holds for them: signed in, the dashboard sends them to set up their second factor.
    const invitee = await openDashboard(MOBILE);
    try {
      await signIn(invitee.page, { email, password: 'finance password 1' });
      await invitee.page.locator('#enrolment-required').waitFor();
      expect(new URL(invitee.page.url()).hash).toBe('#/settings/two-factor');
      await invitee.page.locator('#totp-begin').waitFor();
    } finally {
      await invitee.ctx.close();
    }
    await page.reload();
    const member = page.locator(`#members li[data-member="${email}"]`);
    await member.waitFor();
    expect(await member.locator('select').inputValue()).toBe('FINANCE');
    const roleChanged = answered(page, 'DashChangeTeamMemberRole', 'changeTeamMemberRole');
    await member.locator('select').selectOption('VIEWER');
    await reauthIfAsked(page, m, `#members li[data-member="${email}"] select`, secret);
    await roleChanged;
    // The server's answer after a reload says viewer.
    await page.reload();
    await member.waitFor();
    expect(await member.locator('select').inputValue()).toBe('VIEWER');
    await member.locator('.remove').click();
    await reauthIfAsked(page, m, '#members', secret);
    await eventually(async () => (await page.locator(`#members li[data-member="${email}"]`).count()) === 0, 'the member removed from the list', 30_000);
    expect(scripts.cspViolations).toEqual([]);
    expect(scripts.dialogs).toEqual([]);
  } finally {
    await ctx.close();
  }
});

it('the second sign-in step where the account has TOTP', async () => {
  const m = await createMerchant(gw.app);
  const { secret } = await enrolTotp(gw.url, m);
  await forgetSpentStep(gw.app, m.email);
  const { ctx, page } = await openDashboard(DESKTOP, 'id-ID');
  try {
    await signIn(page, m);
    await page.locator('#second-step').waitFor();
    await page.locator('#second-code').fill('000000');
    await page.locator('#second-step button[type="submit"]').click();
    await page.locator('#second-step .error').waitFor();
    await page.locator('#second-code').fill(await totpNow(secret));
    await page.locator('#second-step button[type="submit"]').click();
    await page.locator('#nav-orders').waitFor();
    expect(await text(page, '#nav-orders')).toBe('Pesanan');
  } finally {
    await ctx.close();
  }
});

it.each([
  ['390 px (phone: the menu button)', MOBILE],
  ['1280 px (desktop: the side bar)', DESKTOP],
])('usable at %s: no sideways scrolling on any screen, production is one tap away', async (_width, viewport) => {
  const m = await createMerchant(gw.app);
  const { ctx, page, scripts } = await openDashboard(viewport);
  const phone = viewport === MOBILE;
  try {
    await dashboardSnap(page, 'sign-in');
    await signIn(page, m);
    await page.locator('#nav-home').waitFor({ state: 'attached' });
    expect(await page.locator('#menu').isVisible()).toBe(phone);
    for (const s of ['home', 'orders', 'refunds', 'links', 'settlement', 'developers', 'settings']) {
      if (phone) await page.locator('#menu').click();
      await page.locator(`#nav-${s}`).click();
      await page.locator(`#nav-${s}[aria-current="page"]`).waitFor({ state: 'attached' });
      await eventually(async () => (await page.locator('.loading').count()) === 0, `${s} loaded`, 60_000);
      expect({ screen: s, errors: await page.locator('[role="alert"]').allInnerTexts() }).toEqual({ screen: s, errors: [] });
      const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');
      expect({ screen: s, overflow }).toEqual({ screen: s, overflow: 0 });
      await dashboardSnap(page, `empty-${s}`);
    }
    for (const tab of ['team', 'twoFactor']) {
      if (phone) await page.locator('#menu').click();
      await page.locator('#nav-settings').click();
      await page.locator(`#tab-${tab}`).click();
      await page.locator(`#tab-${tab}[aria-current="page"]`).waitFor();
      await eventually(async () => (await page.locator('.loading').count()) === 0, `${tab} loaded`, 60_000);
      expect({ screen: tab, errors: await page.locator('[role="alert"]').allInnerTexts() }).toEqual({ screen: tab, errors: [] });
      const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');
      expect({ screen: tab, overflow }).toEqual({ screen: tab, overflow: 0 });
    }
    await page.locator('#env-PRODUCTION').click();
    await page.locator('#env-PRODUCTION[aria-pressed="true"]').waitFor();
    await eventually(async () => /Production/.test(await page.title()), 'the title names production', 30_000);
    expect(scripts.cspViolations).toEqual([]);
  } finally {
    await ctx.close();
  }
});
