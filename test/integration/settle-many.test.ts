/**
 * A block's orders settle together (SettlementService.settleMany: one transaction, set-based reads
 * and writes) and must end exactly as if each had been settled alone. Two merchants get the same
 * orders and the same payments; one merchant's orders are settled together, the other's one at a
 * time, after each round of payments. Everything settling writes is compared: statuses, flags,
 * revenue figures, deposits, the events (types and reasons, in order) and the rollups. Real gateway
 * services on real PostgreSQL; payments are handed over as the watcher hands them (no chain needed).
 */
import type { ObservedTransfer } from '../../src/chains/chain-adapter';
import type { MatchedTransfer } from '../../src/modules/payments/payment.service';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { checkout, type CheckoutDeposit } from '../support/order-watch';

// A sandbox token seeded by the migration (TRON Nile USDT); no node is watched in this test.
const NILE_USDT = 'TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf';
const CUSTOMER = 'TLa2f6VPqDgRE67v1736s7bJ8Ray5wYjU7';

let gw: TestGateway;
beforeAll(async () => (gw = await startTestGateway({ FALLBACK_RATE_USDT_IDR: '16250', FALLBACK_RATE_USDC_IDR: '16250', LATE_PAYMENT_WINDOW_S: '3600' })));
afterAll(() => gw?.close());

const sql = <T>(query: string, params: unknown[] = []) => gw.app.orm.em.fork().getConnection().execute<T[]>(query, params);

type Scenario = 'exact' | 'partial' | 'pending' | 'overpaid-later' | 'expired-unpaid' | 'expired-partial' | 'late';
const SCENARIOS: Scenario[] = ['exact', 'partial', 'pending', 'overpaid-later', 'expired-unpaid', 'expired-partial', 'late'];

let tx = 0;
async function pay(d: CheckoutDeposit, amount: bigint, confirm: boolean): Promise<void> {
  const [dep] = await sql<{ id: string; token_id: string }>('select id, token_id from deposits where order_id = ?', [d.orderId]);
  tx += 1;
  const t: ObservedTransfer = {
    txHash: tx.toString(16).padStart(64, '0'),
    index: 0,
    blockNumber: BigInt(1000 + tx),
    blockHash: `b${tx.toString(16)}`.padEnd(64, '0'),
    token: NILE_USDT,
    from: CUSTOMER,
    to: d.address,
    amount,
  };
  const matched: MatchedTransfer = { transfer: t, depositId: dep!.id, orderId: d.orderId, tokenId: dep!.token_id };
  await gw.app.orm.em.fork().transactional(async (em) => {
    await gw.app.payments.record(em, 'sandbox', 'TRON', [matched]);
    if (confirm) await gw.app.payments.confirmBlock(em, 'sandbox', 'TRON', t.blockHash);
  });
}

/** Round 1 of each scenario's payments (before the first settlement). */
async function roundOne(s: Scenario, d: CheckoutDeposit): Promise<void> {
  if (s === 'expired-unpaid' || s === 'expired-partial') await sql(`update orders set expires_at = now() - interval '1 minute' where id = ?`, [d.orderId]);
  if (s === 'late') await sql(`update orders set expires_at = now() - interval '1 minute' where id = ?`, [d.orderId]);
  if (s === 'exact' || s === 'overpaid-later' || s === 'late') await pay(d, d.total, true);
  if (s === 'partial' || s === 'expired-partial') await pay(d, d.total / 2n, true);
  if (s === 'pending') await pay(d, d.total, false);
}

/** Round 2: what arrives after the first settlement. */
async function roundTwo(s: Scenario, d: CheckoutDeposit): Promise<void> {
  if (s === 'overpaid-later') await pay(d, 7n, true);
  if (s === 'partial') await pay(d, d.total - d.total / 2n, true);
}

/** Everything settling wrote for the order, free of ids and times. */
async function outcome(orderId: string) {
  const [order] = await sql<Record<string, unknown>>(
    `select status, overpaid, reorged, received_idr::text, fee_idr::text, net_idr::text, paid_amount::text, paid_network, paid_decimals, paid_at is not null as paid
     from orders where id = ?`,
    [orderId],
  );
  const deposits = await sql(`select status, amount_received::text from deposits where order_id = ? order by created_at`, [orderId]);
  const events = await sql<{ type: string; from_status: string; to_status: string; reason: Record<string, unknown> }>(
    `select type, from_status, to_status, reason from order_events where order_id = ? order by seq`,
    [orderId],
  );
  return { order, deposits, events: events.map((e) => ({ ...e, reason: comparable(e.reason) })) };
}

