import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { http } from '../support/http';
import { ContractViolation } from '../support/openapi-contract';

/**
 * The contract check of the tests' HTTP helper is fatal in every suite: an answer off
 * schema/openapi.json rejects the request that received it. A plain node server plays a gateway that
 * drifted from its document.
 */
let server: Server;
let base: string;
const answers: Record<string, { status: number; body: unknown }> = {
  // getOrder's 200 without `data.request`.
  '/api/v2/testnet/merchant/fiat/getOrder': { status: 200, body: { status_code: 200, message: 'Success', data: { expired_at: 1 } } },
  // An error code createOrder does not list.
  '/api/v2/testnet/merchant/fiat/order': { status: 400, body: { status_code: 400, message: 'nope', data: { code: 'SWEEP_IN_PROGRESS' } } },
  // A status the path does not document.
  '/api/v2/testnet/listToken': { status: 418, body: { status_code: 418, message: 'teapot', data: { code: 'TEAPOT' } } },
  // A documented answer: passes.
  '/api/v2/testnet/merchant/me': { status: 401, body: { status_code: 401, message: 'Missing api-key', data: { code: 'UNAUTHENTICATED' } } },
};

beforeAll(async () => {
  server = createServer((req, res) => {
    const a = answers[new URL(req.url ?? '/', 'http://x').pathname] ?? {
      status: 404,
      body: { status_code: 404, message: 'Not found', data: { code: 'ROUTE_NOT_FOUND' } },
    };
    res.writeHead(a.status, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(a.body));
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((ok) => server.close(() => ok())));

it('rejects a body off its schema, an unlisted error code and an undocumented status', async () => {
  await expect(http(base, '/api/v2/testnet/merchant/fiat/getOrder', { body: { merchant_id: 'm', order_no: 'A' } })).rejects.toThrow(ContractViolation);
  await expect(http(base, '/api/v2/testnet/merchant/fiat/order', { body: {} })).rejects.toThrow(/SWEEP_IN_PROGRESS|must be equal to one of the allowed values/);
  await expect(http(base, '/api/v2/testnet/listToken', { method: 'GET' })).rejects.toThrow(/status 418 is not documented/);
});

it('passes a documented answer, and answers outside /api/v2', async () => {
  expect((await http(base, '/api/v2/testnet/merchant/me', { method: 'GET' })).status).toBe(401);
  expect((await http(base, '/healthz', { method: 'GET' })).status).toBe(404);
});
