import { SETTLEMENT_WALLET_CHANGED, SWEEP_COMPLETED, SWEEP_FAILED, type MerchantEventPayloads } from '../../src/modules/events/event.catalogue';
import { print } from 'graphql';
import {
  LoginDocument,
  MerchantPaymentFeedDocument,
  RedeliverWebhookDocument,
  WebhookDeliveriesDocument,
  type MerchantPaymentFeedSubscription,
} from '../generated/graphql';
import { NILE_USDT, paidOrder } from '../support/analytics';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { bearer, gql, wsClient } from '../support/graphql';
import { WebhookReceiver } from '../support/webhook-receiver';
import { attemptsOf, bodyOf, deliveriesOf, eventually, FAST_WEBHOOKS, setUrl, verifies } from '../support/webhooks';

/**
 * Merchant events (no order): recorded by MerchantEventWriter in the caller's transaction, queued by
 * the merchant_events trigger, and delivered by the same pipeline as order events (signature, retries,
 * delivery log, redelivery).
 */
let gw: TestGateway;
const receivers: WebhookReceiver[] = [];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  gw = await startTestGateway(FAST_WEBHOOKS);
});
afterAll(async () => {
  await gw?.close();
  await Promise.all(receivers.map((r) => r.close()));
});

async function merchantWithReceiver() {
  const r = await WebhookReceiver.start();
  receivers.push(r);
  const m = await createMerchant(gw.app);
  await setUrl(gw.app, m.merchantId, 'sandbox', r.url);
  return { m, r };
}

const sweep = (n: number): MerchantEventPayloads[typeof SWEEP_COMPLETED] => ({
  sweepId: `00000000-0000-4000-8000-00000000000${n}`,
  network: 'ETHEREUM',
  tokenAddress: '0x7169D38820dfd117C3FA1f22a697dBA58d90BA06',
  tokenSymbol: 'USDT',
  decimals: 6,
  amount: '12500000',
  amountDecimal: '12.5',
  fromAddress: '0x1111111111111111111111111111111111111111',
  toAddress: '0x2222222222222222222222222222222222222222',
  txHash: '0xabc',
  feePaid: '21000000000000',
  feePaidDecimal: '0.000021',
  feeAsset: 'ETH',
  depositIds: ['d1'],
  orderNos: ['ORDER-1'],
  at: '2026-11-27T04:00:00.000Z',
});

const eventRows = (merchantId: string) =>
  gw.app.orm.em.fork().getConnection().execute(`select id, type, idempotency_key from merchant_events where merchant_id = ?`, [merchantId]);

