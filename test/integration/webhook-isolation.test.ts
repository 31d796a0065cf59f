import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { WebhookReceiver } from '../support/webhook-receiver';
import { attemptsOf, deliveriesOf, eventually, FAST_WEBHOOKS, newOrder, setUrl, transition } from '../support/webhooks';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const receivers: WebhookReceiver[] = [];
const receiver = async () => {
  const r = await WebhookReceiver.start();
  receivers.push(r);
  return r;
};
afterAll(async () => {
  for (const r of receivers) r.release();
  await Promise.all(receivers.map((r) => r.close()));
});

/** `n` orders of a merchant moved to Expired: `n` transaction.expired webhooks. */
async function events(gw: TestGateway, merchantId: string, n: number): Promise<void> {
  const orders = await Promise.all(Array.from({ length: n }, () => newOrder(gw.app, merchantId)));
  await Promise.all(orders.map((o) => transition(gw.app, o.id, 'Expired')));
}

describe('a slow endpoint', () => {
  let gw: TestGateway;
  // 8 slots per worker, 4 per endpoint, 60 s timeouts: a hanging endpoint holds 4 slots for the whole
  // test, so whatever reaches the healthy endpoint went past it, however slow the machine is.
  beforeAll(async () => {
    gw = await startTestGateway({
      ...FAST_WEBHOOKS,
      WEBHOOK_CONCURRENCY: '8',
      WEBHOOK_CONCURRENCY_PER_ENDPOINT: '4',
      WEBHOOK_TIMEOUT_MS: '60000',
      WEBHOOK_RETRY_SCHEDULE_S: '60',
    });
  });
  afterAll(() => gw?.close(), 120_000);

  it('holds at most its per-endpoint share; another merchant is delivered at once meanwhile', async () => {
    const slow = await receiver();
    slow.reply = () => 'hang';
    const fast = await receiver();
    const s = await createMerchant(gw.app);
    const f = await createMerchant(gw.app);
    await setUrl(gw.app, s.merchantId, 'sandbox', slow.url);
    await setUrl(gw.app, f.merchantId, 'sandbox', fast.url);

    await events(gw, s.merchantId, 20);
    await slow.waitFor(4);
    const t0 = Date.now();
    await events(gw, f.merchantId, 20);
    await fast.waitFor(20, 45_000);
    const elapsed = Date.now() - t0;
    await eventually(async () => (await deliveriesOf(gw.app, f.merchantId)).filter((d) => d.state === 'delivered').length === 20, 45_000);
    // Meanwhile the hanging endpoint still held its 4 slots, none timed out or was answered (no attempt
    // recorded), and got nothing more: the healthy merchant's 20 went through the other 4 slots.
    expect(slow.received).toHaveLength(4);
    const slowRows = await deliveriesOf(gw.app, s.merchantId);
    expect(slowRows.filter((d) => d.state === 'sending')).toHaveLength(4);
    expect(slowRows.filter((d) => d.state === 'pending')).toHaveLength(16);
    for (const d of slowRows.filter((r) => r.state === 'sending')) expect(await attemptsOf(gw.app, d.id)).toEqual([]);
    console.log(`20 deliveries to a healthy endpoint in ${elapsed} ms while a hanging endpoint held 4 of 8 slots`);
    // Drop the held connections: the gateway's 4 attempts end now instead of at their 60 s timeout, so it stops promptly.
    await slow.close();
  }, 120_000);
});

