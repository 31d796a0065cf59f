/**
 * The re-org scenario every chain runs (test/support/sweep-crash-scenarios.ts `sweepReorgScenario`)
 * on the EVM Disperse top-up path: an adapter without the Sweeper, so the gas tank tops the deposit up
 * and the deposit signs its own transfer (with its own nonce). The EIP-7702 batch path has its re-org
 * test in sweep-crash.test.ts ("EVM only"). A re-org on anvil: evm_snapshot once the transfer is
 * stored, evm_revert after it is included, then other (empty) blocks at the same heights.
 */
import { Interface, Wallet } from 'ethers';
import { createEvmAdapter } from '../../src/chains/evm';
import { DEPLOYER_ADDRESS, DEV_SWEEP_CONTRACTS, DEV_TOKEN_ADDRESSES, devChainNetworkConfig, startDevChains, type DevChains } from '../../src/devchain';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { sweepReorgScenario } from '../support/sweep-crash-scenarios';

const erc20 = new Interface(['function mint(address to, uint256 value)', 'function balanceOf(address) view returns (uint256)']);
const USDT = DEV_TOKEN_ADDRESSES.ETHEREUM.USDT;

let chains: DevChains;
let gw: TestGateway;
let topup: ReturnType<typeof createEvmAdapter>;

beforeAll(async () => {
  chains = await startDevChains();
  gw = await startTestGateway({ DEV_CHAINS: 'true', SANDBOX_ETHEREUM_CONFIRMATIONS: '1', ROLE: 'api' });
  topup = createEvmAdapter(devChainNetworkConfig(chains.ETHEREUM, { disperseAddress: DEV_SWEEP_CONTRACTS.disperse }));
}, 60_000);
afterAll(async () => {
  await gw?.close();
  await chains?.stop();
});

const rpc = <T>(method: string, params: unknown[] = []) => chains.ETHEREUM.rpc.call<T>(method, params);

describe('Disperse top-up path', () =>
  sweepReorgScenario({
    network: 'ETHEREUM',
    family: 'evm',
    walletType: 'METAMASK',
    app: () => gw.app,
    adapter: () => topup,
    token: () => ({ symbol: 'USDT', name: 'Tether USD (local)', address: USDT, decimals: 6 }),
    pay: (owner, amount) => rpc<string>('eth_sendTransaction', [{ from: DEPLOYER_ADDRESS, to: USDT, data: erc20.encodeFunctionData('mint', [owner, amount]), gas: '0x186a0' }]),
    tokenBalance: async (owner) => BigInt(await rpc<string>('eth_call', [{ to: USDT, data: erc20.encodeFunctionData('balanceOf', [owner]) }, 'latest'])),
    newAddress: () => Wallet.createRandom().address,
    advance: () => rpc('anvil_mine', ['0x1']),
    steps: ['plan', 'fund-sign', 'fund-broadcast', 'funded', 'send-sign', 'send-broadcast', 'sent'],
    amount: 7_000_000n,
    reorg: {
      mark: () => rpc<string>('evm_snapshot'),
      reorg: async (mark) => {
        await rpc('evm_revert', [mark]);
        await rpc('anvil_mine', ['0x3']);
      },
    },
  }));
