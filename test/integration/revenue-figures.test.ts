/**
 * Revenue figures count only money actually received (docs/analytics.md "Revenue"): paid, underpaid,
 * overpaid, reorged (a paid order whose payment left the chain), paid-then-partly-taken-back (a second
 * payment reorganised away later: the shape a refund will have), still pending, and a buyer-bears-fee
 * merchant — through the real services (checkout over GraphQL, transfers recorded and confirmed as a
 * watcher does, the settlement), on real PostgreSQL. Every surface agrees with the payments: GraphQL
 * `orderStats` (before and after the rollup compaction) and `order`, the SQL views (analytics.orders,
 * analytics.payments, analytics.daily_revenue) and both CSV exports — and with figures computed here
 * from the raw `payments` rows.
 */
import type { ObservedTransfer } from '../../src/chains/chain-adapter';
import { RevenueOrderDocument, RevenueStatsDocument } from '../generated/graphql';
import { csvRecords, dashboardToken, NILE_USDT, sql } from '../support/analytics';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { gql } from '../support/graphql';
import { checkout, type CheckoutDeposit } from '../support/order-watch';

let gw: TestGateway;
const PAYER = 'TLa2f6VPqDgRE67v1736s7bJ8Ray5wYjU7';
let block = 1000n;
let txSeq = 0;

beforeAll(async () => (gw = await startTestGateway({ FALLBACK_RATE_USDT_IDR: '16250.5', FALLBACK_RATE_USDC_IDR: '16250.5' })), 120_000);
afterAll(() => gw?.close());

interface Seeded extends CheckoutDeposit {
  depositId: string;
  tokenId: string;
}

async function order(apiKey: string, amountIdr: string): Promise<Seeded> {
  const d = await checkout(gw.url, apiKey, { amountIdr, tokenAddress: NILE_USDT, network: 'TRON', walletType: 'TRUSTWALLET' });
  const [dep] = await sql<{ id: string; token_id: string }>(gw, 'select id, token_id from deposits where order_id = ?', [d.orderId]);
  return { ...d, depositId: dep!.id, tokenId: dep!.token_id };
}

/** A transfer recorded as the watcher records it (own block), optionally confirmed; returns its block. */
async function pay(o: Seeded, amount: bigint, confirm = true): Promise<{ blockNumber: bigint; blockHash: string }> {
  const blockNumber = ++block;
  const blockHash = blockNumber.toString(16).padStart(64, 'b');
  const t: ObservedTransfer = {
    txHash: (++txSeq).toString(16).padStart(64, 'c'),
    index: 0,
    blockNumber,
    blockHash,
    token: NILE_USDT,
    from: PAYER,
    to: o.address,
    amount,
  };
  await gw.app.orm.em
    .fork()
    .transactional((tx) => gw.app.payments.record(tx, 'sandbox', 'TRON', [{ transfer: t, depositId: o.depositId, orderId: o.orderId, tokenId: o.tokenId }]));
  if (confirm) {
    const [p] = await sql<{ id: string }>(gw, 'select id from payments where tx_hash = ?', [t.txHash]);
    await gw.app.payments.markConfirmed(gw.app.orm.em.fork(), [p!.id]);
  }
  return { blockNumber, blockHash };
}

const settle = (o: Seeded, now?: Date) => gw.app.settlement.settle(gw.app.orm.em.fork(), o.orderId, now);
const reorg = (b: { blockNumber: bigint; blockHash: string }) => gw.app.payments.markReorged(gw.app.orm.em.fork(), 'sandbox', 'TRON', [b]);

