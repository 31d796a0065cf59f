/**
 * EVM settlement end to end, on both local chains: ETHEREUM (31337, 6-decimal USDT) and BINANCE
 * (31338, 18-decimal USDT). A merchant creates an order and a QR deposit over REST, a customer's
 * wallet (anvil dev account, signed transfer) pays on the local chain, the worker's watcher job
 * (Agenda) records the transfer, and the settlement service moves the order. Orders are made to expire
 * by moving `expires_at` into the past (merchant TTLs cannot go below 60 s); the real expiry job (every
 * second here) does the rest. One confirmation, so each transfer counts as soon as it is mined.
 */
import { CUSTOMER_PRIVATE_KEYS, startDevChains, type DevChains } from '../../src/devchain';
import { LoginDocument, UpdateMerchantSettingsDocument } from '../generated/graphql';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { bearer, gql } from '../support/graphql';
import {
  DECIMALS,
  eventsOf,
  expireNow,
  fundedCustomer,
  orderStatus,
  pay,
  paymentsOf,
  placeOrder,
  sleep,
  sql,
  subscribeOrder,
  waitForStatus,
  WATCH_ENV,
  type EvmNet,
  type Merchant,
} from '../support/evm-harness';

let chains: DevChains;
let gw: TestGateway;
let m: Merchant;
/** A merchant that accepts payments up to 0.5 % short (dashboard setting; the default is 0). */
let tolerant: Merchant;
const TOLERANCE_BPS = 50;
let customer: string;
const LATE_WINDOW_S = 3600;

beforeAll(async () => {
  chains = await startDevChains();
  gw = await startTestGateway(
    { ...WATCH_ENV, SANDBOX_ETHEREUM_CONFIRMATIONS: '1', SANDBOX_BINANCE_CONFIRMATIONS: '1', LATE_PAYMENT_WINDOW_S: String(LATE_WINDOW_S) },
    { devChains: chains },
  );
  m = await createMerchant(gw.app);
  tolerant = await createMerchant(gw.app);
  const login = await gql(gw.url, LoginDocument, { email: tolerant.email, password: tolerant.password });
  const set = await gql(gw.url, UpdateMerchantSettingsDocument, { input: { paymentToleranceBps: TOLERANCE_BPS } }, bearer(login.data!.login.token));
  expect(set.data?.updateMerchantSettings.paymentToleranceBps).toBe(TOLERANCE_BPS);
  customer = await fundedCustomer(chains, CUSTOMER_PRIVATE_KEYS[0]!);
});
afterAll(async () => {
  await gw?.close();
  await chains?.stop();
});

