/**
 * Sweeps on both local EVM chains, end to end: a merchant's order is paid on anvil, the worker's
 * sweep job (Agenda) moves the deposit's whole balance to the merchant's settlement address in the
 * tank's EIP-7702 batch transaction. The scenarios are the ones every chain runs
 * (`test/support/sweep-scenarios.ts`); what only EVM has (one dev tank key on both chains, the
 * operators' `gasTanks` query over it) stays here. Nothing mocked: real gateway, PostgreSQL, anvil.
 */
import { Wallet } from 'ethers';
import { watchedNetworks } from '../../src/chains/networks';
import {
  balanceOf,
  CUSTOMER_PRIVATE_KEYS,
  DEV_GAS_TANK_EVM_ADDRESS,
  DEV_SWEEP_CONTRACTS,
  DEV_TOKEN_ADDRESSES,
  startDevChains,
  type DevChains,
} from '../../src/devchain';
import { http } from '../support/http';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { DECIMALS, eventually, fundedCustomer, pay, placeOrder, WATCH_ENV, type EvmNet } from '../support/evm-harness';
import { sweepScenarios } from '../support/sweep-scenarios';

let chains: DevChains;
let gw: TestGateway;
let customer: string;
const OPERATOR_TOKEN = 'operator-token-for-sweep-tests-0123456789';

beforeAll(async () => {
  chains = await startDevChains();
  gw = await startTestGateway(
    { ...WATCH_ENV, SANDBOX_ETHEREUM_CONFIRMATIONS: '2', SANDBOX_BINANCE_CONFIRMATIONS: '2', SWEEP_POLL_MS: '200', WATCH_RUN_MS: '4000', OPERATOR_TOKEN },
    { devChains: chains },
  );
  customer = await fundedCustomer(chains, CUSTOMER_PRIVATE_KEYS[0]!);
}, 120_000);
afterAll(async () => {
  await gw?.close();
  await chains?.stop();
});

describe.each(['ETHEREUM', 'BINANCE'] as EvmNet[])('%s', (network) => {
  const chain = () => chains[network];
  const token = DEV_TOKEN_ADDRESSES[network].USDT;
  const setTankBalance = (wei: bigint) => chain().rpc.call('anvil_setBalance', [DEV_GAS_TANK_EVM_ADDRESS, `0x${wei.toString(16)}`]);

  sweepScenarios({
    network,
    app: () => gw.app,
    async newOrder(m) {
      const o = await placeOrder(gw.url, gw.app, m, network);
      return { orderId: o.orderId, depositId: o.depositId, address: o.address, total: o.total };
    },
    pay: (to, amount) => pay(chain(), customer, to, amount),
    // automine: every transfer is in its own block; 3 more pass both the payments' and the sweeps' depth (2).
    makeFinal: () => chain().rpc.call('anvil_mine', ['0x3']),
    newAddress: () => Wallet.createRandom().address,
    tokenBalance: (owner) => balanceOf(chain(), token, owner),
    async emptyTank() {
      const held = BigInt(await chain().rpc.call<string>('eth_getBalance', [DEV_GAS_TANK_EVM_ADDRESS, 'latest']));
      await setTankBalance(0n);
      return async () => void (await setTankBalance(held));
    },
    unit: 10n ** BigInt(DECIMALS[network]),
    txHash: /^0x[0-9a-f]{64}$/,
    target: () =>
      watchedNetworks(gw.app.config, { [`sandbox:${network}`]: [chain().rpcUrl] }, { localSweepContracts: DEV_SWEEP_CONTRACTS }).find(
        (t) => t.environment === 'sandbox' && t.network === network,
      )!,
    payWrongToken: async (to, amount) => (await pay(chain(), customer, to, amount, 'USDC')).txHash,
    native: {
      async send(to, amount) {
        const wallet = new Wallet(customer, chain().provider);
        const gas = network === 'BINANCE' ? { type: 0, gasPrice: BigInt(await chain().rpc.call<string>('eth_gasPrice', [])) } : {};
        const receipt = await (await wallet.sendTransaction({ to, value: amount, ...gas })).wait();
        if (receipt?.status !== 1) throw new Error('native transfer failed');
      },
      balance: async (owner) => BigInt(await chain().rpc.call<string>('eth_getBalance', [owner, 'latest'])),
      worth: 10n ** 16n, // 0.01 ETH/BNB: a transfer costs 21,000 gas at a few gwei
      dust: 10n ** 9n,
    },
  });
});

it('operators see every gas tank (address, balance, low) with the operator token; nobody else does', async () => {
  const query = (token?: string) =>
    http(gw.url, '/graphql', {
      body: { query: 'query { gasTanks { environment network address balance lowThreshold low needed checkedAt } }' },
      headers: token ? { 'x-operator-token': token } : {},
    });
  const denied = await query();
  expect(denied.body.errors[0].extensions.code).toBe('FORBIDDEN');
  await eventually(async () => (await query(OPERATOR_TOKEN)).body.data.gasTanks.length === 2, 'both EVM tanks checked', 30_000);
  await eventually(async () => (await query(OPERATOR_TOKEN)).body.data.gasTanks.every((t: { low: boolean }) => !t.low), 'both EVM tanks refilled', 30_000);
  const { gasTanks } = (await query(OPERATOR_TOKEN)).body.data;
  expect(gasTanks.map((t: { network: string }) => t.network).sort()).toEqual(['BINANCE', 'ETHEREUM']);
  for (const t of gasTanks) {
    expect(t).toEqual(expect.objectContaining({ environment: 'SANDBOX', address: DEV_GAS_TANK_EVM_ADDRESS, low: false }));
    expect(BigInt(t.balance)).toBeGreaterThan(BigInt(t.lowThreshold));
  }
}, 60_000);
