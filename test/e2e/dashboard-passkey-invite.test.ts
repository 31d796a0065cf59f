/**
 * The merchant dashboard's passkeys and invite screen in a real Chromium against the real gateway and
 * PostgreSQL. Passkeys: a CDP virtual authenticator (WebAuthn.enable, WebAuthn.addVirtualAuthenticator)
 * answers the page's navigator.credentials calls — one added on Settings → Two-factor, then the sign-in's
 * second step and a re-authentication answered with it, then removed. Invites: the link the Team screen
 * shows opens the invite screen, where the teammate sets a password and signs in. Also the Home's
 * networks card with a watcher down and a gas tank low, as the worker and the sweep job store them.
 *
 * WebAuthn refuses IP addresses as relying-party ids, so the gateway runs as http://localhost:<port>
 * (a secure context) with PUBLIC_BASE_URL saying so.
 */
import { createServer } from 'node:net';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { buildDashboard } from '../../scripts/dashboard-build.js';
import { saveWatcherHealth } from '../../src/modules/payments/watcher-health';
import { LoginDocument } from '../generated/graphql';
import { DESKTOP, launchBrowser, MOBILE, watchForScripts } from '../support/browser';
import { dashboardSnap } from '../support/dashboard';
import { sql } from '../support/evm-harness';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { gql } from '../support/graphql';
import { eventually } from '../support/order-watch';

jest.setTimeout(180_000);

let gw: TestGateway;
let base: string;
let browser: Browser;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

beforeAll(async () => {
  // The bundle the gateway serves, built from the sources under test.
  buildDashboard({ out: path.join(__dirname, '..', '..', 'dist', 'dashboard-app'), production: true });
  const port = await freePort();
  base = `http://localhost:${port}`;
  // No SMTP: outside production the Team screen shows the invite link itself.
  gw = await startTestGateway({ ROLE: 'api', PORT: String(port), PUBLIC_BASE_URL: base });
  browser = await launchBrowser();
}, 180_000);
afterAll(async () => {
  await browser?.close();
  await gw?.close();
});

async function openDashboard(
  viewport = DESKTOP,
  url = `${base}/dashboard`,
): Promise<{ ctx: BrowserContext; page: Page; scripts: ReturnType<typeof watchForScripts> }> {
  const ctx = await browser.newContext({ viewport, locale: 'en-US' });
  const page = await ctx.newPage();
  const scripts = watchForScripts(page);
  const res = await page.goto(url);
  expect(res!.status()).toBe(200);
  return { ctx, page, scripts };
}

async function signIn(page: Page, account: { email: string; password: string }) {
  await page.locator('#email').fill(account.email);
  await page.locator('#password').fill(account.password);
  await page.locator('#sign-in-submit').click();
}

/** Gives the password when the screen asks again. */
async function reauthIfAsked(page: Page, password: string, ready: string) {
  await page.locator(`#reauth, ${ready}`).first().waitFor();
  if (!(await page.locator('#reauth').isVisible())) return;
  await page.locator('#reauth-password').fill(password);
  await page.locator('#reauth-submit').click();
  await page.locator(ready).first().waitFor();
}

const code = (r: { errors?: readonly { extensions?: Record<string, unknown> }[] }) => r.errors?.[0]?.extensions?.code;

