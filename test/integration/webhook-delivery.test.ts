import { formatDecimal } from '../../src/common/money';
import { LoginDocument, RedeliverWebhookDocument, SendTestWebhookDocument, SetNotificationUrlDocument, WebhookDeliveriesDocument } from '../generated/graphql';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { bearer, gql } from '../support/graphql';
import { WebhookReceiver } from '../support/webhook-receiver';
import {
  attemptsOf,
  bodyOf,
  deliveriesOf,
  eventually,
  FAST_WEBHOOKS,
  newOrder,
  payOrder,
  SEPOLIA_USDT,
  setUrl,
  transition,
  verifies,
} from '../support/webhooks';
import { freshLogin } from '../support/reauth';

let gw: TestGateway;
const receivers: WebhookReceiver[] = [];
const receiver = async () => {
  const r = await WebhookReceiver.start();
  receivers.push(r);
  return r;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  gw = await startTestGateway({ ...FAST_WEBHOOKS, FALLBACK_RATE_USDT_IDR: '16250' });
});
afterAll(async () => {
  await gw?.close();
  await Promise.all(receivers.map((r) => r.close()));
});

/** A sandbox merchant whose notification_url points at a fresh receiver. */
async function merchantWithReceiver() {
  const r = await receiver();
  const m = await createMerchant(gw.app);
  await setUrl(gw.app, m.merchantId, 'sandbox', r.url);
  return { m, r };
}

const stateOf = async (merchantId: string, state: string, count = 1) => {
  const rows = await deliveriesOf(gw.app, merchantId);
  return rows.filter((d) => d.state === state).length >= count ? rows : null;
};

describe('transaction.success', () => {
  it('is signed over the raw body with the API key, with exactly the documented headers and a versioned body to reconcile with', async () => {
    const { m, r } = await merchantWithReceiver();
    const paid = await payOrder(gw.app, gw.url, m);
    expect(paid.status).toBe('Success');
    await r.waitFor(1);
    const w = r.received[0]!;

    // Signature: HMAC-SHA256 of the exact raw bytes keyed with the sandbox API key, compared in constant time.
    expect(w.headers['x-service-signature']).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(verifies(m.sandboxKey, w)).toBe(true);
    expect(verifies(m.productionKey, w)).toBe(false);
    expect(verifies(m.sandboxKey, { ...w, raw: Buffer.from(w.raw.toString('utf8').replace('"Success"', '"Expired"')) })).toBe(false);

    // Headers: exactly these (names as sent, values exact).
    const names = w.rawHeaders.filter((_, i) => i % 2 === 0);
    expect(names.map((h) => h.toLowerCase()).sort()).toEqual(
      [
        'connection',
        'content-length',
        'content-type',
        'host',
        'user-agent',
        'x-service-delivery-id',
        'x-service-event',
        'x-service-idempotency-key',
        'x-service-signature',
        'webhook-id',
        'webhook-timestamp',
        'webhook-signature',
      ].sort(),
    );
    expect(names).toEqual(expect.arrayContaining(['X-Service-Signature', 'X-Service-Event', 'X-Service-Idempotency-Key']));
    expect(w.headers['content-type']).toBe('application/json');
    expect(w.headers['x-service-event']).toBe('transaction.success');
    expect(w.headers['x-service-idempotency-key']).toBe(paid.txHash);
    expect(Number(w.headers['content-length'])).toBe(w.raw.length);

    const total = formatDecimal(BigInt(paid.deposit.total_amount), 6);
    const body = bodyOf(w);
    expect(body).toEqual({
      version: '2026-11-01',
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      event: 'transaction.success',
      created_at: expect.any(Number),
      idempotency_key: paid.txHash,
      data: {
        order_no: paid.orderNo,
        merchant_id: m.merchantId,
        environment: 'sandbox',
        status: 'Success',
        previous_status: 'Created',
        sequence: expect.any(Number),
        amount: '150000',
        currency: 'IDR',
        network: 'ETHEREUM',
        token: { symbol: 'USDT', address: SEPOLIA_USDT, decimals: 6 },
        deposit_address: paid.deposit.address,
        amount_due_crypto: total,
        amount_received_crypto: total,
        overpaid: false,
        reorged: false,
        tx_hashes: [paid.txHash],
        payments: [
          {
            tx_hash: paid.txHash,
            log_index: 0,
            network: 'ETHEREUM',
            amount: total,
            block_number: '100',
            status: 'confirmed',
            late: false,
            detected_at: expect.any(Number),
            confirmed_at: expect.any(Number),
          },
        ],
        created_at: expect.any(Number),
        expired_at: expect.any(Number),
        paid_at: expect.any(Number),
      },
    });
    expect(body.data.expired_at).toBeGreaterThan(body.data.created_at);
    expect(Math.abs(body.created_at - Date.now() / 1000)).toBeLessThan(30);

    const [d] = await eventually(() => stateOf(m.merchantId, 'delivered'), 10_000, 'delivered');
    expect(d).toMatchObject({ event: 'transaction.success', idempotency_key: paid.txHash, attempts: 1 });
    expect(w.headers['x-service-delivery-id']).toBe(d!.id);
    expect(Buffer.from(d!.payload)).toEqual(w.raw);
    await sleep(500);
    expect(r.received).toHaveLength(1);
  });
});

