import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { http } from '../support/http';

/**
 * API processes cache key lookups (one query fewer on the merchants' hot path). A rotation on ANY
 * process must still make the old key fail at once everywhere: it is broadcast with NOTIFY in the
 * rotating transaction, and the cache is bypassed while a process cannot hear the broadcast.
 */
let a: TestGateway;
let b: TestGateway;
beforeAll(async () => {
  a = await startTestGateway({ ROLE: 'api', API_KEY_CACHE_TTL_MS: '60000' });
  b = await startTestGateway({ ROLE: 'api', API_KEY_CACHE_TTL_MS: '60000' }, { db: a.db });
});
afterAll(async () => {
  await b?.close();
  await a?.close();
});

const me = (gw: TestGateway, key: string) => http(gw.url, '/api/v2/testnet/merchant/me', { headers: { 'api-key': key } });

it('a rotation on another process evicts this process’s cached key at once', async () => {
  const m = await createMerchant(a.app);
  expect((await me(a, m.sandboxKey)).status).toBe(200); // now cached on A
  await b.app.apiKeys.rotate(b.app.orm.em.fork(), m.merchantId, 'sandbox');
  // The NOTIFY is delivered on commit; allow it the time of one round trip, not the cache TTL.
  let status = 0;
  for (let i = 0; i < 20 && status !== 401; i++) {
    status = (await me(a, m.sandboxKey)).status;
    if (status !== 401) await new Promise((r) => setTimeout(r, 10));
  }
  expect(status).toBe(401);
});

it('the rotating process evicts synchronously: the very next request fails', async () => {
  const m = await createMerchant(a.app);
  expect((await me(a, m.sandboxKey)).status).toBe(200);
  await a.app.apiKeys.rotate(a.app.orm.em.fork(), m.merchantId, 'sandbox');
  expect((await me(a, m.sandboxKey)).status).toBe(401);
});

it('without the revocation feed the cache is bypassed', async () => {
  const m = await createMerchant(a.app);
  expect((await me(b, m.sandboxKey)).status).toBe(200);
  await b.listen!.close(); // B can no longer hear rotations
  await a.app.apiKeys.rotate(a.app.orm.em.fork(), m.merchantId, 'sandbox');
  expect((await me(b, m.sandboxKey)).status).toBe(401);
});
