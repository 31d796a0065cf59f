import type { Browser } from 'playwright-core';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { http } from '../support/http';
import { launchBrowser } from '../support/browser';

/*
 * The offline REST reference (/reference, Swagger UI from the installed package) in a real Chromium:
 * every request the page makes goes to the gateway's own origin (anything else is aborted and fails
 * the test), and it lists every operation of the gateway's /openapi.json, createOrder's path among them.
 */

jest.setTimeout(120_000);

let gw: TestGateway;
let browser: Browser;

beforeAll(async () => {
  browser = await launchBrowser();
  gw = await startTestGateway({ ROLE: 'api' });
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await gw?.close();
});

const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace']);

it('renders every operation of /openapi.json offline: each request goes to the gateway itself', async () => {
  const doc = (await http(gw.url, '/openapi.json', { method: 'GET' })).body as { paths: Record<string, Record<string, { operationId?: string }>> };
  const operations = Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.keys(ops)
      .filter((m) => METHODS.has(m))
      .map((m) => `${m.toUpperCase()} ${path}`),
  );
  const createOrder = Object.entries(doc.paths).find(([, ops]) => ops.post?.operationId === 'createOrderTestnet')?.[0];
  expect(createOrder).toBe('/api/v2/testnet/merchant/fiat/order');

  const origin = new URL(gw.url).origin;
  const page = await browser.newPage();
  const outside: string[] = [];
  const own: string[] = [];
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith('data:')) return route.continue();
    if (new URL(url).origin === origin) {
      own.push(new URL(url).pathname);
      return route.continue();
    }
    outside.push(url);
    return route.abort();
  });
  try {
    await page.goto(`${gw.url}/reference`);
    // The operations list: createOrder's path, then every operation (method and path) of the document.
    await page.locator(`.opblock-summary-path[data-path="${createOrder}"]`).first().waitFor({ timeout: 60_000 });
    const listed = await page.$$eval('#reference .opblock', (blocks) =>
      blocks.map(
        (b) =>
          `${b.querySelector('.opblock-summary-method')?.textContent?.trim() ?? ''} ${b.querySelector('.opblock-summary-path')?.getAttribute('data-path') ?? ''}`,
      ),
    );
    for (const op of operations) expect(listed).toContain(op);
    expect(listed).toContain(`POST ${createOrder}`);

    expect(outside).toEqual([]);
    expect(own).toEqual(expect.arrayContaining(['/reference', '/reference/assets/swagger-ui-bundle.js', '/reference/assets/start.js', '/openapi.json']));
    expect(errors).toEqual([]);
  } finally {
    await page.close();
  }
});
