/**
 * A watcher stopped for an hour of mainnet blocks (ETHEREUM 300, BINANCE 1,200: mined on anvil while
 * no worker runs), with payments and an expiry inside the gap. After the restart:
 * - every payment made in the gap is recorded exactly once, and its order reaches Success once;
 * - an order that expired inside the gap and was paid after its expiry (still inside the late
 *   window) completes as a late payment (`late` flag), not twice;
 * - an order left unpaid stays unpaid;
 * - the restarted watcher scans to the head past the gap.
 * Speed of the catch-up: `npm run bench:catchup` (docs/benchmarks.md).
 */
import { CUSTOMER_PRIVATE_KEYS, startDevChains, type DevChains } from '../../src/devchain';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import {
  eventually,
  expireNow,
  fundedCustomer,
  headOf,
  pay,
  placeOrder,
  sql,
  waitForStatus,
  WATCH_ENV,
  type EvmNet,
  type Merchant,
  type PlacedOrder,
} from '../support/evm-harness';

jest.setTimeout(240_000);

const NETS: EvmNet[] = ['ETHEREUM', 'BINANCE'];
/** An hour of blocks: 12 s on Ethereum, 3 s on BSC. */
const GAP: Record<EvmNet, number> = { ETHEREUM: 300, BINANCE: 1200 };
const WORKER_ENV = { ...WATCH_ENV, ROLE: 'worker', SANDBOX_ETHEREUM_CONFIRMATIONS: '1', SANDBOX_BINANCE_CONFIRMATIONS: '1' };

let chains: DevChains;
let db: TestDatabase;
let api: TestGateway;
let worker: TestGateway | undefined;
let m: Merchant;
let customer: string;

beforeAll(async () => {
  chains = await startDevChains();
  db = await createTestDatabase();
  api = await startTestGateway({ ...WATCH_ENV, ROLE: 'api' }, { db });
  m = await createMerchant(api.app);
  customer = await fundedCustomer(chains, CUSTOMER_PRIVATE_KEYS[3]!);
});
afterAll(async () => {
  await worker?.close();
  await api?.close();
  await chains?.stop();
  await db?.drop();
});

const startWorker = () =>
  startTestGateway(WORKER_ENV, {
    db,
    devChains: chains,
    rpcOverrides: { 'sandbox:ETHEREUM': [chains.ETHEREUM.rpcUrl], 'sandbox:BINANCE': [chains.BINANCE.rpcUrl] },
  });
const cursorOf = async (n: EvmNet) =>
  BigInt(
    (await sql<{ b: string }>(api.app, `select block_number::text as b from chain_cursors where environment = 'sandbox' and network = ?`, [n]))[0]?.b ?? '-1',
  );
const mine = (n: EvmNet, blocks: number) => chains[n].rpc.call('anvil_mine', ['0x' + blocks.toString(16)]);