describe('two workers', () => {
  let gw1: TestGateway;
  let gw2: TestGateway;
  beforeAll(async () => {
    // A 5 s timeout (lease 12 s): the receiver answers at once, and on a loaded CI machine a stalled event
    // loop outlived the default 5 s lease, so the sweeper wrote a `lost` attempt beside the real one.
    const env = { ...FAST_WEBHOOKS, WEBHOOK_TIMEOUT_MS: '5000', WEBHOOK_RETRY_SCHEDULE_S: '0.2,0.2,0.2' };
    gw1 = await startTestGateway(env);
    gw2 = await startTestGateway({ ...env, ROLE: 'worker' }, { db: gw1.db });
  });
  afterAll(async () => {
    await gw2?.close();
    await gw1?.close();
  });

  it('never send the same delivery twice: every key arrives exactly once per attempt, retries included', async () => {
    const PER_MERCHANT = 50;
    const merchants = [];
    for (let i = 0; i < 4; i++) {
      const r = await receiver();
      // The first request of each key gets a 503, the second a 200: every delivery is attempted exactly twice.
      const seen = new Set<string>();
      r.reply = (w) => {
        const key = String(w.headers['x-service-idempotency-key']);
        if (seen.has(key)) return { status: 200 };
        seen.add(key);
        return { status: 503 };
      };
      const m = await createMerchant(gw1.app);
      await setUrl(gw1.app, m.merchantId, 'sandbox', r.url);
      merchants.push({ m, r });
    }
    const recordedBefore = [gw1.webhooks!.recorded, gw2.webhooks!.recorded];
    await Promise.all(merchants.map(({ m }) => events(gw1, m.merchantId, PER_MERCHANT)));
    await Promise.all(merchants.map(({ r }) => r.waitFor(PER_MERCHANT * 2, 30_000)));
    for (const { m } of merchants) {
      await eventually(async () => (await deliveriesOf(gw1.app, m.merchantId)).every((d) => d.state === 'delivered'), 15_000, 'all delivered');
    }
    await sleep(800);

    for (const { m, r } of merchants) {
      expect(r.received).toHaveLength(PER_MERCHANT * 2);
      const perKey = new Map<string, number>();
      for (const w of r.received)
        perKey.set(String(w.headers['x-service-idempotency-key']), (perKey.get(String(w.headers['x-service-idempotency-key'])) ?? 0) + 1);
      expect(perKey.size).toBe(PER_MERCHANT);
      expect([...perKey.values()].every((n) => n === 2)).toBe(true);
      const rows = await deliveriesOf(gw1.app, m.merchantId);
      expect(rows).toHaveLength(PER_MERCHANT);
      for (const d of rows)
        expect((await attemptsOf(gw1.app, d.id)).map((a) => [a.number, a.http_status, a.outcome])).toEqual([
          [1, 503, 'retry'],
          [2, 200, 'delivered'],
        ]);
    }
    // Both workers took part.
    expect(gw1.webhooks!.recorded).toBeGreaterThan(recordedBefore[0]!);
    expect(gw2.webhooks!.recorded).toBeGreaterThan(recordedBefore[1]!);
    console.log(`two workers: ${gw1.webhooks!.recorded - recordedBefore[0]!} and ${gw2.webhooks!.recorded - recordedBefore[1]!} attempts`);
  });

  it('racing claims over the same due rows never hand one delivery to both', async () => {
    const r = await receiver();
    const m = await createMerchant(gw1.app);
    await setUrl(gw1.app, m.merchantId, 'sandbox', r.url);
    // Workers paused: only the two services below claim.
    await gw1.webhooks!.stop();
    await gw2.webhooks!.stop();
    await events(gw1, m.merchantId, 60);
    await eventually(async () => {
      await gw1.app.webhooks.outbox.dispatchOutbox(gw1.app.orm.em.fork());
      return (await deliveriesOf(gw1.app, m.merchantId)).length === 60;
    });
    const claimed: string[] = [];
    await Promise.all(
      [gw1, gw2, gw1, gw2].map(async (g) => {
        for (let i = 0; i < 10; i++) {
          const got = await g.app.webhooks.queue.claim(g.app.orm.em.fork(), { limit: 7, perEndpoint: 100, inflight: {} });
          claimed.push(...got.map((c) => c.id));
        }
      }),
    );
    expect(claimed).toHaveLength(60);
    expect(new Set(claimed).size).toBe(60);
  });
});