it('an event recorded in a committed transaction is delivered once, signed, with the documented headers and body', async () => {
  const { m, r } = await merchantWithReceiver();
  const id = await gw.app.orm.em.fork().transactional((tx) =>
    gw.app.merchantEvents.record(tx, {
      merchantId: m.merchantId,
      environment: 'sandbox',
      type: SWEEP_COMPLETED,
      payload: sweep(1),
      idempotencyKey: 'sweep.completed:1',
    }),
  );
  expect(id).toMatch(/^[0-9a-f-]{36}$/);
  await r.waitFor(1);
  const w = r.received[0]!;
  expect(verifies(m.sandboxKey, w)).toBe(true);
  expect(verifies(m.productionKey, w)).toBe(false);
  expect(w.headers['x-service-event']).toBe('sweep.completed');
  expect(w.headers['x-service-idempotency-key']).toBe('sweep.completed:1');
  expect(bodyOf(w)).toEqual({
    version: '2026-11-01',
    id,
    event: 'sweep.completed',
    created_at: expect.any(Number),
    idempotency_key: 'sweep.completed:1',
    data: {
      merchant_id: m.merchantId,
      environment: 'sandbox',
      sweep_id: sweep(1).sweepId,
      network: 'ETHEREUM',
      token_address: '0x7169D38820dfd117C3FA1f22a697dBA58d90BA06',
      token_symbol: 'USDT',
      decimals: 6,
      amount: '12500000',
      amount_decimal: '12.5',
      from_address: '0x1111111111111111111111111111111111111111',
      to_address: '0x2222222222222222222222222222222222222222',
      tx_hash: '0xabc',
      fee_paid: '21000000000000',
      fee_paid_decimal: '0.000021',
      fee_asset: 'ETH',
      deposit_ids: ['d1'],
      order_nos: ['ORDER-1'],
      at: '2026-11-27T04:00:00.000Z',
    },
  });
  const [d] = await eventually(async () => {
    const rows = await deliveriesOf(gw.app, m.merchantId);
    return rows[0]?.state === 'delivered' ? rows : null;
  });
  expect(d).toMatchObject({ event: 'sweep.completed', order_id: null, idempotency_key: 'sweep.completed:1', attempts: 1 });
  expect(w.headers['x-service-delivery-id']).toBe(d!.id);
  expect(w.raw.toString()).toBe(d!.payload);

  // In the dashboard's delivery log like any other webhook, and redelivered with the same bytes and key.
  const token = (await gql(gw.url, LoginDocument, { email: m.email, password: m.password })).data!.login.token;
  const log = await gql(gw.url, WebhookDeliveriesDocument, { environment: 'SANDBOX', event: 'sweep.completed' }, bearer(token));
  expect(log.errors).toBeUndefined();
  expect(log.data!.webhookDeliveries.nodes).toMatchObject([
    { id: d!.id, event: 'sweep.completed', orderNo: null, state: 'DELIVERED', idempotencyKey: 'sweep.completed:1' },
  ]);
  const again = await gql(gw.url, RedeliverWebhookDocument, { id: d!.id }, bearer(token));
  expect(again.errors).toBeUndefined();
  expect(again.data!.redeliverWebhook).toMatchObject({ series: 2, idempotencyKey: 'sweep.completed:1' });
  await r.waitFor(2);
  expect(r.received[1]!.raw).toEqual(w.raw);
  expect(verifies(m.sandboxKey, r.received[1]!)).toBe(true);
});

it('an event whose transaction rolls back is neither stored nor sent', async () => {
  const { m, r } = await merchantWithReceiver();
  await expect(
    gw.app.orm.em.fork().transactional(async (tx) => {
      await gw.app.merchantEvents.record(tx, {
        merchantId: m.merchantId,
        environment: 'sandbox',
        type: SWEEP_FAILED,
        payload: { ...sweep(2), txHash: null, reason: 'boom' },
        idempotencyKey: 'sweep.failed:2',
      });
      throw new Error('the change failed');
    }),
  ).rejects.toThrow('the change failed');
  // A committed event afterwards is delivered: the runner was awake, the rolled-back one simply never existed.
  await gw.app.orm.em.fork().transactional((tx) =>
    gw.app.merchantEvents.record(tx, {
      merchantId: m.merchantId,
      environment: 'sandbox',
      type: SWEEP_FAILED,
      payload: { ...sweep(3), txHash: null, reason: 'out of gas' },
      idempotencyKey: 'sweep.failed:3',
    }),
  );
  await r.waitFor(1);
  await sleep(500);
  expect(r.received).toHaveLength(1);
  expect(r.received[0]!.headers['x-service-idempotency-key']).toBe('sweep.failed:3');
  expect(bodyOf(r.received[0]!).data).toMatchObject({ reason: 'out of gas', tx_hash: null });
  expect(await eventRows(m.merchantId)).toEqual([expect.objectContaining({ idempotency_key: 'sweep.failed:3' })]);
});

it('is retried on the same schedule as order webhooks (500, then 200), with the same bytes, key and signature', async () => {
  const { m, r } = await merchantWithReceiver();
  r.reply = (_w, n) => (n === 1 ? { status: 500 } : { status: 200 });
  await gw.app.orm.em.fork().transactional((tx) =>
    gw.app.merchantEvents.record(tx, {
      merchantId: m.merchantId,
      environment: 'sandbox',
      type: SETTLEMENT_WALLET_CHANGED,
      payload: {
        settlementWalletId: 'w1',
        network: 'TRON',
        previousAddress: null,
        replacedPendingAddress: null,
        address: 'TXYZ',
        activeFrom: '2026-11-27T04:00:00.000Z',
        changedBy: { userId: 'u1', email: 'a@b.c' },
        at: '2026-11-27T04:00:00.000Z',
      },
      idempotencyKey: 'settlement_wallet.changed:w1',
    }),
  );
  await r.waitFor(2);
  const [a, b] = r.received;
  expect(b!.raw).toEqual(a!.raw);
  expect(b!.headers['x-service-signature']).toBe(a!.headers['x-service-signature']);
  expect(bodyOf(b!).data).toMatchObject({ network: 'TRON', previous_address: null, address: 'TXYZ', changed_by: { user_id: 'u1', email: 'a@b.c' } });
  const [d] = await eventually(async () => {
    const rows = await deliveriesOf(gw.app, m.merchantId);
    return rows[0]?.state === 'delivered' ? rows : null;
  });
  expect(await attemptsOf(gw.app, d!.id)).toMatchObject([
    { number: 1, http_status: 500, outcome: 'retry' },
    { number: 2, http_status: 200, outcome: 'delivered' },
  ]);
});