describe('retries', () => {
  it('receiver down, then up: delivered once, with the same idempotency key and body', async () => {
    const r = await receiver();
    const m = await createMerchant(gw.app);
    await setUrl(gw.app, m.merchantId, 'sandbox', r.url);
    await r.down();
    const order = await newOrder(gw.app, m.merchantId);
    const { eventId } = await transition(gw.app, order.id, 'Success');

    const [d] = await eventually(async () => {
      const rows = await deliveriesOf(gw.app, m.merchantId);
      return rows[0] && (await attemptsOf(gw.app, rows[0].id)).length >= 1 ? rows : null;
    });
    await r.up();
    await r.waitFor(1);
    await eventually(() => stateOf(m.merchantId, 'delivered'));
    await sleep(800);
    expect(r.received).toHaveLength(1);
    expect(r.received[0]!.headers['x-service-idempotency-key']).toBe(`evt_${eventId}`);
    expect(d!.idempotency_key).toBe(`evt_${eventId}`);
    expect(r.received[0]!.raw.toString()).toBe(d!.payload);

    const attempts = await attemptsOf(gw.app, d!.id);
    expect(attempts.length).toBeGreaterThanOrEqual(2);
    for (const a of attempts.slice(0, -1)) expect(a).toMatchObject({ http_status: null, outcome: 'retry', error: expect.stringMatching(/ECONNREFUSED/) });
    expect(attempts.at(-1)).toMatchObject({ http_status: 200, outcome: 'delivered', error: null });
    expect(attempts.map((a) => a.number)).toEqual(attempts.map((_, i) => i + 1));
  });

  it('500 then 200: retried after the scheduled wait and delivered; both attempts carry the same bytes, key and signature', async () => {
    const { m, r } = await merchantWithReceiver();
    r.reply = (_w, n) => (n === 1 ? { status: 500, body: 'boom' } : { status: 200 });
    const order = await newOrder(gw.app, m.merchantId);
    await transition(gw.app, order.id, 'Success');
    await r.waitFor(2);
    const [d] = await eventually(() => stateOf(m.merchantId, 'delivered'));
    const [a, b] = r.received;
    expect(b!.raw).toEqual(a!.raw);
    expect(b!.headers['x-service-idempotency-key']).toBe(a!.headers['x-service-idempotency-key']);
    expect(b!.headers['x-service-signature']).toBe(a!.headers['x-service-signature']);
    expect(b!.at - a!.at).toBeGreaterThanOrEqual(250); // the schedule's 0.3 s
    expect(await attemptsOf(gw.app, d!.id)).toMatchObject([
      { number: 1, http_status: 500, outcome: 'retry' },
      { number: 2, http_status: 200, outcome: 'delivered' },
    ]);
    await sleep(500);
    expect(r.received).toHaveLength(2);
  });

  it.each([400, 401, 404, 410, 422])('%i: the receiver refused it — failed at once, never retried', async (status) => {
    const { m, r } = await merchantWithReceiver();
    r.reply = () => ({ status, body: 'no' });
    const order = await newOrder(gw.app, m.merchantId);
    await transition(gw.app, order.id, 'Expired');
    const [d] = await eventually(() => stateOf(m.merchantId, 'failed'));
    expect(await attemptsOf(gw.app, d!.id)).toMatchObject([{ number: 1, http_status: status, outcome: 'failed' }]);
    await sleep(700);
    expect(r.received).toHaveLength(1);
  });

  it.each([408, 429, 503])('%i is retried', async (status) => {
    const { m, r } = await merchantWithReceiver();
    r.reply = (_w, n) => (n === 1 ? { status } : { status: 204 });
    const order = await newOrder(gw.app, m.merchantId);
    await transition(gw.app, order.id, 'Expired');
    const [d] = await eventually(() => stateOf(m.merchantId, 'delivered'));
    expect(await attemptsOf(gw.app, d!.id)).toMatchObject([
      { http_status: status, outcome: 'retry' },
      { http_status: 204, outcome: 'delivered' },
    ]);
  });

  it('429 with Retry-After waits at least that long', async () => {
    const { m, r } = await merchantWithReceiver();
    r.reply = (_w, n) => (n === 1 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 200 });
    const order = await newOrder(gw.app, m.merchantId);
    await transition(gw.app, order.id, 'Expired');
    await r.waitFor(2);
    expect(r.received[1]!.at - r.received[0]!.at).toBeGreaterThanOrEqual(950);
  });

  it('a redirect is not followed and fails the delivery', async () => {
    const elsewhere = await receiver();
    const { m, r } = await merchantWithReceiver();
    r.reply = () => ({ status: 302, headers: { location: elsewhere.url } });
    const order = await newOrder(gw.app, m.merchantId);
    await transition(gw.app, order.id, 'Expired');
    const [d] = await eventually(() => stateOf(m.merchantId, 'failed'));
    expect(await attemptsOf(gw.app, d!.id)).toMatchObject([{ http_status: 302, outcome: 'failed' }]);
    expect(elsewhere.received).toHaveLength(0);
  });

  it('the schedule is finite: always 503 → failed after 1 + len(schedule) attempts', async () => {
    const { m, r } = await merchantWithReceiver();
    r.reply = () => ({ status: 503 });
    const order = await newOrder(gw.app, m.merchantId);
    await transition(gw.app, order.id, 'Expired');
    const [d] = await eventually(() => stateOf(m.merchantId, 'failed'));
    const attempts = await attemptsOf(gw.app, d!.id);
    expect(attempts.map((a) => a.outcome)).toEqual(['retry', 'retry', 'retry', 'failed']);
    await sleep(700);
    expect(r.received).toHaveLength(4);
  });

  it('a long answer is read up to 2 KiB, cut as bytes (an emoji across the cut cannot break the record)', async () => {
    const { m, r } = await merchantWithReceiver();
    r.reply = () => ({ status: 200, body: 'a'.repeat(2047) + '😀'.repeat(1000) });
    const order = await newOrder(gw.app, m.merchantId);
    await transition(gw.app, order.id, 'Expired');
    const [d] = await eventually(() => stateOf(m.merchantId, 'delivered'));
    const [row] = await gw.app.orm.em.fork().getConnection().execute(`select response_body from webhook_attempts where delivery_id = ?`, [d!.id]);
    expect(row.response_body).toBe('a'.repeat(2047) + '\uFFFD');
    expect(r.received).toHaveLength(1);
  });

  it('a timeout counts as a retryable failure', async () => {
    const { m, r } = await merchantWithReceiver();
    r.reply = (_w, n) => (n === 1 ? 'hang' : { status: 200 });
    const order = await newOrder(gw.app, m.merchantId);
    await transition(gw.app, order.id, 'Expired');
    const [d] = await eventually(() => stateOf(m.merchantId, 'delivered'));
    const attempts = await attemptsOf(gw.app, d!.id);
    expect(attempts[0]).toMatchObject({ http_status: null, outcome: 'retry', error: 'timeout after 1500 ms' });
    expect(attempts[0]!.latency_ms).toBeGreaterThanOrEqual(1400);
    expect(attempts[1]).toMatchObject({ http_status: 200, outcome: 'delivered' });
    r.release();
  });
});

