import type { Browser, Page } from 'playwright-core';
import { internalContext, type RequestContext } from '../../src/common/context';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { http } from '../support/http';
import { launchBrowser } from '../support/browser';

/*
 * The offline GraphQL explorer (/explorer) in a real Chromium: every request the page makes goes to
 * the gateway itself (anything else is aborted and fails the test), a query runs with the API key
 * from the Headers tab, and a graphql-ws subscription receives a committed change.
 */

jest.setTimeout(120_000);

let gw: TestGateway;
let browser: Browser;
let m: Awaited<ReturnType<typeof createMerchant>>;

beforeAll(async () => {
  browser = await launchBrowser();
  gw = await startTestGateway({ ROLE: 'api' });
  m = await createMerchant(gw.app);
  const ctx: RequestContext = {
    ...internalContext(gw.app.orm.em.fork()),
    caller: { kind: 'apiKey', merchantId: m.merchantId, environment: 'sandbox', apiKeyId: 'test' },
    environment: 'sandbox',
  };
  await gw.app.orders.create(ctx, { orderNo: 'EXPLORER-1', amount: '150000' });
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await gw?.close();
});

/** A page whose every request outside the gateway is aborted and recorded. */
async function offlinePage(query: string, path = '/explorer'): Promise<{ page: Page; outside: string[] }> {
  const page = await browser.newPage();
  const outside: string[] = [];
  await page.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(gw.url) || url.startsWith('data:')) return route.continue();
    outside.push(url);
    return route.abort();
  });
  await page.addInitScript(
    `localStorage.setItem('graphiql:query', ${JSON.stringify(query)}); localStorage.setItem('graphiql:headers', ${JSON.stringify(JSON.stringify({ 'api-key': m.sandboxKey }))});`,
  );
  await page.goto(`${gw.url}${path}`);
  await page.waitForSelector('.graphiql-execute-button', { timeout: 60_000 });
  return { page, outside };
}

it('serves GraphiQL from the gateway itself and runs a query with the Headers tab’s API key', async () => {
  const { page, outside } = await offlinePage('{ orders(first: 5) { totalCount edges { node { orderNo status } } } }');
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.click('.graphiql-execute-button');
  await page.locator('.result-window', { hasText: 'EXPLORER-1' }).waitFor({ timeout: 30_000 });
  expect(await page.textContent('.result-window')).toMatch(/"totalCount": 1/);
  expect(outside).toEqual([]);
  expect(errors).toEqual([]);
  await page.close();
});

it('a browser opening /graphql lands on the offline explorer, not Apollo’s landing page (which loads from outside hosts)', async () => {
  const { page, outside } = await offlinePage('{ orders(first: 5) { totalCount } }', '/graphql');
  expect(new URL(page.url()).pathname).toBe('/explorer');
  await page.click('.graphiql-execute-button');
  await page.locator('.result-window', { hasText: 'totalCount' }).waitFor({ timeout: 30_000 });
  expect(outside).toEqual([]);
  await page.close();
});

it('a subscription typed in the explorer receives a committed status change over graphql-ws', async () => {
  const { page, outside } = await offlinePage('subscription { merchantEvents { orderNo status previousStatus } }');
  await page.click('.graphiql-execute-button');
  await new Promise((r) => setTimeout(r, 1500)); // the subscription is live
  const ctx: RequestContext = {
    ...internalContext(gw.app.orm.em.fork()),
    caller: { kind: 'apiKey', merchantId: m.merchantId, environment: 'sandbox', apiKeyId: 'test' },
    environment: 'sandbox',
  };
  const { order } = await gw.app.orders.create(ctx, { orderNo: 'EXPLORER-LIVE', amount: '160000' });
  await gw.app.orm.em.fork().transactional((em) => gw.app.orderStatus.transition(em, order.id, 'Processing', { kind: 'test' }));
  // The order's creation shows first, then its change.
  await page.locator('.result-window', { hasText: '"status": "Processing"' }).waitFor({ timeout: 30_000 });
  expect(await page.textContent('.result-window')).toMatch(/"orderNo": "EXPLORER-LIVE"/);
  expect(outside).toEqual([]);
  await page.close();
});

it('is absent when EXPLORER_ENABLED=false (the production default)', async () => {
  const off = await startTestGateway({ ROLE: 'api', EXPLORER_ENABLED: 'false' }, { db: gw.db });
  try {
    expect((await http(off.url, '/explorer', { method: 'GET' })).status).toBe(404);
    expect((await http(gw.url, '/explorer/assets/nope.js', { method: 'GET' })).status).toBe(404);
  } finally {
    await off.close();
  }
});