/** The rule, computed here from the raw rows: per deposit ⌊T × R / D⌋ and ⌊F × R / D⌋ over its confirmed units R. */
async function expectedOf(merchantId: string): Promise<Map<string, { received: bigint; fee: bigint }>> {
  const rows = await sql<{ order_id: string; total_idr: string; fee: string; due: string; confirmed: string }>(
    gw,
    `select d.order_id, q.total_idr::text, q.fee_amount_idr::text as fee, d.total_amount::text as due,
            coalesce((select sum(p.amount) from payments p where p.deposit_id = d.id and p.status = 'confirmed'), 0)::text as confirmed
     from deposits d join quotes q on q.id = d.quote_id join orders o on o.id = d.order_id where o.merchant_id = ?`,
    [merchantId],
  );
  const out = new Map<string, { received: bigint; fee: bigint }>();
  for (const r of rows) {
    const [due, units] = [BigInt(r.due), BigInt(r.confirmed)];
    const prev = out.get(r.order_id) ?? { received: 0n, fee: 0n };
    out.set(r.order_id, { received: prev.received + (BigInt(r.total_idr) * units) / due, fee: prev.fee + (BigInt(r.fee) * units) / due });
  }
  return out;
}

/** Figures as numbers, each within `tol` rupiah of the stated one (a share of an odd due rounds down: 1 per order). */
function near(actual: Record<string, string>, expected: Record<string, number>, tol = 1): void {
  for (const [k, v] of Object.entries(expected)) expect([k, Math.abs(Number(actual[k]) - v) <= tol, actual[k]]).toEqual([k, true, actual[k]]);
  expect(Number(actual.net_idr)).toBe(Number(actual.received_idr) - Number(actual.fee_idr));
}

const sum = (xs: (string | bigint | null | undefined)[]) => xs.reduce<bigint>((a, x) => a + BigInt(x ?? 0), 0n);

