/**
 * Unattributed receipts (receipt-scenarios.ts) on both local EVM chains, and what the merchant sees of
 * them: real gateway, real PostgreSQL, real anvil. The other EVM chain's USDT sent to a deposit address
 * is the `wrong_network` case (one HD key space serves ETHEREUM and BINANCE).
 */
import { DEV_TOKEN_ADDRESSES, startDevChains, type DevChains, CUSTOMER_PRIVATE_KEYS } from '../../src/devchain';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { checkout, eventually, watchOrder, type OrderWatch } from '../support/order-watch';
import { fundedCustomer, pay, T, WATCH_ENV, type EvmNet } from '../support/evm-harness';
import { http } from '../support/http';
import { receiptScenarios } from '../support/receipt-scenarios';

let chains: DevChains;
let gw: TestGateway;
let merchant: Awaited<ReturnType<typeof createMerchant>>;
let customer: string;
const watches: OrderWatch[] = [];

beforeAll(async () => {
  chains = await startDevChains();
  gw = await startTestGateway(
    { ...WATCH_ENV, SANDBOX_ETHEREUM_CONFIRMATIONS: '1', SANDBOX_BINANCE_CONFIRMATIONS: '1', LATE_PAYMENT_WINDOW_S: '60' },
    { devChains: chains },
  );
  merchant = await createMerchant(gw.app);
  customer = await fundedCustomer(chains, CUSTOMER_PRIVATE_KEYS[3]!);
});
afterEach(async () => {
  await Promise.all(watches.splice(0).map((w) => w.close()));
});
afterAll(async () => {
  await gw?.close();
  await chains?.stop();
});

const other: Record<EvmNet, EvmNet> = { ETHEREUM: 'BINANCE', BINANCE: 'ETHEREUM' };

describe.each(['ETHEREUM', 'BINANCE'] as EvmNet[])('%s', (network) => {
  const token = DEV_TOKEN_ADDRESSES[network].USDT;
  const newOrder = async (amountIdr = '150000') => {
    const d = await checkout(gw.url, merchant.sandboxKey, { amountIdr, tokenAddress: token, network, walletType: 'METAMASK' });
    const watch = watchOrder(gw.url, { key: d.key }, d.orderNo);
    watches.push(watch);
    await watch.until('Created');
    return { ...d, watch };
  };

  receiptScenarios({
    app: () => gw.app,
    newOrder,
    pay: async (to, amount) => (await pay(chains[network], customer, to, amount)).txHash,
    payOtherToken: async (to, amount) => (await pay(chains[network], customer, to, amount, 'USDC')).txHash,
    payOtherNetwork: async (to, amount) => (await pay(chains[other[network]], customer, to, amount)).txHash,
    makeFinal: () => undefined, // one confirmation: mined is final here
  });

  it('getOrder shows overpaid, each deposit’s received amount and the unattributed receipts (token units)', async () => {
    const o = await newOrder();
    const wrong = await pay(chains[network], customer, o.address, 5n, 'USDC');
    await pay(chains[network], customer, o.address, o.total + 1n);
    await o.watch.until('Success');
    const read = () => http(gw.url, `${T}/merchant/fiat/getOrder`, { body: { merchant_id: merchant.merchantId, order_no: o.orderNo }, headers: { 'api-key': merchant.sandboxKey } });
    await eventually(async () => (await read()).body.data.request.overpaid === true && (await read()).body.data.unattributed_receipts.length === 1, 'overpaid and receipt visible');
    const data = (await read()).body.data;
    const five = network === 'ETHEREUM' ? '0.000005' : '0.000000000000000005';
    expect(data.deposits[0].amount_received).toBe(formatUnits(o.total + 1n, network === 'ETHEREUM' ? 6 : 18));
    expect(data.unattributed_receipts).toEqual([
      expect.objectContaining({ address: o.address, network, token_symbol: 'USDC', amount: five, tx_hash: wrong.txHash, reason: 'wrong_token', status: 'confirmed' }),
    ]);
    // The same through GraphQL (Order type), with the order's checkout key.
    const g = await http(gw.url, '/graphql', {
      body: { query: `query($n: String!) { order(orderNo: $n) { overpaid deposits { amountReceived } unattributedReceipts { address network tokenSymbol amount txHash reason } } }`, variables: { n: o.orderNo } },
      headers: { 'x-checkout-key': o.key },
    });
    expect(g.body.errors).toBeUndefined();
    expect(g.body.data.order).toEqual({
      overpaid: true,
      deposits: [{ amountReceived: data.deposits[0].amount_received }],
      unattributedReceipts: [{ address: o.address, network, tokenSymbol: 'USDC', amount: five, txHash: wrong.txHash, reason: 'wrong_token' }],
    });
  });
});

function formatUnits(v: bigint, decimals: number): string {
  const s = v.toString().padStart(decimals + 1, '0');
  const frac = s.slice(-decimals).replace(/0+$/, '');
  return frac ? `${s.slice(0, -decimals)}.${frac}` : s.slice(0, -decimals);
}