describe('events', () => {
  it('Underpaid, Expired, a late top-up to Success: one webhook each; Processing and Created send nothing', async () => {
    const { m, r } = await merchantWithReceiver();
    const a = await newOrder(gw.app, m.merchantId);
    await transition(gw.app, a.id, 'Processing');
    await transition(gw.app, a.id, 'Created');
    const expired = await transition(gw.app, a.id, 'Expired');
    const b = await newOrder(gw.app, m.merchantId);
    const underpaid = await transition(gw.app, b.id, 'Underpaid');
    const success = await transition(gw.app, b.id, 'Success');
    await r.waitFor(3);
    await sleep(500);
    expect(r.received).toHaveLength(3);
    const byEvent = Object.fromEntries(r.received.map((w) => [w.headers['x-service-event'], w]));
    expect(Object.keys(byEvent).sort()).toEqual(['transaction.expired', 'transaction.success', 'transaction.underpaid']);
    expect(byEvent['transaction.expired']!.headers['x-service-idempotency-key']).toBe(`evt_${expired.eventId}`);
    expect(bodyOf(byEvent['transaction.expired']!).data).toMatchObject({
      order_no: a.orderNo,
      status: 'Expired',
      previous_status: 'Created',
      network: null,
      deposit_address: null,
      payments: [],
      tx_hashes: [],
    });
    expect(byEvent['transaction.underpaid']!.headers['x-service-idempotency-key']).toBe(`evt_${underpaid.eventId}`);
    expect(bodyOf(byEvent['transaction.underpaid']!).data).toMatchObject({ order_no: b.orderNo, status: 'Underpaid', previous_status: 'Created' });
    // No payment caused it (a test transition): the stable fallback key.
    expect(byEvent['transaction.success']!.headers['x-service-idempotency-key']).toBe(`evt_${success.eventId}`);
    expect(bodyOf(byEvent['transaction.success']!).data).toMatchObject({ status: 'Success', previous_status: 'Underpaid' });
    for (const w of r.received) expect(verifies(m.sandboxKey, w)).toBe(true);
  });

  it('a late, overpaying transfer: transaction.expired, then transaction.success (tx hash key), transaction.late_payment and transaction.overpaid (event keys)', async () => {
    const { m, r } = await merchantWithReceiver();
    const paid = await payOrder(gw.app, gw.url, m, { late: true, extra: 5000n });
    expect(paid.status).toBe('Success');
    await r.waitFor(4);
    await sleep(500);
    expect(r.received).toHaveLength(4);
    const byEvent = Object.fromEntries(r.received.map((w) => [w.headers['x-service-event'], bodyOf(w)]));
    expect(Object.keys(byEvent).sort()).toEqual(['transaction.expired', 'transaction.late_payment', 'transaction.overpaid', 'transaction.success']);
    expect(byEvent['transaction.success']!.idempotency_key).toBe(paid.txHash);
    const amount = formatDecimal(paid.amount, 6);
    expect(byEvent['transaction.late_payment']).toMatchObject({
      idempotency_key: expect.stringMatching(/^evt_[0-9a-f-]{36}$/),
      data: {
        order_no: paid.orderNo,
        status: 'Success',
        late_payment: { tx_hash: paid.txHash, amount, within_late_window: true },
        payments: [{ tx_hash: paid.txHash, late: true }],
      },
    });
    expect(byEvent['transaction.overpaid']).toMatchObject({
      idempotency_key: expect.stringMatching(/^evt_[0-9a-f-]{36}$/),
      data: {
        overpaid: true,
        amount_received_crypto: amount,
        overpayment: { amount_due_crypto: formatDecimal(BigInt(paid.deposit.total_amount), 6), amount_received_crypto: amount, excess_crypto: '0.005' },
      },
    });
    const keys = r.received.map((w) => w.headers['x-service-idempotency-key']);
    expect(new Set(keys).size).toBe(4);
  });

  it('no notification_url for the environment: no delivery (the outbox row is consumed)', async () => {
    const { m } = await merchantWithReceiver();
    const order = await newOrder(gw.app, m.merchantId, 'production');
    await transition(gw.app, order.id, 'Success');
    const conn = gw.app.orm.em.fork().getConnection();
    await eventually(async () => (await conn.execute(`select count(*)::int as n from webhook_outbox`))[0].n === 0);
    expect(await deliveriesOf(gw.app, m.merchantId)).toHaveLength(0);
  });
});