describe('revenue: money actually received, the fee only on that, the same on every surface', () => {
  let m: Awaited<ReturnType<typeof createMerchant>>;
  let buyer: Awaited<ReturnType<typeof createMerchant>>;
  const o: Record<string, Seeded> = {};
  const from = new Date(Date.now() - 86_400_000).toISOString();
  const to = new Date(Date.now() + 86_400_000).toISOString();
  const fig = async (k: string): Promise<Record<string, string>> =>
    (
      await sql<Record<string, string>>(gw, 'select received_idr::text, fee_idr::text, net_idr::text from analytics.orders where order_id = ?', [o[k]!.orderId])
    )[0]!;

  beforeAll(async () => {
    m = await createMerchant(gw.app, { platformFeePercent: '1', feeIncluded: true });
    buyer = await createMerchant(gw.app, { platformFeePercent: '2', feeIncluded: false });
    for (const [k, idr] of [
      ['paid', '150000'],
      ['paid2', '150000'],
      ['underpaid', '150000'],
      ['overpaid', '150000'],
      ['reorged', '150000'],
      ['takenBack', '200000'],
      ['pending', '90000'],
    ] as const)
      o[k] = await order(m.sandboxKey, idr);
    o.buyer = await order(buyer.sandboxKey, '100000');

    for (const k of ['paid', 'paid2', 'buyer'] as const) await pay(o[k]!, o[k]!.total);
    await pay(o.underpaid!, o.underpaid!.total / 2n);
    await pay(o.overpaid!, o.overpaid!.total + o.overpaid!.total / 4n);
    const lost = await pay(o.reorged!, o.reorged!.total);
    await pay(o.takenBack!, o.takenBack!.total / 2n);
    const second = await pay(o.takenBack!, o.takenBack!.total - o.takenBack!.total / 2n);
    await pay(o.pending!, o.pending!.total, false);
    for (const s of Object.values(o)) await settle(s);
    // Money taken back after the orders were paid: deep reorgs (confirmed payments orphaned), settled again.
    await reorg(lost);
    await reorg(second);
    await settle(o.reorged!);
    await settle(o.takenBack!);
    // The underpaid order expires as Underpaid.
    const [exp] = await sql<{ expires_at: Date }>(gw, 'select expires_at from orders where id = ?', [o.underpaid!.orderId]);
    await settle(o.underpaid!, new Date(new Date(exp!.expires_at).getTime() + 1000));
  }, 180_000);

  it('each order: status and received / fee / net by the rule (half paid: half the fee; reorged: nothing)', async () => {
    const status = async (s: Seeded) => (await sql<{ status: string }>(gw, 'select status from orders where id = ?', [s.orderId]))[0]!.status;
    expect(await Promise.all(['paid', 'underpaid', 'overpaid', 'reorged', 'takenBack', 'pending', 'buyer'].map((k) => status(o[k]!)))).toEqual([
      'Success',
      'Underpaid',
      'Success',
      'Underpaid',
      'Underpaid',
      'Processing',
      'Success',
    ]);
    const expected = await expectedOf(m.merchantId);
    const rows = await sql<{ order_id: string; received_idr: string; fee_idr: string; net_idr: string }>(
      gw,
      'select order_id, received_idr::text, fee_idr::text, net_idr::text from analytics.orders where merchant_id = ?',
      [m.merchantId],
    );
    for (const r of rows) {
      const e = expected.get(r.order_id) ?? { received: 0n, fee: 0n };
      expect([r.order_id, r.received_idr, r.fee_idr, r.net_idr]).toEqual([r.order_id, String(e.received), String(e.fee), String(e.received - e.fee)]);
    }
    // Paid exactly: the quote's figures (fee 1 % of 150,000; the merchant keeps amount − fee).
    expect(await fig('paid')).toEqual({ received_idr: '150000', fee_idr: '1500', net_idr: '148500' });
    // Half paid: half of each (not the full fee and net).
    near(await fig('underpaid'), { received_idr: 75000, fee_idr: 750 });
    // Paid 1.25 ×: the excess counts, with its share of the fee.
    near(await fig('overpaid'), { received_idr: 187500, fee_idr: 1875 });
    // The payment that paid it left the chain: nothing received, nothing owed.
    expect(await fig('reorged')).toEqual({ received_idr: '0', fee_idr: '0', net_idr: '0' });
    // The second half was taken back (the order went back to Underpaid): the first half's share stays.
    near(await fig('takenBack'), { received_idr: 100000, fee_idr: 1000 });
    // Detected, not confirmed: not yet.
    expect(await fig('pending')).toEqual({ received_idr: '0', fee_idr: '0', net_idr: '0' });
    // The buyer bore the 2 % fee: received 102,000, the merchant keeps its 100,000.
    const [b] = await sql<Record<string, string>>(gw, 'select received_idr::text, fee_idr::text, net_idr::text from analytics.orders where order_id = ?', [
      o.buyer!.orderId,
    ]);
    expect(b).toEqual({ received_idr: '102000', fee_idr: '2000', net_idr: '100000' });
    // GraphQL `order` says the same.
    const g = await gql(gw.url, RevenueOrderDocument, { orderNo: o.underpaid!.orderNo }, { 'api-key': m.sandboxKey });
    expect(g.errors).toBeUndefined();
    const u = await fig('underpaid');
    expect(g.data!.order).toEqual({ status: 'Underpaid', receivedAmount: u.received_idr, fee: u.fee_idr, netAmount: u.net_idr });
  });

  it('orderStats, the views and both CSV exports add up to the same totals as the payments', async () => {
    const expected = [...(await expectedOf(m.merchantId)).values()];
    const total = { received: sum(expected.map((e) => e.received)), fee: sum(expected.map((e) => e.fee)) };
    const want = [String(total.received), String(total.fee), String(total.received - total.fee)];
    // 2 × 150,000 + 75,000 + 187,500 + 100,000 received; 1 % of it (each within a rupiah: halves of odd dues).
    near({ received_idr: want[0]!, fee_idr: want[1]!, net_idr: want[2]! }, { received_idr: 662500, fee_idr: 6625 }, 3);

    // analytics.payments: each payment's share; they add up per order and in total.
    const [p] = await sql<Record<string, string>>(
      gw,
      `select sum(received_idr)::text as r, sum(fee_idr)::text as f, sum(net_idr)::text as n, count(*) filter (where status <> 'confirmed' and received_idr <> 0)::text as uncounted
       from analytics.payments where merchant_id = ?`,
      [m.merchantId],
    );
    expect([p!.r, p!.f, p!.n, p!.uncounted]).toEqual([...want, '0']);
    const [ord] = await sql<Record<string, string>>(
      gw,
      'select sum(received_idr)::text as r, sum(fee_idr)::text as f, sum(net_idr)::text as n from analytics.orders where merchant_id = ?',
      [m.merchantId],
    );
    expect([ord!.r, ord!.f, ord!.n]).toEqual(want);
    const [daily] = await sql<Record<string, string>>(
      gw,
      'select sum(revenue_idr)::text as r, sum(fee_idr)::text as f, sum(net_idr)::text as n, sum(orders_paid)::text as paid from analytics.daily_revenue where merchant_id = ?',
      [m.merchantId],
    );
    expect([daily!.r, daily!.f, daily!.n, daily!.paid]).toEqual([...want, '3']);

    // GraphQL orderStats: deltas read before compaction, rollups after; the same answer.
    const stats = async () => {
      const r = await gql(gw.url, RevenueStatsDocument, { from, to }, { 'api-key': m.sandboxKey });
      expect(r.errors).toBeUndefined();
      const b = r.data!.orderStats[0]!;
      return [b.receivedAmount, b.fee, b.netAmount];
    };
    expect(await stats()).toEqual(want);
    await gw.app.orderStats.compact(gw.app.orm.em.fork());
    const [left] = await sql<{ n: string }>(gw, 'select count(*)::text as n from order_stats_delta');
    expect(left!.n).toBe('0');
    expect(await stats()).toEqual(want);
    const byStatus = await gql(gw.url, RevenueStatsDocument, { from, to, groupBy: ['STATUS'] }, { 'api-key': m.sandboxKey });
    const underpaid = byStatus.data!.orderStats.find((b) => b.status === 'Underpaid')!;
    // Underpaid: the half-paid order, the reorged one (nothing left) and the one half taken back — not 3 × 150,000.
    expect(underpaid.count).toBe(3);
    const figs = await Promise.all(['underpaid', 'reorged', 'takenBack'].map((k) => fig(k)));
    expect([underpaid.receivedAmount, underpaid.fee, underpaid.netAmount]).toEqual(
      ['received_idr', 'fee_idr', 'net_idr'].map((c) => String(sum(figs.map((f) => f[c])))),
    );
    near({ received_idr: underpaid.receivedAmount, fee_idr: underpaid.fee, net_idr: underpaid.netAmount }, { received_idr: 175000, fee_idr: 1750 }, 2);
    const success = byStatus.data!.orderStats.find((b) => b.status === 'Success')!;
    expect([success.paidCount, success.paidAmount]).toEqual([3, '450000']);
    near({ received_idr: success.receivedAmount, fee_idr: success.fee, net_idr: success.netAmount }, { received_idr: 487500, fee_idr: 4875 }, 2);

    // CSV exports (the dashboard's downloads).
    const token = await dashboardToken(gw, m.email, m.password);
    const csv = async (path: string) => {
      const res = await fetch(`${gw.url}/api/v2/testnet/merchant/export/${path}`, { headers: { authorization: `Bearer ${token}` } });
      expect(res.status).toBe(200);
      return csvRecords(await res.text());
    };
    const orders = await csv('orders.csv');
    expect(orders).toHaveLength(7);
    expect([sum(orders.map((r) => r.received_idr)), sum(orders.map((r) => r.fee_idr)), sum(orders.map((r) => r.net_idr))].map(String)).toEqual(want);
    const payments = await csv('payments.csv');
    expect(payments.length).toBeGreaterThanOrEqual(8);
    expect([sum(payments.map((r) => r.received_idr)), sum(payments.map((r) => r.fee_idr)), sum(payments.map((r) => r.net_idr))].map(String)).toEqual(want);
    // Per order, the payments' shares add up to the order's figures exactly.
    for (const row of orders) {
      const mine = payments.filter((x) => x.order_id === row.order_id);
      expect([row.order_no, String(sum(mine.map((x) => x.received_idr))), String(sum(mine.map((x) => x.fee_idr)))]).toEqual([
        row.order_no,
        row.received_idr,
        row.fee_idr,
      ]);
    }
  });
});