it('the same idempotency key twice records (and sends) one event; recording outside a transaction is refused', async () => {
  const { m, r } = await merchantWithReceiver();
  const record = () =>
    gw.app.orm.em.fork().transactional((tx) =>
      gw.app.merchantEvents.record(tx, {
        merchantId: m.merchantId,
        environment: 'sandbox',
        type: SWEEP_COMPLETED,
        payload: sweep(4),
        idempotencyKey: 'sweep.completed:4',
      }),
    );
  expect(await record()).toMatch(/^[0-9a-f-]{36}$/);
  expect(await record()).toBeNull();
  await expect(
    gw.app.merchantEvents.record(gw.app.orm.em.fork(), {
      merchantId: m.merchantId,
      environment: 'sandbox',
      type: SWEEP_COMPLETED,
      payload: sweep(5),
      idempotencyKey: 'x',
    }),
  ).rejects.toThrow(/inside the transaction/);
  await r.waitFor(1);
  await sleep(500);
  expect(r.received).toHaveLength(1);
  expect(await eventRows(m.merchantId)).toHaveLength(1);
});

it('a merchant without a URL for the environment gets no delivery (the event is kept)', async () => {
  const m = await createMerchant(gw.app);
  await gw.app.orm.em.fork().transactional((tx) =>
    gw.app.merchantEvents.record(tx, {
      merchantId: m.merchantId,
      environment: 'production',
      type: SWEEP_COMPLETED,
      payload: sweep(6),
      idempotencyKey: 'sweep.completed:6',
    }),
  );
  await eventually(async () => {
    const [q] = await gw.app.orm.em.fork().getConnection().execute(`select count(*)::int as n from merchant_event_outbox`);
    return q.n === 0;
  });
  expect(await deliveriesOf(gw.app, m.merchantId)).toEqual([]);
  expect(await eventRows(m.merchantId)).toHaveLength(1);
});

