/**
 * Money correctness on the local anvil chains, with a real gateway, real
 * PostgreSQL and a real webhook receiver:
 *
 * - Several deposits of one order: an order with a 6-decimal deposit (ETHEREUM stand-in) and an
 *   18-decimal one (BINANCE stand-in). The success webhook names the deposit and payment that
 *   completed the order (not the one with the most base units), and paying both in full is an
 *   overpayment judged by value across the deposits.
 * - Deep reorgs after confirmation: a payment is confirmed (order Success), then `anvil_reorg` replaces
 *   more blocks than the confirmation depth and drops it. The re-check of confirmed blocks raises
 *   `payment.reorged` (event, webhook, metric) and the order leaves Success.
 */
import { CUSTOMER_PRIVATE_KEYS, DEV_TOKEN_ADDRESSES, startDevChains, type DevChain, type DevChains } from '../../src/devchain';
import { toQuantity } from '../../src/chains/evm/evm.rpc';
import { formatDecimal } from '../../src/common/money';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { http } from '../support/http';
import {
  eventsOf,
  eventually,
  fundedCustomer,
  orderStatus,
  pay,
  paymentsOf,
  placeOrder,
  sql,
  T,
  WATCH_ENV,
  type EvmNet,
  type Merchant,
  type PlacedOrder,
} from '../support/evm-harness';
import { WebhookReceiver } from '../support/webhook-receiver';
import { bodyOf, setUrl } from '../support/webhooks';

const CONFIRMATIONS = 3;
let chains: DevChains;
let gw: TestGateway;
let m: Merchant;
let customer: string;
let hooks: WebhookReceiver;

beforeAll(async () => {
  chains = await startDevChains();
  hooks = await WebhookReceiver.start();
  gw = await startTestGateway(
    {
      ...WATCH_ENV,
      SANDBOX_ETHEREUM_CONFIRMATIONS: String(CONFIRMATIONS),
      SANDBOX_BINANCE_CONFIRMATIONS: String(CONFIRMATIONS),
      REORG_RECHECK_INTERVAL_MS: '200',
      WEBHOOK_POLL_MS: '100',
    },
    { devChains: chains },
  );
  m = await createMerchant(gw.app);
  await setUrl(gw.app, m.merchantId, 'sandbox', hooks.url);
  customer = await fundedCustomer(chains, CUSTOMER_PRIVATE_KEYS[2]!);
});
afterAll(async () => {
  await gw?.close();
  await hooks?.close();
  await chains?.stop();
});

const mine = (chain: DevChain, n: number) => chain.rpc.call('anvil_mine', [toQuantity(BigInt(n)), '0x0']);
const reorg = (chain: DevChain, depth: number, txs: [unknown, number][] = []) => chain.rpc.call('anvil_reorg', [depth, txs]);
const receipt = (chain: DevChain, hash: string) => chain.rpc.call<{ blockNumber: string } | null>('eth_getTransactionReceipt', [hash]);

/** Webhooks of one order received so far, parsed. */
const hooksOf = (orderNo: string) => hooks.received.map(bodyOf).filter((b) => b.data.order_no === orderNo);
const hookOf = async (orderNo: string, event: string) => {
  await eventually(async () => hooksOf(orderNo).some((b) => b.event === event), `webhook ${event} of ${orderNo}`, 20_000);
  return hooksOf(orderNo).find((b) => b.event === event)!;
};

/** A second deposit of the same order: USDT on another network (checkout key of the order). */
async function addDeposit(o: PlacedOrder, network: EvmNet): Promise<{ depositId: string; address: string; total: bigint }> {
  const q = await http(gw.url, `${T}/pgqr/fiat/create`, {
    body: { merchant_id: m.merchantId, transactionID: o.orderNo, tokenAddress: DEV_TOKEN_ADDRESSES[network].USDT, network, walletType: 'METAMASK' },
    headers: { 'api-key': o.key },
  });
  if (q.status !== 201) throw new Error(`qr: ${q.status} ${q.text}`);
  const total = BigInt(new URL((q.body.data.qrValue as string).replace(/^ethereum:/, 'http://x/')).searchParams.get('uint256')!);
  const address = q.body.data.request.destinationAddress as string;
  const [d] = await sql<{ id: string }>(gw.app, `select id from deposits where order_id = ? and network = ?`, [o.orderId, network]);
  return { depositId: d!.id, address, total };
}

const receivedOf = async (depositId: string) =>
  BigInt((await sql<{ amount_received: string }>(gw.app, `select amount_received::text from deposits where id = ?`, [depositId]))[0]!.amount_received);

