/**
 * Provider drill on the EVM networks: each network's watcher has two providers, both real
 * HTTP proxies in front of the local chains — the first serves ANOTHER chain (the other EVM network,
 * refused by chain id), the second is honest but is put through every failure mode in turn: quota
 * answers (HTTP 429 with and without Retry-After, JSON-RPC -32005 in a 200), a sustained
 * requests-per-second limit, `eth_getLogs` span and result-count limits, 5xx, resets, a frozen node,
 * cut, malformed and trickling bodies, a lagging node, two nodes at different heights behind one URL.
 * Push is on (the proxies relay WebSocket to their upstream). One gateway for both networks. See test/support/provider-drill.ts for what is asserted.
 */
import { CUSTOMER_PRIVATE_KEYS, startDevChains, type DevChains } from '../../src/devchain';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { fundedCustomer, pay, payMany, placeOrder, WATCH_ENV, type EvmNet, type Merchant } from '../support/evm-harness';
import { DRILL_MODES, EVM_ONLY_MODES, providerDrill } from '../support/provider-drill';
import { startProviderProxy, type ProviderProxy } from '../support/provider-proxy';

jest.setTimeout(900_000);

// The common modes, with EVM's eth_getLogs limits after the rate limits.
const MODES = [...DRILL_MODES.slice(0, 4), ...EVM_ONLY_MODES, ...DRILL_MODES.slice(4)];

let chains: DevChains;
let gw: TestGateway;
let m: Merchant;
const wrong = {} as Record<EvmNet, ProviderProxy>;
const flaky = {} as Record<EvmNet, ProviderProxy>;
const customers = {} as Record<EvmNet, string>;

beforeAll(async () => {
  chains = await startDevChains();
  wrong.ETHEREUM = await startProviderProxy(chains.BINANCE.rpcUrl);
  wrong.BINANCE = await startProviderProxy(chains.ETHEREUM.rpcUrl);
  flaky.ETHEREUM = await startProviderProxy(chains.ETHEREUM.rpcUrl);
  flaky.BINANCE = await startProviderProxy(chains.BINANCE.rpcUrl);
  gw = await startTestGateway(
    // Push is on: each proxy relays WebSocket to its upstream (derived push URLs, one per provider);
    // the wrong-chain provider's socket is never subscribed (refused with its RPC provider, or by its
    // own answers over the socket), so it still sees identity questions only.
    {
      ...WATCH_ENV,
      RPC_TIMEOUT_MS: '3000',
      WATCH_LOCK_MS: '8000',
      SANDBOX_ETHEREUM_CONFIRMATIONS: '1',
      SANDBOX_BINANCE_CONFIRMATIONS: '1',
    },
    {
      devChains: chains,
      rpcOverrides: { 'sandbox:ETHEREUM': [wrong.ETHEREUM.url, flaky.ETHEREUM.url], 'sandbox:BINANCE': [wrong.BINANCE.url, flaky.BINANCE.url] },
    },
  );
  m = await createMerchant(gw.app);
  customers.ETHEREUM = await fundedCustomer(chains, CUSTOMER_PRIVATE_KEYS[4]!);
  customers.BINANCE = await fundedCustomer(chains, CUSTOMER_PRIVATE_KEYS[3]!);
});
afterAll(async () => {
  await gw?.close();
  await Promise.all([...Object.values(wrong), ...Object.values(flaky)].map((p) => p.close()));
  await chains?.stop();
});

for (const network of ['ETHEREUM', 'BINANCE'] as EvmNet[]) {
  describe(network, () => {
    providerDrill({
      network,
      app: () => gw.app,
      flaky: () => flaky[network],
      wrong: () => wrong[network],
      newOrder: () => placeOrder(gw.url, gw.app, m, network),
      pay: async (o) => void (await pay(chains[network], customers[network], o.address, o.total)),
      payMany: (orders) =>
        payMany(
          chains[network],
          customers[network],
          orders.map((o) => ({ to: o.address, amount: o.total })),
        ),
      modes: MODES,
    });
    it(`${network}: push was on through the honest provider; the wrong-chain provider's socket was never subscribed`, () => {
      expect(flaky[network].socketMethods).toContain('eth_subscribe');
      expect(wrong[network].socketMethods.filter((m) => m === 'eth_subscribe')).toEqual([]);
    });
  });
}