describe('key rotation', () => {
  it('after a rotation new deliveries — and redeliveries of old ones — are signed with the new key', async () => {
    const { m, r } = await merchantWithReceiver();
    const first = await newOrder(gw.app, m.merchantId);
    await transition(gw.app, first.id, 'Expired');
    await r.waitFor(1);
    expect(verifies(m.sandboxKey, r.received[0]!)).toBe(true);
    const [old] = await eventually(() => stateOf(m.merchantId, 'delivered'));

    const rotated = await gw.app.apiKeys.rotate(gw.app.orm.em.fork(), m.merchantId, 'sandbox');
    const second = await newOrder(gw.app, m.merchantId);
    await transition(gw.app, second.id, 'Expired');
    await r.waitFor(2);
    expect(verifies(rotated.apiKey, r.received[1]!)).toBe(true);
    expect(verifies(m.sandboxKey, r.received[1]!)).toBe(false);

    const token = (await gql(gw.url, LoginDocument, { email: m.email, password: m.password })).data!.login.token;
    const res = await gql(gw.url, RedeliverWebhookDocument, { id: old!.id }, bearer(token));
    expect(res.errors).toBeUndefined();
    expect(res.data!.redeliverWebhook).toMatchObject({ id: old!.id, series: 2, idempotencyKey: old!.idempotency_key });
    await r.waitFor(3);
    const again = r.received[2]!;
    expect(again.raw.toString()).toBe(old!.payload);
    expect(again.headers['x-service-idempotency-key']).toBe(old!.idempotency_key);
    expect(verifies(rotated.apiKey, again)).toBe(true);
    expect(verifies(m.sandboxKey, again)).toBe(false);
  });
});

