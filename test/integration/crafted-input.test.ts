/**
 * Crafted dates and cursors are the caller's mistake (BAD_USER_INPUT / 400), never a
 * 500, on every date or cursor input of the order listing.
 */
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { http } from '../support/http';

let gw: TestGateway;
let apiKey: string;
beforeAll(async () => {
  gw = await startTestGateway();
  apiKey = (await createMerchant(gw.app)).sandboxKey;
});
afterAll(() => gw?.close());

const orders = (args: string) =>
  http(gw.url, '/graphql', { body: { query: `{ orders(${args}) { nextCursor nodes { orderNo } } }` }, headers: { 'api-key': apiKey } });
const b64 = (s: string) => Buffer.from(s).toString('base64url');

it.each([
  ['from: "+275760-09-13T00:00:00Z"'],
  ['to: "+275760-09-13T00:00:00Z"'],
  ['from: "0000-01-01"'],
  ['from: "0000-01-01T00:00:00Z"'],
  ['to: "-000001-01-01T00:00:00Z"'],
  ['from: "2026-13-45T99:99:99Z"'],
  ['after: "!!!not base64!!!"'],
  [`after: "${b64('garbage')}"`],
  [`after: "${b64('0000-01-01T00:00:00Z|00000000-0000-0000-0000-000000000000')}"`],
  [`after: "${b64('+275760-09-13T00:00:00.000Z|00000000-0000-0000-0000-000000000000')}"`],
  [`after: "${b64('2026-01-01T00:00:00Z|not-a-uuid-but-36-characters-long----')}"`],
])('orders(%s) is a client error, not a 500', async (args) => {
  const res = await orders(args);
  expect(res.status).toBeLessThan(500);
  const code = res.body.errors?.[0]?.extensions?.code;
  expect(['BAD_USER_INPUT', 'VALIDATION_FAILED', 'GRAPHQL_VALIDATION_FAILED']).toContain(code);
  expect(res.body.data?.orders ?? null).toBeNull();
});