/** A reason without what differs between the twins by construction: ids, hashes, addresses, blocks. */
function comparable(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(comparable);
  if (v && typeof v === 'object')
    return Object.fromEntries(
      Object.entries(v)
        .filter(([k]) => !['txHash', 'blockNumber', 'blockHash', 'toAddress', 'logIndex'].includes(k))
        .map(([k, x]) => [k, comparable(x)]),
    );
  return typeof v === 'string' && /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(v) ? '<id>' : v;
}

const rollups = (merchantId: string) =>
  sql(
    `select status, sum(orders)::int as orders, sum(amount)::text as amount, sum(received)::text as received, sum(fee)::text as fee, sum(net)::text as net, sum(paid_units)::text as paid_units
     from (select status, orders, amount, received, fee, net, paid_units from order_stats_delta where merchant_id = ?
           union all select status, orders, amount, received, fee, net, paid_units from order_stats_rollup where merchant_id = ?) x
     group by status order by status`,
    [merchantId, merchantId],
  );

it('orders settled together end exactly as orders settled one at a time', async () => {
  const together = await createMerchant(gw.app);
  const alone = await createMerchant(gw.app);
  const open = (key: string) => checkout(gw.url, key, { amountIdr: '150000', tokenAddress: NILE_USDT, network: 'TRON', walletType: 'TRUSTWALLET' });
  const a: CheckoutDeposit[] = [];
  const b: CheckoutDeposit[] = [];
  for (const _ of SCENARIOS) {
    const x = await open(together.sandboxKey);
    const y = await open(alone.sandboxKey);
    // the twin asks for the very same units (deposit totals differ only by their unique codes)
    await sql(`update deposits set total_amount = ? where order_id = ?`, [x.total.toString(), y.orderId]);
    a.push(x);
    b.push({ ...y, total: x.total });
  }
  const settleTogether = async () => {
    const statuses = await gw.app.settlement.settleMany(
      gw.app.orm.em.fork(),
      a.map((d) => d.orderId),
    );
    expect(statuses.size).toBe(SCENARIOS.length);
  };
  const settleAlone = async () => {
    for (const d of b) await gw.app.settlement.settle(gw.app.orm.em.fork(), d.orderId);
  };

  for (const [i, s] of SCENARIOS.entries()) {
    await roundOne(s, a[i]!);
    await roundOne(s, b[i]!);
  }
  await settleTogether();
  await settleAlone();
  for (const [i, s] of SCENARIOS.entries()) {
    await roundTwo(s, a[i]!);
    await roundTwo(s, b[i]!);
  }
  await settleTogether();
  await settleAlone();
  // settled again with nothing new: nothing changes
  await settleTogether();

  const statuses: Record<string, string> = {};
  for (const [i, s] of SCENARIOS.entries()) {
    const got = await outcome(a[i]!.orderId);
    expect({ scenario: s, ...got }).toEqual({ scenario: s, ...(await outcome(b[i]!.orderId)) });
    statuses[s] = got.order!.status as string;
  }
  // the scenarios reach what they stand for (so the comparison above compares something)
  expect(statuses).toEqual({
    exact: 'Success',
    partial: 'Success',
    pending: 'Processing',
    'overpaid-later': 'Success',
    'expired-unpaid': 'Expired',
    'expired-partial': 'Underpaid',
    late: 'Success',
  });
  const types = async (d: CheckoutDeposit) => (await outcome(d.orderId)).events.map((e) => e.type);
  expect(await types(a[SCENARIOS.indexOf('overpaid-later')]!)).toContain('payment.overpaid');
  expect(await types(a[SCENARIOS.indexOf('late')]!)).toContain('payment.late');
  expect(await rollups(together.merchantId)).toEqual(await rollups(alone.merchantId));
});

it('an unknown order id is left out; the others settle', async () => {
  const m = await createMerchant(gw.app);
  const d = await checkout(gw.url, m.sandboxKey, { amountIdr: '150000', tokenAddress: NILE_USDT, network: 'TRON', walletType: 'TRUSTWALLET' });
  await pay(d, d.total, true);
  const statuses = await gw.app.settlement.settleMany(gw.app.orm.em.fork(), [d.orderId, '01a226a0-0000-7000-8000-000000000000', d.orderId]);
  expect([...statuses]).toEqual([[d.orderId, 'Success']]);
  await expect(gw.app.settlement.settle(gw.app.orm.em.fork(), '01a226a0-0000-7000-8000-000000000000')).rejects.toMatchObject({ code: 'ORDER_NOT_FOUND' });
});