describe('GraphQL: settings, delivery log, redelivery, test events', () => {
  it('setNotificationUrl → sendTestWebhook → webhookDeliveries (filters, pagination) → redeliverWebhook', async () => {
    const r = await receiver();
    const m = await createMerchant(gw.app);
    const auth = bearer(await freshLogin(gw.url, m));

    const set = await gql(gw.url, SetNotificationUrlDocument, { environment: 'SANDBOX', url: r.url }, auth);
    expect(set.data!.setNotificationUrl).toEqual({ environment: 'SANDBOX', notificationUrl: r.url });
    const prodHttp = await gql(gw.url, SetNotificationUrlDocument, { environment: 'PRODUCTION', url: r.url }, auth);
    expect(prodHttp.errors![0]).toMatchObject({ extensions: { code: 'NOTIFICATION_URL_REJECTED' }, message: expect.stringMatching(/https/) });

    const test = await gql(gw.url, SendTestWebhookDocument, { environment: 'SANDBOX' }, auth);
    expect(test.errors).toBeUndefined();
    const t = test.data!.sendTestWebhook;
    expect(t).toMatchObject({ event: 'webhook.test', state: 'DELIVERED', attemptCount: 1, maxAttempts: 1, lastStatus: 200, idempotencyKey: `evt_${t.id}` });
    expect(t.attempts).toEqual([
      expect.objectContaining({
        series: 1,
        number: 1,
        httpStatus: 200,
        outcome: 'delivered',
        error: null,
        url: r.url,
        responseBody: 'ok',
        latencyMs: expect.any(Number),
      }),
    ]);
    expect(r.received).toHaveLength(1);
    expect(r.received[0]!.headers['x-service-event']).toBe('webhook.test');
    expect(verifies(m.sandboxKey, r.received[0]!)).toBe(true);
    expect(bodyOf(r.received[0]!)).toMatchObject({
      version: '2026-11-01',
      event: 'webhook.test',
      id: t.id,
      data: { test: true, merchant_id: m.merchantId, environment: 'sandbox' },
    });

    // Five order events: three Expired, two Success.
    const orders = [];
    for (let i = 0; i < 5; i++) orders.push(await newOrder(gw.app, m.merchantId));
    for (const [i, o] of orders.entries()) await transition(gw.app, o.id, i < 3 ? 'Expired' : 'Success');
    await r.waitFor(6);
    await eventually(() => stateOf(m.merchantId, 'delivered', 6));

    const all = await gql(gw.url, WebhookDeliveriesDocument, { environment: 'SANDBOX' }, auth);
    expect(all.data!.webhookDeliveries.nodes).toHaveLength(6);
    const success = await gql(gw.url, WebhookDeliveriesDocument, { environment: 'SANDBOX', event: 'transaction.success' }, auth);
    expect(success.data!.webhookDeliveries.nodes.map((n) => n.orderNo).sort()).toEqual([orders[3]!.orderNo, orders[4]!.orderNo].sort());
    const one = await gql(gw.url, WebhookDeliveriesDocument, { environment: 'SANDBOX', orderNo: orders[1]!.orderNo }, auth);
    expect(one.data!.webhookDeliveries.nodes).toMatchObject([
      { orderNo: orders[1]!.orderNo, event: 'transaction.expired', state: 'DELIVERED', attempts: [{ httpStatus: 200, outcome: 'delivered' }] },
    ]);
    expect((await gql(gw.url, WebhookDeliveriesDocument, { environment: 'SANDBOX', status: 'FAILED' }, auth)).data!.webhookDeliveries.nodes).toHaveLength(0);
    expect((await gql(gw.url, WebhookDeliveriesDocument, { environment: 'PRODUCTION' }, auth)).data!.webhookDeliveries.nodes).toHaveLength(0);
    const bad = await gql(gw.url, WebhookDeliveriesDocument, { environment: 'SANDBOX', event: 'order.status_changed' }, auth);
    expect(bad.errors![0]!.extensions!.code).toBe('VALIDATION_FAILED');

    // Pages of two: newest first, no overlap, all six.
    const seen: string[] = [];
    let after: string | null | undefined;
    do {
      const page = await gql(gw.url, WebhookDeliveriesDocument, { environment: 'SANDBOX', first: 2, after }, auth);
      seen.push(...page.data!.webhookDeliveries.nodes.map((n) => n.id));
      after = page.data!.webhookDeliveries.nextCursor;
    } while (after);
    expect(seen).toEqual(all.data!.webhookDeliveries.nodes.map((n) => n.id));

    // Redelivery: a new series with the same key and body; queued work is not redelivered twice.
    const target = one.data!.webhookDeliveries.nodes[0]!;
    const redo = await gql(gw.url, RedeliverWebhookDocument, { id: target.id }, auth);
    expect(redo.data!.redeliverWebhook).toMatchObject({ series: 2, attemptCount: 0, idempotencyKey: target.idempotencyKey });
    const twice = await gql(gw.url, RedeliverWebhookDocument, { id: target.id }, auth);
    if (twice.errors) expect(twice.errors[0]!.extensions!.code).toBe('CONFLICT');
    await r.waitFor(7);
    const final = await eventually(async () => {
      const res = await gql(gw.url, WebhookDeliveriesDocument, { environment: 'SANDBOX', orderNo: target.orderNo }, auth);
      const d = res.data!.webhookDeliveries.nodes[0]!;
      return d.state === 'DELIVERED' && d.series >= 2 ? d : null;
    });
    expect(final.attempts.map((a) => [a.series, a.number, a.outcome])).toEqual(
      twice.errors
        ? [
            [1, 1, 'delivered'],
            [2, 1, 'delivered'],
          ]
        : [
            [1, 1, 'delivered'],
            [2, 1, 'delivered'],
            [3, 1, 'delivered'],
          ],
    );
    expect(r.received.at(-1)!.raw.toString()).toBe(target.payload);

    // Another merchant's delivery is not found; unknown ids neither.
    const other = await createMerchant(gw.app);
    const otherAuth = bearer((await gql(gw.url, LoginDocument, { email: other.email, password: other.password })).data!.login.token);
    expect((await gql(gw.url, RedeliverWebhookDocument, { id: target.id }, otherAuth)).errors![0]!.extensions!.code).toBe('WEBHOOK_DELIVERY_NOT_FOUND');
    expect((await gql(gw.url, SendTestWebhookDocument, { environment: 'SANDBOX' }, otherAuth)).errors![0]!.extensions!.code).toBe('NOTIFICATION_URL_REJECTED');
    // An API key is not a dashboard login.
    expect((await gql(gw.url, WebhookDeliveriesDocument, { environment: 'SANDBOX' }, { 'api-key': m.sandboxKey })).errors![0]!.extensions!.code).toBe(
      'FORBIDDEN',
    );
  });

  it('a test event to a failing endpoint is recorded as failed, with the status and the answer', async () => {
    const { m, r } = await merchantWithReceiver();
    r.reply = () => ({ status: 500, body: 'receiver exploded' });
    const auth = bearer((await gql(gw.url, LoginDocument, { email: m.email, password: m.password })).data!.login.token);
    const res = await gql(gw.url, SendTestWebhookDocument, { environment: 'SANDBOX' }, auth);
    expect(res.data!.sendTestWebhook).toMatchObject({
      state: 'FAILED',
      lastStatus: 500,
      attempts: [{ httpStatus: 500, outcome: 'failed', responseBody: 'receiver exploded' }],
    });
  });

  it('the answer a merchant is shown is capped at 512 bytes and cleaned of control characters; headers are never echoed', async () => {
    const { m, r } = await merchantWithReceiver();
    // What an internal service might answer: a terminal escape, a bidi override, NULs, CR/LF, a secret header, and a lot of text.
    const hostile = 'ok\x1b[2J\u202Egnp.exe\u202C\r\nline2\ttab\x00\x07' + 'x'.repeat(3000);
    r.reply = () => ({ status: 200, body: hostile, headers: { 'x-internal-token': 'header-secret-42' } });
    const auth = bearer((await gql(gw.url, LoginDocument, { email: m.email, password: m.password })).data!.login.token);
    const res = await gql(gw.url, SendTestWebhookDocument, { environment: 'SANDBOX' }, auth);
    expect(res.errors).toBeUndefined();
    const shown = res.data!.sendTestWebhook.attempts[0]!.responseBody!;
    expect(Buffer.byteLength(shown, 'utf8')).toBeLessThanOrEqual(512);
    expect(shown.startsWith('ok[2Jgnp.exe line2 tab')).toBe(true);
    expect(shown).not.toMatch(/[\p{Cc}\u202a-\u202e]/u);
    expect(JSON.stringify(res.data)).not.toContain('header-secret-42');
    // The delivery log shows the same excerpt.
    const log = await gql(gw.url, WebhookDeliveriesDocument, { environment: 'SANDBOX' }, auth);
    expect(log.data!.webhookDeliveries.nodes[0]!.attempts[0]!.responseBody).toBe(shown);
  });
});