describe('revenue net of refunds: the views count a confirmed refund on the day it confirmed, and add up to the order', () => {
  it('two confirmed refunds of an overpayment’s excess: analytics.refunds carries what each took out, daily_revenue nets them out, the payments stay what arrived', async () => {
    const m = await createMerchant(gw.app, { platformFeePercent: '1', feeIncluded: true });
    await sql(gw, `insert into refund_settings (merchant_id, environment, auto_approve_limit) values (?, 'sandbox', 100)`, [m.merchantId]);
    const paid = await order(m.sandboxKey, '150000');
    const excess = paid.total / 4n + 7n;
    await pay(paid, paid.total + excess);
    await settle(paid);
    const gross = (
      await sql<{ r: string; f: string }>(gw, 'select received_idr::text as r, fee_idr::text as f from analytics.orders where order_id = ?', [paid.orderId])
    )[0]!;
    // Two refunds of the excess, in odd units (their shares round down), sent and confirmed by the status writer.
    const ids: string[] = [];
    for (const amount of [excess / 3n + 1n, excess / 2n]) {
      const created = await fetch(`${gw.url}/api/v2/testnet/merchant/fiat/refund`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'api-key': m.sandboxKey },
        body: JSON.stringify({ merchant_id: m.merchantId, order_no: paid.orderNo, kind: 'overpayment_excess', amount: amount.toString(), address: PAYER }),
      });
      const body = (await created.json()) as { data: { request: { refund_id: string; status: string } } };
      expect([created.status, body.data.request.status]).toEqual([201, 'approved']);
      ids.push(body.data.request.refund_id);
    }
    for (const [i, id] of ids.entries()) {
      await gw.app.orm.em.fork().transactional(async (t) => {
        const tx = { txHash: (++txSeq).toString(16).padStart(64, 'e'), raw: '{}', nonce: null, expiresAt: null, sentAmount: 1n, feeDeducted: 0n };
        await gw.app.refundStatus.transition(t, id, 'sending', { tx });
        await gw.app.refundStatus.transition(t, id, 'confirmed', { blockNumber: block + BigInt(i) + 1n, blockHash: 'f'.repeat(64) });
      });
    }
    const [net] = await sql<{ r: string; f: string; n: string }>(
      gw,
      'select received_idr::text as r, fee_idr::text as f, net_idr::text as n from analytics.orders where order_id = ?',
      [paid.orderId],
    );
    expect(BigInt(net!.r)).toBeLessThan(BigInt(gross.r));
    // What each refund took out: the order's gross less its net, exactly, split between the two.
    const refunds = await sql<{ received_idr: string; fee_idr: string; net_idr: string }>(
      gw,
      'select received_idr::text, fee_idr::text, net_idr::text from analytics.refunds where order_id = ? order by confirmed_at, refund_id',
      [paid.orderId],
    );
    expect(refunds).toHaveLength(2);
    for (const r of refunds) expect(BigInt(r.received_idr)).toBeGreaterThan(0n);
    expect(String(sum(refunds.map((r) => r.received_idr)))).toBe(String(BigInt(gross.r) - BigInt(net!.r)));
    expect(String(sum(refunds.map((r) => r.fee_idr)))).toBe(String(BigInt(gross.f) - BigInt(net!.f)));
    // The payments stay the money that arrived; daily_revenue nets the refunds out on the day they confirmed.
    const [p] = await sql<{ r: string }>(gw, `select sum(received_idr)::text as r from analytics.payments where order_id = ?`, [paid.orderId]);
    expect(p!.r).toBe(gross.r);
    const [daily] = await sql<Record<string, string>>(
      gw,
      'select sum(revenue_idr)::text as r, sum(fee_idr)::text as f, sum(net_idr)::text as n, sum(gross_idr)::text as g, sum(refunded_idr)::text as rf, sum(refunds)::text as k, sum(orders_paid)::text as paid from analytics.daily_revenue where merchant_id = ?',
      [m.merchantId],
    );
    expect(daily).toEqual({ r: net!.r, f: net!.f, n: net!.n, g: gross.r, rf: String(BigInt(gross.r) - BigInt(net!.r)), k: '2', paid: '1' });
  });
});