describe.each([
  { network: 'ETHEREUM' as EvmNet, chainId: 31337 },
  { network: 'BINANCE' as EvmNet, chainId: 31338 },
])('$network (chain $chainId)', ({ network, chainId }) => {
  const chain = () => chains[network];

  it(`exact total → Success, seen by the orderUpdated subscription; the payment row holds the transfer (${DECIMALS[network]} decimals)`, async () => {
    const o = await placeOrder(gw.url, gw.app, m, network);
    expect(chain().chainId).toBe(chainId);
    // 150 000 IDR at 16 250 → ~9.23 tokens: the QR amount is in the token's own base units.
    expect(o.total / 10n ** BigInt(DECIMALS[network])).toBe(9n);
    const sub = subscribeOrder(gw.url, o.key, o.orderNo);
    try {
      await sub.until('Created');
      const t0 = Date.now();
      const sent = await pay(chain(), customer, o.address, o.total);
      await sub.until('Success');
      const ms = Date.now() - t0;
      console.log(`${network}: transfer → Success on the subscription in ${ms} ms`);
      expect(await orderStatus(gw.url, m, o.orderNo)).toBe('Success');
      expect(sub.statuses[0]).toBe('Created');
      expect(sub.statuses.at(-1)).toBe('Success');
      const rows = await paymentsOf(gw.app, o.orderId);
      expect(rows).toEqual([
        expect.objectContaining({
          tx_hash: sent.txHash,
          log_index: sent.logIndex,
          block_number: sent.blockNumber.toString(),
          block_hash: sent.blockHash,
          amount: o.total.toString(),
          status: 'confirmed',
          late: false,
          deposit_id: o.depositId,
        }),
      ]);
      expect(rows[0]!.from_address.toLowerCase()).toBe((await import('ethers')).computeAddress(customer).toLowerCase());
      expect(rows[0]!.to_address.toLowerCase()).toBe(o.address.toLowerCase());
      const [dep] = await sql<{ amount_received: string; status: string }>(gw.app, `select amount_received::text, status from deposits where id = ?`, [
        o.depositId,
      ]);
      expect(dep).toEqual({ amount_received: o.total.toString(), status: 'settled' }); // paid: code released, still watched until the late window ends
      const events = await eventsOf(gw.app, o.orderId);
      expect(events.filter((e) => e.type === 'order.status_changed').at(-1)).toMatchObject({ to_status: 'Success' });
      expect(events.some((e) => e.type === 'payment.overpaid' || e.type === 'payment.late')).toBe(false);
    } finally {
      await sub.close();
    }
  });

  it('two transfers that add up to the total → Success once the second lands (not before)', async () => {
    const o = await placeOrder(gw.url, gw.app, m, network);
    const first = o.total / 3n;
    await pay(chain(), customer, o.address, first);
    await settled(o.depositId, first);
    expect(await orderStatus(gw.url, m, o.orderNo)).toBe('Processing'); // detected, not final
    await pay(chain(), customer, o.address, o.total - first);
    await waitForStatus(gw.url, m, o.orderNo, 'Success');
    const rows = await paymentsOf(gw.app, o.orderId);
    expect(rows.map((r) => [r.amount, r.status])).toEqual([
      [first.toString(), 'confirmed'],
      [(o.total - first).toString(), 'confirmed'],
    ]);
  });

  it('overpaid → Success, flagged on the order and written as a payment.overpaid event with the excess', async () => {
    const o = await placeOrder(gw.url, gw.app, m, network);
    const extra = 10n ** BigInt(DECIMALS[network]); // one whole token too much
    await pay(chain(), customer, o.address, o.total + extra);
    await waitForStatus(gw.url, m, o.orderNo, 'Success');
    const [order] = await sql<{ overpaid: boolean }>(gw.app, `select overpaid from orders where id = ?`, [o.orderId]);
    expect(order!.overpaid).toBe(true);
    const over = (await eventsOf(gw.app, o.orderId)).filter((e) => e.type === 'payment.overpaid');
    expect(over).toHaveLength(1);
    expect(over[0]!.reason).toMatchObject({ due: o.total.toString(), received: (o.total + extra).toString(), excess: extra.toString() });
    expect((await paymentsOf(gw.app, o.orderId)).map((p) => p.amount)).toEqual([(o.total + extra).toString()]);
  });

  if (network === 'ETHEREUM') {
    it('an extra transfer well after Success (past the watcher’s full reload) is still recorded, as an overpayment', async () => {
      const o = await placeOrder(gw.url, gw.app, m, network);
      await pay(chain(), customer, o.address, o.total);
      await waitForStatus(gw.url, m, o.orderNo, 'Success');
      // Paid: the unique code is released, the address stays watched until the late window ends.
      const [dep] = await sql<{ status: string }>(gw.app, `select status from deposits where id = ?`, [o.depositId]);
      expect(dep!.status).toBe('settled');
      await sleep(16_000); // past a full reload of the watch set (every 15 s when this was written; now every 10 min, and closed deposits stay watched)
      await pay(chain(), customer, o.address, 12345n);
      for (let i = 0; i < 100 && (await paymentsOf(gw.app, o.orderId)).length < 2; i++) await sleep(100);
      expect((await paymentsOf(gw.app, o.orderId)).map((p) => p.amount).sort()).toEqual([o.total.toString(), '12345'].sort());
      for (let i = 0; i < 50 && !(await eventsOf(gw.app, o.orderId)).some((e) => e.type === 'payment.overpaid'); i++) await sleep(100);
      const over = (await eventsOf(gw.app, o.orderId)).filter((e) => e.type === 'payment.overpaid');
      expect(over).toHaveLength(1);
      expect(over[0]!.reason).toMatchObject({ excess: '12345' });
      expect(await orderStatus(gw.url, m, o.orderNo)).toBe('Success');
    }, 40_000);
  }

  it('underpaid, then expiry → Underpaid (and stays so)', async () => {
    const o = await placeOrder(gw.url, gw.app, m, network);
    await pay(chain(), customer, o.address, o.total - 1n);
    await settled(o.depositId, o.total - 1n);
    expect(await orderStatus(gw.url, m, o.orderNo)).toBe('Processing');
    await expireNow(gw.app, o.orderId);
    const ms = await waitForStatus(gw.url, m, o.orderNo, 'Underpaid');
    console.log(`${network}: expiry job moved the underpaid order in ${ms} ms`);
    await sleep(1500); // at least one more expiry run and several watcher ticks
    expect(await orderStatus(gw.url, m, o.orderNo)).toBe('Underpaid');
    const [dep] = await sql<{ amount_received: string }>(gw.app, `select amount_received::text from deposits where id = ?`, [o.depositId]);
    expect(dep!.amount_received).toBe((o.total - 1n).toString());
  });

  it('underpaid at expiry, then a top-up inside the late window → Success (the top-up is flagged late)', async () => {
    const o = await placeOrder(gw.url, gw.app, m, network);
    const part = (o.total * 2n) / 3n;
    await pay(chain(), customer, o.address, part);
    await settled(o.depositId, part);
    await expireNow(gw.app, o.orderId);
    await waitForStatus(gw.url, m, o.orderNo, 'Underpaid');
    await pay(chain(), customer, o.address, o.total - part);
    await waitForStatus(gw.url, m, o.orderNo, 'Success');
    const rows = await paymentsOf(gw.app, o.orderId);
    expect(rows.map((r) => [r.amount, r.status, r.late])).toEqual([
      [part.toString(), 'confirmed', false],
      [(o.total - part).toString(), 'confirmed', true],
    ]);
    const events = await eventsOf(gw.app, o.orderId);
    expect(events.filter((e) => e.type === 'order.status_changed').map((e) => e.to_status)).toEqual(['Processing', 'Underpaid', 'Success']);
    expect(events.filter((e) => e.type === 'payment.late')).toEqual([
      expect.objectContaining({ reason: expect.objectContaining({ txHash: rows[1]!.tx_hash, withinLateWindow: true }) }),
    ]);
  });

  it('nothing paid → Expired; a full payment after expiry, inside the late window, is recorded, flagged late and completes the order', async () => {
    const o = await placeOrder(gw.url, gw.app, m, network);
    const sub = subscribeOrder(gw.url, o.key, o.orderNo);
    try {
      await sub.until('Created');
      await expireNow(gw.app, o.orderId);
      await sub.until('Expired');
      // Expired unpaid: the unique code went back to the merchant's pool, the address is still watched.
      expect((await sql<{ status: string }>(gw.app, 'select status from deposits where order_id = ?', [o.orderId]))[0]!.status).toBe('lapsed');
      const sent = await pay(chain(), customer, o.address, o.total);
      await sub.until('Success');
      expect(sub.statuses).toEqual(['Created', 'Expired', 'Success']);
      expect((await sql<{ status: string }>(gw.app, 'select status from deposits where order_id = ?', [o.orderId]))[0]!.status).toBe('settled');
      const rows = await paymentsOf(gw.app, o.orderId);
      expect(rows).toEqual([expect.objectContaining({ tx_hash: sent.txHash, status: 'confirmed', late: true, amount: o.total.toString() })]);
      const late = (await eventsOf(gw.app, o.orderId)).filter((e) => e.type === 'payment.late');
      expect(late).toHaveLength(1);
      expect(late[0]!.reason).toMatchObject({ paymentId: rows[0]!.id, txHash: sent.txHash, amount: o.total.toString(), withinLateWindow: true });
    } finally {
      await sub.close();
    }
  });

  it(`merchant tolerance ${TOLERANCE_BPS} bps: short by exactly the tolerance → Success; one base unit more short → not paid (Underpaid at expiry)`, async () => {
    const ok = await placeOrder(gw.url, gw.app, tolerant, network);
    const short = await placeOrder(gw.url, gw.app, tolerant, network);
    const allowance = (t: bigint) => (t * BigInt(TOLERANCE_BPS)) / 10_000n; // largest shortfall accepted
    await pay(chain(), customer, ok.address, ok.total - allowance(ok.total));
    await pay(chain(), customer, short.address, short.total - allowance(short.total) - 1n);
    await waitForStatus(gw.url, tolerant, ok.orderNo, 'Success');
    await settled(short.depositId, short.total - allowance(short.total) - 1n);
    expect(await orderStatus(gw.url, tolerant, short.orderNo)).toBe('Processing');
    await expireNow(gw.app, short.orderId);
    await waitForStatus(gw.url, tolerant, short.orderNo, 'Underpaid');
  });

  it("a transfer to another order's address is not misattributed; another token to the deposit address is not counted", async () => {
    const a = await placeOrder(gw.url, gw.app, m, network);
    const b = await placeOrder(gw.url, gw.app, m, network);
    expect(a.address).not.toBe(b.address);
    // A's exact total, sent to B's address by mistake.
    const wrong = await pay(chain(), customer, b.address, a.total);
    // USDC (not the deposit's token) sent to A's address, more than enough.
    const otherToken = await pay(chain(), customer, a.address, a.total * 2n, 'USDC');
    await settled(b.depositId, a.total);
    await sleep(500); // several more ticks: nothing else may appear
    expect(await paymentsOf(gw.app, a.orderId)).toEqual([]);
    expect(await orderStatus(gw.url, m, a.orderNo)).toBe('Created');
    const bRows = await paymentsOf(gw.app, b.orderId);
    expect(bRows).toEqual([expect.objectContaining({ tx_hash: wrong.txHash, amount: a.total.toString(), deposit_id: b.depositId })]);
    expect(await orderStatus(gw.url, m, b.orderNo)).toBe(a.total >= b.total ? 'Success' : 'Processing');
    const [usdc] = await sql<{ n: string }>(gw.app, `select count(*)::text as n from payments where tx_hash = ?`, [otherToken.txHash]);
    expect(usdc!.n).toBe('0');
    // A is still payable and completes with its own transfer.
    await pay(chain(), customer, a.address, a.total);
    await waitForStatus(gw.url, m, a.orderNo, 'Success');
  });
});

/** Waits until settlement has counted `amount` into the deposit (written with the order's status, in one transaction). */
async function settled(depositId: string, amount: bigint): Promise<void> {
  await waitFor(
    async () => (await sql<{ r: string }>(gw.app, `select amount_received::text as r from deposits where id = ?`, [depositId]))[0]?.r === amount.toString(),
  );
}

async function waitFor(probe: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const t0 = Date.now();
  while (!(await probe())) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(50);
  }
}
