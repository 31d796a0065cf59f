import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { retryAfterMs, retryingFetch } from '../../packages/sdk/src/retry';

/** The SDK's 429 handling against a real HTTP peer: Retry-After honoured, the same request sent again, a cap on waiting. */
let server: Server;
let base = '';
const seen: { at: number; body: string }[] = [];
let plan: { status: number; retryAfter?: string }[] = [];
beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.push({ at: Date.now(), body });
      const next = plan.shift() ?? { status: 200 };
      res.writeHead(next.status, { 'content-type': 'application/json', ...(next.retryAfter ? { 'retry-after': next.retryAfter } : {}) });
      res.end(JSON.stringify({ status_code: next.status, message: 'x', data: {} }));
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((ok) => server.close(ok)));
beforeEach(() => (seen.length = 0));

it('waits Retry-After seconds and sends the same body again', async () => {
  plan = [{ status: 429, retryAfter: '1' }, { status: 200 }];
  const res = await retryingFetch(fetch)(`${base}/x`, { method: 'POST', body: '{"a":1}', headers: { 'content-type': 'application/json' } });
  expect(res.status).toBe(200);
  expect(seen.map((s) => s.body)).toEqual(['{"a":1}', '{"a":1}']);
  expect(seen[1]!.at - seen[0]!.at).toBeGreaterThanOrEqual(950);
});

it('gives up after maxRetries and returns the 429; a Retry-After beyond maxDelayMs is not waited for', async () => {
  plan = [{ status: 429 }, { status: 429 }, { status: 429 }];
  const res = await retryingFetch(fetch, { maxRetries: 2, baseDelayMs: 10 })(`${base}/x`);
  expect(res.status).toBe(429);
  expect(seen).toHaveLength(3);
  seen.length = 0;
  plan = [{ status: 429, retryAfter: '3600' }];
  expect((await retryingFetch(fetch, { maxDelayMs: 5_000 })(`${base}/x`)).status).toBe(429);
  expect(seen).toHaveLength(1);
});

it('does not retry other errors', async () => {
  plan = [{ status: 503, retryAfter: '1' }];
  expect((await retryingFetch(fetch)(`${base}/x`)).status).toBe(503);
  expect(seen).toHaveLength(1);
});

it('reads Retry-After as seconds or an HTTP date', () => {
  expect(retryAfterMs('7')).toBe(7000);
  expect(retryAfterMs(new Date(10_000 + 5_000).toUTCString(), 10_000)).toBe(5_000);
  expect(retryAfterMs(null)).toBeNull();
  expect(retryAfterMs('soon')).toBeNull();
});
