/**
 * PostgreSQL has no privilege for NOTIFY, so any role that can connect to the
 * database (the read-only analytics role, a leaked reporting login) can send
 * `pg_notify('order_events', '{…"status":"Success"…}')`. The live feeds treat a notification as a hint
 * naming an event id and read the event back from `order_events`: a forged one shows nothing.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { print } from 'graphql';
import pg from 'pg';
import {
  LoginDocument,
  MerchantPaymentFeedDocument,
  OrderUpdatedDocument,
  type MerchantPaymentFeedSubscription,
  type OrderUpdatedSubscription,
} from '../generated/graphql';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { gql, wsClient } from '../support/graphql';
import { adminQuery } from '../support/pg-admin';
import { internalContext } from '../../src/common/context';
import { eventually, transition } from '../support/webhooks';

let gw: TestGateway;
const role = `cpg_forger_t_${randomBytes(5).toString('hex')}`;
const password = randomBytes(16).toString('hex');
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  gw = await startTestGateway({ ROLE: 'api' });
  // A role with no privilege on any table: it can connect (PUBLIC has CONNECT) and nothing else.
  await adminQuery(`create role ${role} login password '${password}'`);
});
afterAll(async () => {
  for (const c of closers.splice(0)) await c().catch(() => undefined);
  await gw?.close();
  await adminQuery(`drop role if exists ${role}`).catch(() => undefined);
});

let n = 0;
async function newOrder(merchantId: string) {
  n += 1;
  const created = await gw.app.orders.insert(internalContext(gw.app.orm.em.fork()), {
    merchantId,
    environment: 'sandbox',
    orderNo: `FORGE-${n}-${Date.now()}`,
    amount: 250_000n,
    customerName: null,
    customerEmail: null,
    source: 'api',
    paymentLinkId: null,
  });
  return { id: created.order.id, orderNo: created.order.orderNo, key: created.key };
}

function collect<T>(connectionParams: Record<string, unknown>, query: string, variables: Record<string, unknown>) {
  const client = wsClient(gw.url, connectionParams);
  const got: T[] = [];
  const errors: unknown[] = [];
  const stop = client.subscribe<T>(
    { query, variables },
    { next: (v) => (v.errors ? errors.push(...v.errors) : v.data && got.push(v.data as T)), error: (e) => errors.push(e), complete: () => undefined },
  );
  closers.push(async () => (stop(), await client.dispose()));
  return { got, errors };
}

it('a NOTIFY forged by another database role shows no Success on the checkout or the dashboard feed', async () => {
  const m = await createMerchant(gw.app);
  const o = await newOrder(m.merchantId);
  const token = (await gql(gw.url, LoginDocument, { email: m.email, password: m.password })).data!.login.token;

  const checkout = collect<OrderUpdatedSubscription>({ key: o.key }, print(OrderUpdatedDocument), { orderNo: o.orderNo });
  const dash = collect<MerchantPaymentFeedSubscription>({ authorization: `Bearer ${token}` }, print(MerchantPaymentFeedDocument), { environment: 'SANDBOX' });
  const api = collect<MerchantPaymentFeedSubscription>({ 'api-key': m.sandboxKey }, print(MerchantPaymentFeedDocument), {});
  // Live: the checkout got its snapshot, and both feeds see a real change of another order.
  await eventually(async () => checkout.got.length >= 1);
  // (a subscription becomes live a moment after it is sent: real changes until both feeds show one)
  let real: Awaited<ReturnType<typeof transition>> | undefined;
  await eventually(
    async () => {
      const changed = (g: MerchantPaymentFeedSubscription) => g.merchantEvents.type === 'order.status_changed';
      if (real && dash.got.some(changed) && api.got.some(changed)) return true;
      real = await transition(gw.app, (await newOrder(m.merchantId)).id, 'Processing');
      await new Promise((r) => setTimeout(r, 100));
      return false;
    },
    30_000,
    `both feeds live (${JSON.stringify([dash.errors, api.errors])})`,
  );

  const u = new URL(gw.db.url);
  u.username = role;
  u.password = password;
  const forger = new pg.Client({ connectionString: u.toString() });
  await forger.connect();
  closers.push(() => forger.end());
  const [ev] = await gw.app.orm.em.fork().getConnection().execute<{ seq: string }[]>('select seq from order_events where id = ?', [real!.eventId]);
  const lie = (eventId: string | undefined) => ({
    eventId,
    seq: Number(ev!.seq) + 1000,
    type: 'order.status_changed',
    orderId: o.id,
    orderNo: o.orderNo,
    merchantId: m.merchantId,
    environment: 'sandbox',
    status: 'Success',
    previousStatus: 'Created',
    at: new Date().toISOString(),
    reason: null,
  });
  // An invented event id; a real event's id dressed as this order's Success; no id at all.
  for (const payload of [lie(randomUUID()), lie(real!.eventId!), lie(undefined)]) {
    await forger.query(`select pg_notify('order_events', $1)`, [JSON.stringify(payload)]);
  }

  // A real change after the forgeries: once it arrives, the forgeries (delivered before it) were handled.
  await transition(gw.app, o.id, 'Processing');
  await eventually(
    async () =>
      checkout.got.length >= 2 && dash.got.some((e) => e.merchantEvents.orderNo === o.orderNo) && api.got.some((e) => e.merchantEvents.orderNo === o.orderNo),
  );

  expect(checkout.got.map((g) => g.orderUpdated.status)).toEqual(['Created', 'Processing']);
  for (const feed of [dash, api]) {
    expect(feed.errors).toEqual([]);
    expect(feed.got.filter((g) => g.merchantEvents.orderNo === o.orderNo).map((g) => g.merchantEvents.status)).toEqual(['Processing']);
    expect(feed.got.filter((g) => g.merchantEvents.status === 'Success')).toEqual([]);
  }
  const [row] = await gw.app.orm.em.fork().getConnection().execute<{ status: string }[]>('select status from orders where id = ?', [o.id]);
  expect(row!.status).toBe('Processing');
});