describe('several deposits of one order (6- and 18-decimal)', () => {
  const overpaidEvents = async (orderId: string) => (await eventsOf(gw.app, orderId)).filter((e) => e.type === 'payment.overpaid');

  it('the success webhook names the deposit and payment that completed the order, not the one with the most base units; value on the other deposit is an overpayment', async () => {
    const o = await placeOrder(gw.url, gw.app, m, 'ETHEREUM'); // USDT, 6 decimals
    const bsc = await addDeposit(o, 'BINANCE'); // USDT, 18 decimals: ~10^12 times the base units
    // A thousandth of the BSC deposit first: confirmed, far from enough, yet far more base units than
    // the whole ETHEREUM deposit (what the old "most base units" choice fell for).
    const bit = bsc.total / 1000n;
    expect(bit).toBeGreaterThan(o.total * 10n ** 6n);
    await pay(chains.BINANCE, customer, bsc.address, bit);
    await mine(chains.BINANCE, CONFIRMATIONS);
    await eventually(async () => (await receivedOf(bsc.depositId)) === bit, 'the BSC part to be confirmed');
    expect(await orderStatus(gw.url, m, o.orderNo)).toBe('Processing'); // a confirmed partial payment: detected, not final (order-lifecycle.md)

    // The ETHEREUM deposit in full completes the order.
    const eth = await pay(chains.ETHEREUM, customer, o.address, o.total);
    await mine(chains.ETHEREUM, CONFIRMATIONS);
    await eventually(async () => (await orderStatus(gw.url, m, o.orderNo)) === 'Success', 'Success');
    const ethPayment = (await paymentsOf(gw.app, o.orderId)).find((p) => p.tx_hash === eth.txHash)!;
    const success = (await eventsOf(gw.app, o.orderId)).find((e) => e.to_status === 'Success' && e.type === 'order.status_changed')!;
    expect(success.reason).toMatchObject({ depositId: o.depositId, paymentId: ethPayment.id });

    const hook = await hookOf(o.orderNo, 'transaction.success');
    expect(hook.idempotency_key).toBe(eth.txHash);
    expect(hook.data).toMatchObject({
      network: 'ETHEREUM',
      deposit_address: o.address,
      amount_due_crypto: formatDecimal(o.total, 6),
      amount_received_crypto: formatDecimal(o.total, 6),
    });

    // Full value on ETHEREUM plus a thousandth on BSC: overpaid by that thousandth of the order's value.
    const over = await overpaidEvents(o.orderId);
    expect(over).toHaveLength(1);
    expect(over[0]!.reason).toMatchObject({ depositId: o.depositId, excess: ((bit * o.total) / bsc.total).toString() });
    const overHook = await hookOf(o.orderNo, 'transaction.overpaid');
    expect(overHook.data).toMatchObject({ network: 'ETHEREUM', overpaid: true, overpayment: { excess_crypto: formatDecimal((bit * o.total) / bsc.total, 6) } });
  });

  it('paying both deposits in full is flagged once as an overpayment of one whole order value', async () => {
    const o = await placeOrder(gw.url, gw.app, m, 'ETHEREUM');
    const bsc = await addDeposit(o, 'BINANCE');
    const eth = await pay(chains.ETHEREUM, customer, o.address, o.total);
    await mine(chains.ETHEREUM, CONFIRMATIONS);
    await eventually(async () => (await orderStatus(gw.url, m, o.orderNo)) === 'Success', 'Success');
    expect((await hookOf(o.orderNo, 'transaction.success')).idempotency_key).toBe(eth.txHash);
    expect(await overpaidEvents(o.orderId)).toEqual([]); // exact so far

    await pay(chains.BINANCE, customer, bsc.address, bsc.total);
    await mine(chains.BINANCE, CONFIRMATIONS);
    await eventually(
      async () => (await sql<{ overpaid: boolean }>(gw.app, `select overpaid from orders where id = ?`, [o.orderId]))[0]!.overpaid,
      'the order to be flagged overpaid',
    );
    const over = await overpaidEvents(o.orderId);
    expect(over).toHaveLength(1);
    expect(over[0]!.reason).toMatchObject({
      depositId: o.depositId,
      due: o.total.toString(),
      received: o.total.toString(),
      excess: o.total.toString(), // one whole order value, in the completing deposit's token
      deposits: expect.arrayContaining([
        { depositId: o.depositId, due: o.total.toString(), received: o.total.toString() },
        { depositId: bsc.depositId, due: bsc.total.toString(), received: bsc.total.toString() },
      ]),
    });
    const overHook = await hookOf(o.orderNo, 'transaction.overpaid');
    expect(overHook.data).toMatchObject({
      network: 'ETHEREUM',
      deposit_address: o.address,
      overpaid: true,
      overpayment: { excess_crypto: formatDecimal(o.total, 6) },
    });
    expect(overHook.data.overpayment.deposits).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ network: 'BINANCE', deposit_address: bsc.address, amount_received_crypto: formatDecimal(bsc.total, 18) }),
      ]),
    );
    expect(await orderStatus(gw.url, m, o.orderNo)).toBe('Success');
    expect(hooksOf(o.orderNo).filter((b) => b.event === 'transaction.success')).toHaveLength(1);
  });
});