describe('dashboard feed (merchantEvents over graphql-ws): payment events', () => {
  type Ev = MerchantPaymentFeedSubscription['merchantEvents'];
  function listen(params: Record<string, unknown>, environment?: 'SANDBOX' | 'PRODUCTION') {
    const client = wsClient(gw.url, params);
    const got: Ev[] = [];
    const errors: unknown[] = [];
    const stop = client.subscribe<MerchantPaymentFeedSubscription>(
      { query: print(MerchantPaymentFeedDocument), variables: environment ? { environment } : {} },
      {
        next: (v) => (v.errors ? errors.push(...v.errors) : v.data && got.push(v.data.merchantEvents)),
        error: (e) => errors.push(e),
        complete: () => undefined,
      },
    );
    return { got, errors, close: async () => (stop(), await client.dispose()) };
  }
  const loginToken = async (mm: { email: string; password: string }) =>
    (await gql(gw.url, LoginDocument, { email: mm.email, password: mm.password })).data!.login.token;

  it("a payment reaches its merchant's dashboard JWT and API key as payment.detected, payment.confirmed, then the status change; another merchant sees nothing", async () => {
    const m = await createMerchant(gw.app);
    const other = await createMerchant(gw.app);
    const dash = listen({ authorization: `Bearer ${await loginToken(m)}` }, 'SANDBOX');
    const api = listen({ 'api-key': m.sandboxKey });
    const prod = listen({ authorization: `Bearer ${await loginToken(m)}` }, 'PRODUCTION');
    const stranger = listen({ authorization: `Bearer ${await loginToken(other)}` }, 'SANDBOX');
    const strangerKey = listen({ 'api-key': other.sandboxKey });
    const all = [dash, api, prod, stranger, strangerKey];
    try {
      await sleep(500); // subscriptions live
      // The payment path of the watchers: PaymentService.record (detected), markConfirmed, settlement.
      const paid = await paidOrder(gw, m.sandboxKey, { network: 'TRON', tokenAddress: NILE_USDT, walletType: 'TRUSTWALLET' });
      await eventually(async () => (dash.got.length >= 4 && api.got.length >= 4 ? true : null));
      await sleep(300);
      const [p] = await gw.app.orm.em.fork().getConnection().execute<{ id: string }[]>('select id from payments where tx_hash = ?', [paid.txHash]);
      const payment = {
        paymentId: p!.id,
        network: 'TRON',
        tokenSymbol: 'USDT',
        tokenAddress: NILE_USDT,
        amount: (Number(paid.total) / 1e6).toString(),
        amountBase: paid.total.toString(),
        txHash: paid.txHash,
        fromAddress: expect.any(String),
        late: false,
      };
      for (const feed of [dash, api]) {
        expect(feed.errors).toEqual([]);
        expect(feed.got.map((e) => [e.type, e.orderNo, e.status, e.previousStatus])).toEqual([
          ['order.created', paid.orderNo, 'Created', null],
          ['payment.detected', paid.orderNo, 'Created', null],
          ['payment.confirmed', paid.orderNo, 'Created', null],
          ['order.status_changed', paid.orderNo, 'Success', 'Created'],
        ]);
        expect(feed.got[0]!.payment).toBeNull();
        expect(feed.got[1]!.payment).toEqual(payment);
        expect(feed.got[2]!.payment).toEqual(payment);
        expect(feed.got[3]!.payment).toBeNull();
        expect(new Set(feed.got.map((e) => e.eventId)).size).toBe(4);
      }
      for (const feed of [prod, stranger, strangerKey]) {
        expect(feed.errors).toEqual([]);
        expect(feed.got).toEqual([]);
      }
      // Recorded once each, in order.
      const rows = await gw.app.orm.em
        .fork()
        .getConnection()
        .execute<{ type: string }[]>(
          `select e.type from order_events e join orders o on o.id = e.order_id where o.order_no = ? and e.merchant_id = ? order by e.seq`,
          [paid.orderNo, m.merchantId],
        );
      expect(rows.map((r) => r.type)).toEqual(['order.created', 'payment.detected', 'payment.confirmed', 'order.status_changed']);
    } finally {
      await Promise.all(all.map((l) => l.close()));
    }
  });

  it('recording the same transfer again (a re-scan) announces nothing new', async () => {
    const m = await createMerchant(gw.app);
    const api = listen({ 'api-key': m.sandboxKey });
    try {
      await sleep(500);
      const paid = await paidOrder(gw, m.sandboxKey, { network: 'TRON', tokenAddress: NILE_USDT, walletType: 'TRUSTWALLET' });
      await eventually(async () => (api.got.length >= 4 ? true : null));
      const conn = gw.app.orm.em.fork().getConnection();
      const [p] = await conn.execute<
        { id: string; deposit_id: string; order_id: string; token_id: string; from_address: string; to_address: string; block_hash: string }[]
      >('select id, deposit_id, order_id, token_id, from_address, to_address, block_hash from payments where tx_hash = ?', [paid.txHash]);
      const transfer = {
        txHash: paid.txHash,
        index: 0,
        blockNumber: 100n,
        blockHash: p!.block_hash,
        token: NILE_USDT,
        from: p!.from_address,
        to: p!.to_address,
        amount: paid.total,
      };
      await gw.app.orm.em
        .fork()
        .transactional((tx) =>
          gw.app.payments.record(tx, 'sandbox', 'TRON', [{ transfer, depositId: p!.deposit_id, orderId: p!.order_id, tokenId: p!.token_id }]),
        );
      await gw.app.payments.markConfirmed(gw.app.orm.em.fork(), [p!.id]);
      await sleep(700);
      expect(api.got.map((e) => e.type)).toEqual(['order.created', 'payment.detected', 'payment.confirmed', 'order.status_changed']);
    } finally {
      await api.close();
    }
  });
});
