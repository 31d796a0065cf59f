import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { requireDist, spawnBuiltWorker, type Spawned } from '../support/process';
import { WebhookReceiver } from '../support/webhook-receiver';
import { attemptsOf, deliveriesOf, eventually, FAST_WEBHOOKS, newOrder, setUrl, transition, verifies } from '../support/webhooks';

/**
 * A worker killed (SIGKILL) after the receiver got the request but before the outcome was recorded:
 * the lease expires, the sweeper of a surviving worker re-queues the delivery, and the receiver gets
 * it again with the same idempotency key and body — at-least-once, as documented.
 */
let db: TestDatabase;
let api: TestGateway;
let survivor: TestGateway | undefined;
let worker: Spawned | undefined;
let r: WebhookReceiver;

beforeAll(async () => {
  requireDist();
  db = await createTestDatabase();
  // API role only: it runs no delivery loop, so the spawned worker is the only one sending.
  api = await startTestGateway({ ...FAST_WEBHOOKS, ROLE: 'api' }, { db });
  r = await WebhookReceiver.start();
});
afterAll(async () => {
  await worker?.kill();
  await survivor?.close();
  await api?.close();
  await r?.close();
  await db?.drop();
});

it('a crash between sending and recording: delivered again after the lease, same key and bytes; recorded once as delivered', async () => {
  const m = await createMerchant(api.app);
  await setUrl(api.app, m.merchantId, 'sandbox', r.url);

  worker = await spawnBuiltWorker({
    databaseUrl: db.url,
    dataDir: mkdtempSync(join(tmpdir(), 'cpg-wh-crash-')),
    // The receiver is on loopback: refused unless allowed explicitly.
    env: { WEBHOOK_ALLOW_PRIVATE_URLS: 'true', ...FAST_WEBHOOKS },
    ready: /gateway started/,
    readyTimeoutMs: 60_000,
  });

  r.reply = (_w, n) => (n === 1 ? 'hang' : { status: 200 });
  const order = await newOrder(api.app, m.merchantId);
  await transition(api.app, order.id, 'Success');
  await r.waitFor(1, 60_000);

  // The receiver has the request; the worker dies before any answer (so before recording).
  worker.child.kill('SIGKILL');
  await worker.exited;
  r.release(200);
  const [held] = await deliveriesOf(api.app, m.merchantId);
  expect(held).toMatchObject({ state: 'sending', attempts: 1 });

  // A surviving worker: its sweeper re-queues the expired lease (timeout 1.5 s → lease 5 s), its loop resends.
  const t0 = Date.now();
  survivor = await startTestGateway({ ...FAST_WEBHOOKS, ROLE: 'worker' }, { db });
  await r.waitFor(2, 90_000);
  const [done] = await eventually(async () => {
    const rows = await deliveriesOf(api.app, m.merchantId);
    return rows[0]?.state === 'delivered' ? rows : null;
  });
  console.log(`redelivered ${Date.now() - t0} ms after the survivor started`);

  const [first, second] = r.received;
  expect(second!.headers['x-service-idempotency-key']).toBe(first!.headers['x-service-idempotency-key']);
  expect(second!.headers['x-service-idempotency-key']).toBe(done!.idempotency_key);
  expect(second!.raw).toEqual(first!.raw);
  expect(verifies(m.sandboxKey, second!)).toBe(true);
  expect(await attemptsOf(api.app, done!.id)).toMatchObject([
    { number: 1, outcome: 'lost', http_status: null, error: expect.stringMatching(/no outcome recorded.*same idempotency key/) },
    { number: 2, outcome: 'delivered', http_status: 200 },
  ]);
  await new Promise((ok) => setTimeout(ok, 1000));
  expect(r.received).toHaveLength(2);
}, 240_000); // a survivor's start and the lease on a loaded machine