describe.each(['ETHEREUM', 'BINANCE'] as EvmNet[])('%s: a reorg deeper than the confirmation depth after confirmation', (network) => {
  const chain = () => chains[network];
  const reorgedCount = async () =>
    (await gw.app.metrics.registry.getSingleMetric('gateway_payments_reorged_total')?.get())?.values.find((v) => v.labels.network === network)?.value ?? 0;

  it('is noticed: payment.reorged (event, webhook, metric), the order leaves Success and is flagged reorged', async () => {
    const o = await placeOrder(gw.url, gw.app, m, network);
    const sent = await pay(chain(), customer, o.address, o.total);
    await mine(chain(), CONFIRMATIONS);
    await eventually(async () => (await orderStatus(gw.url, m, o.orderNo)) === 'Success', 'Success');
    await eventually(async () => (await paymentsOf(gw.app, o.orderId))[0]?.status === 'confirmed', 'the payment to be confirmed');
    await hookOf(o.orderNo, 'transaction.success');
    const before = await reorgedCount();

    // Replace every block from the payment's up: deeper than the confirmation depth; the transfer is dropped.
    const head = BigInt(await chain().rpc.call<string>('eth_blockNumber', []));
    const depth = Number(head - sent.blockNumber) + 1;
    expect(depth).toBeGreaterThan(CONFIRMATIONS);
    await reorg(chain(), depth);
    expect(await receipt(chain(), sent.txHash)).toBeNull();
    await mine(chain(), 2);

    await eventually(async () => (await orderStatus(gw.url, m, o.orderNo)) === 'Underpaid', 'the order to leave Success');
    const [payment] = await paymentsOf(gw.app, o.orderId);
    expect(payment).toMatchObject({ tx_hash: sent.txHash, status: 'orphaned' });
    const [flags] = await sql<{ reorged: boolean; amount_received: string }>(
      gw.app,
      `select o.reorged, d.amount_received::text from orders o join deposits d on d.order_id = o.id where o.id = ?`,
      [o.orderId],
    );
    expect(flags).toEqual({ reorged: true, amount_received: '0' });

    const events = await eventsOf(gw.app, o.orderId);
    const alarm = events.filter((e) => e.type === 'payment.reorged');
    expect(alarm).toHaveLength(1);
    expect(alarm[0]!.reason).toMatchObject({
      paymentId: payment!.id,
      txHash: sent.txHash,
      blockNumber: sent.blockNumber.toString(),
      blockHash: sent.blockHash,
      paymentStatus: 'orphaned',
    });
    // (Processing may come first, when a tick saw the transfer before its confirmations.)
    expect(events.flatMap((e) => (e.type === 'order.status_changed' && e.to_status !== 'Processing' ? [e.to_status] : []))).toEqual(['Success', 'Underpaid']);
    expect(events.at(-1)!.reason).toMatchObject({ kind: 'reorged' });

    const hook = await hookOf(o.orderNo, 'transaction.reorged');
    expect(hook.data).toMatchObject({
      reorged: true,
      reorg: { tx_hash: sent.txHash, block_number: sent.blockNumber.toString(), block_hash: sent.blockHash, payment_status: 'orphaned' },
    });
    const underpaid = await hookOf(o.orderNo, 'transaction.underpaid');
    expect(underpaid.data).toMatchObject({ status: 'Underpaid', previous_status: 'Success', reorged: true });
    expect(await reorgedCount()).toBe(before + 1);

    // Re-checks go on: the alarm is raised once per reorg, not once per tick.
    await mine(chain(), CONFIRMATIONS);
    await new Promise((r) => setTimeout(r, 1000));
    expect((await eventsOf(gw.app, o.orderId)).filter((e) => e.type === 'payment.reorged')).toHaveLength(1);
    expect(await reorgedCount()).toBe(before + 1);

    // The customer pays again: Underpaid → Success.
    await pay(chain(), customer, o.address, o.total);
    await mine(chain(), CONFIRMATIONS);
    await eventually(async () => (await orderStatus(gw.url, m, o.orderNo)) === 'Success', 'Success again');
  });
});