it('Settings → Two-factor: a passkey added with the browser; the sign-in second step and a re-authentication answered with it; removed', async () => {
  const m = await createMerchant(gw.app);
  const { ctx, page, scripts } = await openDashboard();
  try {
    const cdp = await ctx.newCDPSession(page);
    await cdp.send('WebAuthn.enable');
    const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
      options: {
        protocol: 'ctap2',
        transport: 'internal',
        hasResidentKey: true,
        hasUserVerification: true,
        isUserVerified: true,
        automaticPresenceSimulation: true,
      },
    });
    await signIn(page, m);
    await page.locator('#nav-settings').click();
    await page.locator('#tab-twoFactor').click();
    await page.locator('#passkey-section').waitFor();
    expect(await page.locator('#passkeys li').count()).toBe(0);

    // Added after the password again: the authenticator made it, the gateway verified and stored it.
    await page.locator('#passkey-name').fill('Office laptop');
    await page.locator('#passkey-add-submit').click();
    await reauthIfAsked(page, m.password, '#passkey-added');
    await page.locator('#passkeys li[data-passkey="Office laptop"]').waitFor();
    const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
    expect(credentials).toHaveLength(1);
    // The first second factor: ten recovery codes, shown once.
    expect(await page.locator('#recovery-codes li').count()).toBe(10);
    await dashboardSnap(page, 'passkeys');
    await page.setViewportSize(MOBILE);
    await dashboardSnap(page, 'passkeys');
    await page.setViewportSize(DESKTOP);
    // The gateway agrees: a password alone no longer signs in, and a passkey is one of the ways.
    const login = await gql(base, LoginDocument, { email: m.email, password: m.password });
    expect(code(login)).toBe('SECOND_FACTOR_REQUIRED');
    expect(login.errors?.[0]?.extensions?.methods).toContain('PASSKEY');

    // Sign out; signing in again asks for the second step, which the passkey answers.
    await page.locator('#sign-out').click();
    await signIn(page, m);
    await page.locator('#second-passkey').click();
    await page.locator('#nav-orders').waitFor();
    const after = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
    expect(after.credentials[0]!.signCount).toBeGreaterThan(credentials[0]!.signCount);

    // Removing it needs a fresh re-authentication (this session is new): the password and the passkey.
    await page.locator('#nav-settings').click();
    await page.locator('#tab-twoFactor').click();
    await page.locator('#passkeys li[data-passkey="Office laptop"] .remove-passkey').click();
    await page.locator('#reauth').waitFor();
    await page.locator('#reauth-password').fill(m.password);
    await page.locator('#reauth-passkey').click();
    await eventually(async () => (await page.locator('#passkeys li').count()) === 0, 'the passkey removed from the list', 30_000);
    // No second factor left: the password signs in again.
    expect((await gql(base, LoginDocument, { email: m.email, password: m.password })).data?.login.token).toBeTruthy();
    expect(scripts.cspViolations).toEqual([]);
    expect(scripts.dialogs).toEqual([]);
  } finally {
    await ctx.close();
  }
});

it('an invite link opens the invite screen: the teammate sets a password and signs in with the email filled in; a spent link says so', async () => {
  const m = await createMerchant(gw.app);
  const { ctx, page } = await openDashboard();
  try {
    await signIn(page, m);
    await page.locator('#nav-settings').click();
    await page.locator('#tab-team').click();
    const email = `dev-${Date.now()}@team.test`;
    await page.locator('#invite-email').fill(email);
    await page.locator('#invite-role').selectOption('DEVELOPER');
    await page.locator('#invite-submit').click();
    await reauthIfAsked(page, m.password, '#invite-sent code');
    const link = (await page.locator('#invite-sent code').innerText()).trim();
    expect(link).toMatch(new RegExp(`^${base}/dashboard/invite#token=[A-Za-z0-9_-]+$`));

    // The teammate, on a phone, opens the link.
    const invitee = await openDashboard(MOBILE, link);
    try {
      await invitee.page.locator('#invite-password').waitFor();
      await dashboardSnap(invitee.page, 'invite');
      await invitee.page.locator('#invite-password').fill('developer password 1');
      await invitee.page.locator('#invite-accept').click();
      await invitee.page.locator('#invite-accepted', { hasText: 'Developer' }).waitFor();
      expect(await invitee.page.locator('#email').inputValue()).toBe(email);
      await dashboardSnap(invitee.page, 'invite-accepted');
      await invitee.page.locator('#password').fill('developer password 1');
      await invitee.page.locator('#sign-in-submit').click();
      await invitee.page.locator('#nav-home[aria-current="page"]').waitFor({ state: 'attached' });
      // The spent token is out of the address bar.
      expect(invitee.page.url()).toBe(`${base}/dashboard#/home`);
      await invitee.page.locator('#network-health').waitFor();
      const overflow = await invitee.page.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');
      expect(overflow).toBe(0);
      expect(invitee.scripts.cspViolations).toEqual([]);
    } finally {
      await invitee.ctx.close();
    }
    // The owner sees the new member.
    await page.reload();
    await page.locator(`#members li[data-member="${email}"]`).waitFor();

    // The same link again: the gateway's refusal, in the page.
    const again = await openDashboard(DESKTOP, link);
    try {
      await again.page.locator('#invite-password').waitFor();
      await dashboardSnap(again.page, 'invite');
      await again.page.locator('#invite-password').fill('developer password 1');
      await again.page.locator('#invite-accept').click();
      await expect(again.page.locator('#invite .error').innerText()).resolves.toContain('INVITE_USED');
      await dashboardSnap(again.page, 'invite-used');
    } finally {
      await again.ctx.close();
    }
    // A link without its token.
    const bare = await openDashboard(DESKTOP, `${base}/dashboard/invite`);
    try {
      await bare.page.locator('#invite [role="alert"]').waitFor();
      expect(await bare.page.locator('#invite-password').count()).toBe(0);
    } finally {
      await bare.ctx.close();
    }
  } finally {
    await ctx.close();
  }
});

