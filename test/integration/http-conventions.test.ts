import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { http } from '../support/http';

// Every REST answer of this suite must match schema/openapi.json.

/** IETF RateLimit / RateLimit-Policy headers on REST answers, besides Retry-After on 429 (docs/api.md "Rate limits"). */
let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway({ RATE_LIMIT_MERCHANT_PER_MIN: '3', RATE_LIMIT_PUBLIC_PER_MIN: '50' });
}, 120_000);
afterAll(() => gw?.close());

it('each answer says the budget it spent from, what remains and when it resets; the 429 says it too', async () => {
  const m = await createMerchant(gw.app);
  const me = () => http(gw.url, '/api/v2/testnet/merchant/me', { headers: { 'api-key': m.sandboxKey } });
  const answers = [await me(), await me(), await me()];
  expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
  expect(answers.map((a) => a.headers.get('ratelimit-policy'))).toEqual(Array(3).fill('"merchant";q=3;w=60'));
  expect(answers.map((a) => /^"merchant";r=(\d+);t=(\d+)$/.exec(a.headers.get('ratelimit') ?? '')?.[1])).toEqual(['2', '1', '0']);
  const refused = await me();
  expect(refused.status).toBe(429);
  expect(refused.body.data.code).toBe('RATE_LIMITED');
  const retryAfter = Number(refused.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(60);
  expect(refused.headers.get('ratelimit')).toBe(`"merchant";r=0;t=${retryAfter}`);
  expect(refused.headers.get('ratelimit-policy')).toBe('"merchant";q=3;w=60');
  // A public route names its own budget.
  const nets = await http(gw.url, '/api/v2/testnet/networks');
  expect(nets.headers.get('ratelimit-policy')).toBe('"public";q=50;w=60');
});

it('serves the OpenAPI document and the offline reference page', async () => {
  const doc = await http(gw.url, '/openapi.json');
  expect(doc.status).toBe(200);
  expect(doc.body.openapi).toBe('3.1.0');
  expect(doc.body.paths['/api/v2/testnet/merchant/fiat/order'].post['x-rate-limit']).toEqual({ budget: 'merchant', limit: 3, window_seconds: 60 });
  const page = await http(gw.url, '/reference');
  expect(page.status).toBe(200);
  expect(page.text).toContain('/reference/assets/swagger-ui-bundle.js');
  expect((await http(gw.url, '/reference/assets/swagger-ui-bundle.js')).status).toBe(200);
  expect((await http(gw.url, '/reference/assets/nope.js')).status).toBe(404);
});
