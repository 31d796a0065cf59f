/**
 * The watcher guards (watcher-guard-scenarios.ts) on both local EVM chains: real gateway, real
 * PostgreSQL, real anvil. The self-transfer is signed by the deposit address itself through anvil's
 * impersonation (`anvil_impersonateAccount`, gas from `anvil_setBalance`), as its owner's key would.
 */
import { Interface, toQuantity } from 'ethers';
import { CUSTOMER_PRIVATE_KEYS, DEV_TOKEN_ADDRESSES, startDevChains, type DevChains } from '../../src/devchain';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { checkout, watchOrder, type OrderWatch } from '../support/order-watch';
import { fundedCustomer, pay, WATCH_ENV, type EvmNet } from '../support/evm-harness';
import { watcherGuardScenarios } from '../support/watcher-guard-scenarios';

let chains: DevChains;
let gw: TestGateway;
let apiKey: string;
let customer: string;
const watches: OrderWatch[] = [];
const erc20 = new Interface(['function transfer(address to, uint256 value) returns (bool)']);

beforeAll(async () => {
  chains = await startDevChains();
  gw = await startTestGateway({ ...WATCH_ENV, SANDBOX_ETHEREUM_CONFIRMATIONS: '1', SANDBOX_BINANCE_CONFIRMATIONS: '1' }, { devChains: chains });
  apiKey = (await createMerchant(gw.app)).sandboxKey;
  customer = await fundedCustomer(chains, CUSTOMER_PRIVATE_KEYS[2]!);
});
afterEach(async () => {
  await Promise.all(watches.splice(0).map((w) => w.close()));
});
afterAll(async () => {
  await gw?.close();
  await chains?.stop();
});

describe.each(['ETHEREUM', 'BINANCE'] as EvmNet[])('%s', (network) => {
  const chain = () => chains[network];
  const token = DEV_TOKEN_ADDRESSES[network].USDT;

  watcherGuardScenarios({
    app: () => gw.app,
    async newOrder(amountIdr = '150000') {
      const d = await checkout(gw.url, apiKey, { amountIdr, tokenAddress: token, network, walletType: 'METAMASK' });
      const watch = watchOrder(gw.url, { key: d.key }, d.orderNo);
      watches.push(watch);
      await watch.until('Created');
      return { ...d, watch };
    },
    pay: async (to, amount) => (await pay(chain(), customer, to, amount)).txHash,
    makeFinal: () => undefined, // one confirmation: mined is final here
    async selfPay(address, amount) {
      await chain().rpc.call('anvil_impersonateAccount', [address]);
      await chain().rpc.call('anvil_setBalance', [address, toQuantity(10n ** 18n)]);
      const hash = await chain().rpc.call<string>('eth_sendTransaction', [
        { from: address, to: token, data: erc20.encodeFunctionData('transfer', [address, amount]) },
      ]);
      const receipt = await chain().provider.waitForTransaction(hash, 1, 15_000);
      if (receipt?.status !== 1) throw new Error(`self-transfer ${hash} failed`);
      await chain().rpc.call('anvil_stopImpersonatingAccount', [address]);
      return hash;
    },
  });
});
