/**
 * The refund claim page's anonymous endpoints, on the real gateway and PostgreSQL: they spend their own
 * budgets (per IP for every call, per link for address submissions), answer 429 in the envelope with
 * Retry-After, leave the merchant's API and the public pages untouched, and never write the token to
 * the logs; the page itself carries the checkout's security headers. Client IPs are set with
 * X-Forwarded-For (TRUST_PROXY), as a load balancer would.
 */
import { Writable } from 'node:stream';
import { createLogger } from '../../src/http/logger';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { http, type HttpResult } from '../support/http';

const CLAIM_IP_PER_MIN = 12;
const CLAIM_TOKEN_PER_MIN = 3;
let gw: TestGateway;
let m: Awaited<ReturnType<typeof createMerchant>>;
const logged: string[] = [];
const from = (ip: string) => ({ 'x-forwarded-for': ip });

beforeAll(async () => {
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      logged.push(chunk.toString());
      done();
    },
  });
  gw = await startTestGateway(
    {
      TRUST_PROXY: 'true',
      LOG_LEVEL: 'debug',
      RATE_LIMIT_CLAIM_IP_PER_MIN: String(CLAIM_IP_PER_MIN),
      RATE_LIMIT_CLAIM_TOKEN_PER_MIN: String(CLAIM_TOKEN_PER_MIN),
      RATE_LIMIT_PUBLIC_PER_MIN: '1000',
    },
    { log: createLogger('debug', sink) },
  );
  m = await createMerchant(gw.app);
});
afterAll(() => gw?.close());

const submit = (token: string, ip: string) =>
  http(gw.url, '/refund/claim', {
    body: { token, address: '0x000000000000000000000000000000000000dEaD', confirm_address: '0x000000000000000000000000000000000000dEaD' },
    headers: from(ip),
  });
const read = (token: string, ip: string) => http(gw.url, '/refund/claim', { method: 'GET', headers: { 'x-claim-token': token, ...from(ip) } });

function expectLimited(res: HttpResult, message: RegExp): void {
  expect(res.status).toBe(429);
  expect(res.body).toMatchObject({ status_code: 429, data: { code: 'RATE_LIMITED' } });
  expect(res.body.message).toMatch(message);
  const retryAfter = Number(res.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(60);
}

it('address submissions through one link are bounded per link, whatever the IP; another link keeps its own budget', async () => {
  const link = 'L'.repeat(43);
  for (let i = 0; i < CLAIM_TOKEN_PER_MIN; i++) expect((await submit(link, `10.1.0.${i + 1}`)).status).toBe(404);
  expectLimited(await submit(link, '10.1.0.99'), /Too many addresses tried for this refund link/);
  expect((await submit('K'.repeat(43), '10.1.0.99')).status).toBe(404);
});

it('the claim calls of one IP are bounded; the public pages, other IPs and the merchant API are not touched by them', async () => {
  const ip = '10.2.0.1';
  for (let i = 0; i < CLAIM_IP_PER_MIN; i++) expect((await read(`T${i}`.padEnd(43, 'x'), ip)).status).toBe(404);
  expectLimited(await read('U'.repeat(43), ip), /Too many refund claim requests from this IP address/);
  expectLimited(await submit('V'.repeat(43), ip), /Too many refund claim requests from this IP address/);
  // The page itself spends the public budget, the merchant's server its own quota.
  const page = await fetch(`${gw.url}/refund`, { headers: from(ip) });
  expect(page.status).toBe(200);
  expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
  expect((await read('W'.repeat(43), '10.2.0.2')).status).toBe(404);
  const order = await http(gw.url, '/api/v2/testnet/merchant/fiat/order', {
    body: { merchant_id: m.merchantId, order_no: `B-${Date.now()}`, amount: '150000' },
    headers: { 'api-key': m.sandboxKey, ...from(ip) },
  });
  expect(order.status).toBe(201);
});

it('the token is never logged: not from the header, the body, nor the page URL', async () => {
  const token = 'secret-claim-token-' + 'q'.repeat(30);
  await read(token, '10.3.0.1');
  await submit(token, '10.3.0.2');
  await fetch(`${gw.url}/refund?lang=en#token=${token}`, { headers: from('10.3.0.3') });
  const all = logged.join('');
  // The requests were logged (so the check can fail) ...
  expect(all).toContain('/refund/claim');
  // ... and the token appears nowhere.
  expect(all).not.toContain(token);
});

it('the page: its security headers, no inline script, HTML + CSS + script at most 40 KB uncompressed', async () => {
  const page = await http(gw.url, '/refund?lang=en');
  expect(page.status).toBe(200);
  const csp = page.headers.get('content-security-policy')!;
  expect(csp).toContain("frame-ancestors 'none'");
  expect(csp).toContain("script-src 'self'");
  expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:/);
  expect(page.headers.get('referrer-policy')).toBe('no-referrer');
  expect(page.headers.get('x-frame-options')).toBe('DENY');
  expect(page.headers.get('cache-control')).toBe('no-store');
  expect(page.text).toContain('<html lang="en">');
  expect(page.text).not.toMatch(/<script>(?!<\/script>)|<script\s+(?!src=|type="application\/json")/);
  let total = Buffer.byteLength(page.text);
  for (const src of page.text.match(/(?:src|href)="(\/checkout\/assets\/[^"]+)"/g)!.map((s) => s.split('"')[1]!)) {
    const a = await http(gw.url, src);
    expect(a.status).toBe(200);
    total += Buffer.byteLength(a.text);
  }
  expect(total).toBeLessThanOrEqual(40 * 1024);
});