it('Home: the networks card shows a watcher down and a gas tank low as stored, with no host, error text or tank address', async () => {
  const m = await createMerchant(gw.app);
  const now = Date.now();
  const em = gw.app.orm.em.fork();
  await saveWatcherHealth(em, {
    environment: 'sandbox',
    network: 'TRON',
    headBlock: 5000n,
    scannedBlock: 4990n,
    lastOkAt: now - 600_000,
    lastErrorAt: now - 1_000,
    lastError: 'connect ECONNREFUSED 10.9.8.7:50051',
    caughtUpAt: now - 600_000,
    startedAt: now - 3_600_000,
    identity: null,
    providers: [{ provider: 'tron-node.internal:50051', state: 'unknown', identity: null, reason: 'unreachable', checkedAt: now }],
  });
  await sql(
    gw.app,
    `insert into gas_tanks (environment, network, address, balance, low_threshold, low, needed, checked_at) values ('sandbox', 'TRON', 'TTankAddressNotForMerchants', 5, 1000000, true, 0, now())`,
  );
  const { ctx, page, scripts } = await openDashboard(DESKTOP);
  try {
    // Loading first, then the stored state.
    await signIn(page, m);
    const tron = page.locator('#network-health li[data-network="TRON"]');
    await tron.waitFor();
    expect(await tron.getAttribute('data-watcher')).toBe('DOWN');
    expect(await tron.getAttribute('data-gas')).toBe('LOW');
    const card = await page.locator('#network-health').innerText();
    expect(card).toContain('Down: payments wait until it recovers');
    expect(card).toContain('Gas tank low');
    expect(card).toContain('last block 4990');
    expect(card).toContain('providers: 0 up, 1 down');
    expect(card).not.toMatch(/tron-node|10\.9\.8\.7|ECONNREFUSED|TTank/);
    // A network down needs attention.
    await page.locator('#attention li', { hasText: 'TRON: the gateway is not following the chain' }).waitFor();
    await dashboardSnap(page, 'home-networks');
    await page.setViewportSize(MOBILE);
    await dashboardSnap(page, 'home-networks');
    expect(await page.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth')).toBe(0);
    await page.setViewportSize(DESKTOP);
    // Production has none of it: the card's empty state.
    await page.locator('#env-PRODUCTION').click();
    await page.locator('#network-health .empty').waitFor();
    expect(scripts.cspViolations).toEqual([]);
  } finally {
    await ctx.close();
  }
});
