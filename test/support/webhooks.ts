import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { App } from '../../src/app';
import type { Environment } from '../../src/common/environment';
import type { OrderStatus } from '../../src/modules/orders/order.transitions';
import { http } from './http';
import type { ReceivedWebhook } from './webhook-receiver';
import { internalContext, operatorContext } from '../../src/common/context';

/** Fast webhook settings for tests: retries after 0.3 s (no jitter), 1.5 s timeouts, quick polls and sweeps. */
export const FAST_WEBHOOKS: Record<string, string> = {
  WEBHOOK_RETRY_SCHEDULE_S: '0.3,0.3,0.3',
  WEBHOOK_RETRY_JITTER: '0',
  WEBHOOK_TIMEOUT_MS: '1500',
  WEBHOOK_POLL_MS: '100',
  WEBHOOK_SWEEP_INTERVAL_MS: '300',
};

/** What a merchant's receiver does (docs/webhooks.md "Receiving: verify the raw body, then de-duplicate"), with node:crypto only: HMAC over the raw bytes, constant-time compare. */
export function verifies(apiKey: string, w: ReceivedWebhook): boolean {
  const expected = Buffer.from(`sha256=${createHmac('sha256', apiKey).update(w.raw).digest('hex')}`);
  const got = Buffer.from(String(w.headers['x-service-signature'] ?? ''));
  return got.length === expected.length && timingSafeEqual(got, expected);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- payload fields are asserted field by field
export const bodyOf = (w: ReceivedWebhook) =>
  JSON.parse(w.raw.toString('utf8')) as { version: string; id: string; event: string; created_at: number; idempotency_key: string; data: Record<string, any> };

let n = 0;

/** An order inserted through the order service (the path API and payment-link orders share). */
export async function newOrder(app: App, merchantId: string, environment: Environment = 'sandbox', amount = 150_000n) {
  n += 1;
  const { order } = await app.orders.insert(internalContext(app.orm.em.fork()), {
    merchantId,
    environment,
    orderNo: `WH-${n}-${Date.now()}`,
    amount,
    customerName: null,
    customerEmail: null,
    source: 'api',
    paymentLinkId: null,
  });
  return order;
}

/** A status change through OrderStatusService, in its own transaction (writes the outbox row). */
export const transition = (app: App, orderId: string, to: OrderStatus) =>
  app.orm.em.fork().transactional((em) => app.orderStatus.transition(em, orderId, to, { kind: 'test' }));

export const setUrl = (app: App, merchantId: string, environment: Environment, url: string | null) =>
  app.webhooks.settings.setForMerchant(app.orm.em.fork(), merchantId, { environment, url }, operatorContext(app.orm.em, 'test'));

/** Deliveries of a merchant, straight from the table. */
export async function deliveriesOf(app: App, merchantId: string) {
  return app.orm.em
    .fork()
    .getConnection()
    .execute<
      { id: string; event: string; state: string; idempotency_key: string; attempts: number; series: number; payload: string; order_id: string | null }[]
    >(`select id, event, state, idempotency_key, attempts, series, payload, order_id from webhook_deliveries where merchant_id = ? order by created_at, id`, [
      merchantId,
    ]);
}

export async function attemptsOf(app: App, deliveryId: string) {
  return app.orm.em
    .fork()
    .getConnection()
    .execute<{ number: number; series: number; http_status: number | null; error: string | null; outcome: string; latency_ms: number | null }[]>(
      `select number, series, http_status, error, outcome, latency_ms from webhook_attempts where delivery_id = ? order by started_at, created_at`,
      [deliveryId],
    );
}

/** Polls `check` until it returns a truthy value (or fails after `timeoutMs`). */
export async function eventually<T>(check: () => Promise<T | null | undefined | false>, timeoutMs = 15_000, what = 'condition'): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// Sandbox ETHEREUM Sepolia USDT, seeded by the migrations (6 decimals).
export const SEPOLIA_USDT = '0x7169D38820dfd117C3FA1f22a697dBA58d90BA06';

/**
 * An order paid the way the gateway sees it: REST order → rate lock → deposit, then a transfer recorded
 * by PaymentService (as a watcher does), confirmed, and settled by SettlementService (which writes the
 * status change and any late/overpaid events to the outbox). `extra` base units overpay.
 */
export async function payOrder(app: App, base: string, m: { merchantId: string; sandboxKey: string }, opts: { extra?: bigint; late?: boolean } = {}) {
  n += 1;
  const T = '/api/v2/testnet';
  const orderNo = `PAY-${n}-${Date.now()}`;
  const headers = { 'api-key': m.sandboxKey };
  const created = await http(base, `${T}/merchant/fiat/order`, { body: { merchant_id: m.merchantId, order_no: orderNo, amount: '150000' }, headers });
  if (created.status !== 201) throw new Error(`order: ${created.text}`);
  const key = created.body.data.key as string;
  const rate = await http(base, `${T}/merchant/fiat/checkOrderRate`, {
    body: { merchant_id: m.merchantId, transactionID: orderNo, tokenAddress: SEPOLIA_USDT, network: 'ETHEREUM' },
    headers: { 'api-key': key },
  });
  if (rate.status !== 200) throw new Error(`rate: ${rate.text}`);
  const qr = await http(base, `${T}/pgqr/fiat/create`, {
    body: { merchant_id: m.merchantId, transactionID: orderNo, tokenAddress: SEPOLIA_USDT, network: 'ETHEREUM', walletType: 'METAMASK' },
    headers: { 'api-key': key },
  });
  if (qr.status !== 201) throw new Error(`deposit: ${qr.text}`);
  const conn = app.orm.em.fork().getConnection();
  const [dep] = await conn.execute<{ id: string; order_id: string; token_id: string; address: string; total_amount: string }[]>(
    `select d.id, d.order_id, d.token_id, d.address, d.total_amount from deposits d join orders o on o.id = d.order_id where o.order_no = ?`,
    [orderNo],
  );
  if (opts.late) {
    // Expired as the expiry job would do it, now rather than whenever the job's next run races the payment.
    await conn.execute(`update orders set expires_at = now() - interval '1 minute' where id = ?`, [dep!.order_id]);
    await app.settlement.expireDue(app.orm.em.fork());
  }
  const txHash = `0x${randomBytes(32).toString('hex')}`;
  const amount = BigInt(dep!.total_amount) + (opts.extra ?? 0n);
  await app.payments.record(app.orm.em.fork(), 'sandbox', 'ETHEREUM', [
    {
      transfer: {
        txHash,
        index: 0,
        blockNumber: 100n,
        blockHash: `0x${'ab'.repeat(32)}`,
        token: SEPOLIA_USDT,
        from: '0x000000000000000000000000000000000000dEaD',
        to: dep!.address,
        amount,
      },
      depositId: dep!.id,
      orderId: dep!.order_id,
      tokenId: dep!.token_id,
    },
  ]);
  // Deep enough: confirmed by the same call the confirmation check makes.
  const ids = (await conn.execute<{ id: string }[]>(`select id from payments where order_id = ?`, [dep!.order_id])).map((p) => p.id);
  await app.payments.markConfirmed(app.orm.em.fork(), ids);
  const status = await app.settlement.settle(app.orm.em.fork(), dep!.order_id);
  return { orderNo, orderId: dep!.order_id, txHash, amount, status, deposit: dep! };
}
