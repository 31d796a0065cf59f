/**
 * Another chain behind the same URL: the dev chains are restarted fresh while the database
 * keeps the old cursor. The watcher knows which chain it watches (chain id + genesis hash, stored
 * with the cursor): the new chain is a new chain identity, never a reorg of the old one. Paid orders
 * stay Success with no reorg event (no `transaction.reorged` / `transaction.underpaid` webhook), and a
 * payment on the new chain at a height below the old cursor is credited.
 *
 * Each network's watcher reaches its chain through a provider proxy (real HTTP) whose upstream is
 * switched from the first set of dev chains to a freshly started second set.
 */
import { CUSTOMER_PRIVATE_KEYS, startDevChains, type DevChains } from '../../src/devchain';
import { toQuantity } from '../../src/chains/evm/evm.rpc';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import {
  eventsOf,
  eventually,
  fundedCustomer,
  headOf,
  orderStatus,
  pay,
  paymentsOf,
  placeOrder,
  sleep,
  sql,
  waitForStatus,
  WATCH_ENV,
  type EvmNet,
  type Merchant,
} from '../support/evm-harness';
import { startProviderProxy, type ProviderProxy } from '../support/provider-proxy';

jest.setTimeout(240_000);

let first: DevChains;
let second: DevChains;
let gw: TestGateway;
let m: Merchant;
const proxies = {} as Record<EvmNet, ProviderProxy>;

beforeAll(async () => {
  [first, second] = await Promise.all([startDevChains(), startDevChains()]);
  proxies.ETHEREUM = await startProviderProxy(first.ETHEREUM.rpcUrl);
  proxies.BINANCE = await startProviderProxy(first.BINANCE.rpcUrl);
  gw = await startTestGateway(
    {
      ...WATCH_ENV,
      SANDBOX_ETHEREUM_CONFIRMATIONS: '1',
      SANDBOX_BINANCE_CONFIRMATIONS: '1',
      REORG_RECHECK_INTERVAL_MS: '300',
      CHAIN_IDENTITY_RECHECK_MS: '2000',
    },
    { devChains: first, rpcOverrides: { 'sandbox:ETHEREUM': [proxies.ETHEREUM.url], 'sandbox:BINANCE': [proxies.BINANCE.url] } },
  );
  m = await createMerchant(gw.app);
});
afterAll(async () => {
  await gw?.close();
  await Promise.all(Object.values(proxies).map((p) => p.close()));
  await Promise.all([first?.stop(), second?.stop()]);
});

const cursorOf = async (network: EvmNet) =>
  (
    await sql<{ block_number: string; chain_id: string | null; genesis_hash: string | null }>(
      gw.app,
      `select block_number::text, chain_id, genesis_hash from chain_cursors where environment = 'sandbox' and network = ?`,
      [network],
    )
  )[0];
const genesisOf = async (chains: DevChains, network: EvmNet) => (await chains[network].rpc.call<{ hash: string }>('eth_getBlockByNumber', ['0x0', false])).hash;

describe.each(['ETHEREUM', 'BINANCE'] as EvmNet[])('%s', (network) => {
  it('a fresh dev chain behind the same URL: earlier payments keep their status, no reorg; a payment below the old cursor is credited', async () => {
    // On the first chain: an order paid, then the chain grows well past it (the cursor follows).
    // an anvil account (holds the native coin for gas on both chains)
    const key = CUSTOMER_PRIVATE_KEYS[network === 'ETHEREUM' ? 2 : 3]!;
    const customer = await fundedCustomer(first, key);
    const before = await placeOrder(gw.url, gw.app, m, network);
    await pay(first[network], customer, before.address, before.total);
    await waitForStatus(gw.url, m, before.orderNo, 'Success', 60_000);
    await first[network].rpc.call('anvil_mine', [toQuantity(80n), '0x0']);
    const oldHead = await headOf(first[network]);
    await eventually(async () => BigInt((await cursorOf(network))!.block_number) >= oldHead, 'the cursor to reach the first chain head', 60_000);
    const oldCursor = await cursorOf(network);
    expect(oldCursor!.genesis_hash).toBe(await genesisOf(first, network));
    const eventsBefore = await eventsOf(gw.app, before.orderId);

    // The dev chain is restarted fresh: the same URL now serves a new chain, far below the old cursor.
    proxies[network].upstream = second[network].rpcUrl;
    const customer2 = await fundedCustomer(second, key);
    const after = await placeOrder(gw.url, gw.app, m, network);
    const sent = await pay(second[network], customer2, after.address, after.total);
    expect(sent.blockNumber).toBeLessThan(BigInt(oldCursor!.block_number));
    await waitForStatus(gw.url, m, after.orderNo, 'Success', 90_000);
    expect(await paymentsOf(gw.app, after.orderId)).toEqual([
      expect.objectContaining({ tx_hash: sent.txHash, block_number: sent.blockNumber.toString(), status: 'confirmed' }),
    ]);
    const cursor = await cursorOf(network);
    expect(cursor!.genesis_hash).toBe(await genesisOf(second, network));
    expect(cursor!.genesis_hash).not.toBe(oldCursor!.genesis_hash);

    // The new chain grows past the old cursor (where the old watcher called every earlier block
    // "reorganised away"), and the confirmed blocks are re-checked many times meanwhile.
    await second[network].rpc.call('anvil_mine', [toQuantity(BigInt(oldCursor!.block_number) + 20n), '0x0']);
    const newHead = await headOf(second[network]);
    await eventually(async () => BigInt((await cursorOf(network))!.block_number) >= newHead, 'the cursor to pass the old one on the new chain', 90_000);
    await sleep(2000); // several re-checks of confirmed blocks (every 300 ms)

    expect(await orderStatus(gw.url, m, before.orderNo)).toBe('Success');
    expect((await paymentsOf(gw.app, before.orderId)).map((p) => p.status)).toEqual(['confirmed']);
    expect(await eventsOf(gw.app, before.orderId)).toEqual(eventsBefore);
    expect(await orderStatus(gw.url, m, after.orderNo)).toBe('Success');
    const reorgEvents = await sql<{ n: string }>(
      gw.app,
      `select count(*)::text as n from order_events where order_id in (?, ?) and (type = 'payment.reorged' or to_status = 'Underpaid')`,
      [before.orderId, after.orderId],
    );
    expect(reorgEvents[0]!.n).toBe('0');
    const hooks = await sql<{ n: string }>(gw.app, `select count(*)::text as n from order_events where order_id = ? and to_status = 'Success'`, [
      after.orderId,
    ]);
    expect(hooks[0]!.n).toBe('1');
  });
});