it('a watcher stopped across an hour of blocks finds every payment of the gap once; an expiry inside the gap follows the late-window rules', async () => {
  worker = await startWorker();
  const orders: Record<EvmNet, { before: PlacedOrder; inGap: PlacedOrder[]; expiring: PlacedOrder; unpaid: PlacedOrder }> = {} as never;
  for (const n of NETS) {
    orders[n] = {
      before: await placeOrder(api.url, api.app, m, n),
      inGap: [await placeOrder(api.url, api.app, m, n), await placeOrder(api.url, api.app, m, n), await placeOrder(api.url, api.app, m, n)],
      expiring: await placeOrder(api.url, api.app, m, n),
      unpaid: await placeOrder(api.url, api.app, m, n),
    };
  }
  const txs: { txHash: string; orderId: string }[] = [];
  // The watcher works before the gap.
  for (const n of NETS)
    txs.push({ txHash: (await pay(chains[n], customer, orders[n].before.address, orders[n].before.total)).txHash, orderId: orders[n].before.orderId });
  for (const n of NETS) await waitForStatus(api.url, m, orders[n].before.orderNo, 'Success', 60_000);

  await worker.close();
  worker = undefined;
  const stoppedAt = { ETHEREUM: await cursorOf('ETHEREUM'), BINANCE: await cursorOf('BINANCE') };

  // The gap: a third of the hour, two payments, a third of the hour, the expiry and a late payment,
  // one more payment, the rest of the hour.
  for (const n of NETS) {
    const third = Math.floor(GAP[n] / 3);
    await mine(n, third);
    for (const o of orders[n].inGap.slice(0, 2)) txs.push({ txHash: (await pay(chains[n], customer, o.address, o.total)).txHash, orderId: o.orderId });
    await mine(n, third);
    await expireNow(api.app, orders[n].expiring.orderId, 60);
    // the expiry job runs while the watcher is away (the job of `expire-orders`, called here so the order is Expired before its late payment is seen)
    await api.app.settlement.expireDue(api.app.orm.em.fork());
    await waitForStatus(api.url, m, orders[n].expiring.orderNo, 'Expired', 30_000);
    txs.push({ txHash: (await pay(chains[n], customer, orders[n].expiring.address, orders[n].expiring.total)).txHash, orderId: orders[n].expiring.orderId });
    const last = orders[n].inGap[2]!;
    txs.push({ txHash: (await pay(chains[n], customer, last.address, last.total)).txHash, orderId: last.orderId });
    await mine(n, GAP[n] - 2 * third - 4);
  }
  const headAfterGap = { ETHEREUM: await headOf(chains.ETHEREUM), BINANCE: await headOf(chains.BINANCE) };
  for (const n of NETS) expect(headAfterGap[n] - stoppedAt[n]).toBeGreaterThanOrEqual(BigInt(GAP[n]));

  worker = await startWorker();
  const settled = NETS.flatMap((n) => [...orders[n].inGap, orders[n].expiring]);
  for (const o of settled) await waitForStatus(api.url, m, o.orderNo, 'Success', 120_000);
  for (const n of NETS) await eventually(async () => (await cursorOf(n)) >= headAfterGap[n], `${n} cursor past the gap`, 60_000);

  const all = NETS.flatMap((n) => [orders[n].before, ...orders[n].inGap, orders[n].expiring, orders[n].unpaid]);
  const ids = all.map((o) => o.orderId);
  const rows = await sql<{ tx_hash: string; order_id: string; status: string; late: boolean; n: string }>(
    api.app,
    `select tx_hash, order_id, status, late, count(*) over (partition by tx_hash)::text as n from payments where order_id in (${ids.map(() => '?').join(',')})`,
    ids,
  );
  // every transfer once, for its own order, confirmed; nothing else recorded
  expect(rows.map((r) => r.tx_hash).sort()).toEqual(txs.map((t) => t.txHash).sort());
  for (const t of txs) expect(rows.find((r) => r.tx_hash === t.txHash)).toMatchObject({ order_id: t.orderId, status: 'confirmed', n: '1' });
  // the payment made after the expiry inside the gap is late (and still completes the order: late window 24 h); the others are not
  for (const n of NETS) {
    expect(rows.filter((r) => r.order_id === orders[n].expiring.orderId).map((r) => r.late)).toEqual([true]);
    for (const o of orders[n].inGap) expect(rows.find((r) => r.order_id === o.orderId)!.late).toBe(false);
  }
  // Success once per paid order; the unpaid ones have no payment and never reached Success
  const successes = await sql<{ order_id: string; n: string; from_status: string }>(
    api.app,
    `select order_id, count(*)::text as n, string_agg(coalesce(from_status, '-'), ',') as from_status from order_events where type = 'order.status_changed' and to_status = 'Success' and order_id in (${ids.map(() => '?').join(',')}) group by order_id`,
    ids,
  );
  for (const o of all) expect(successes.find((s) => s.order_id === o.orderId)?.n).toBe(NETS.some((n) => orders[n].unpaid === o) ? undefined : '1');
  // the order that expired in the gap went Expired → Success through the late window, reported once as late
  for (const n of NETS) {
    expect(successes.find((s) => s.order_id === orders[n].expiring.orderId)?.from_status).toBe('Expired');
    const late = await sql<{ n: string }>(api.app, `select count(*)::text as n from order_events where type = 'payment.late' and order_id = ?`, [
      orders[n].expiring.orderId,
    ]);
    expect(late[0]!.n).toBe('1');
  }
});
