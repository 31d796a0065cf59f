/**
 * Refund crash safety with the BUILT worker on ETHEREUM and BINANCE (anvil): the kill scenarios every chain runs (test/support/refund-kill-scenarios.ts) — the worker dies
 * right after each refund-engine step (the gas tank's top-up of the source signed and stored, then
 * broadcast; the transfer signed and stored, then broadcast; its block recorded), and once from a real
 * `kill -9` — for an overpayment's excess, a wrong-token (USDC) receipt and a partial refund of a swept
 * order from the merchant's refund wallet; then the built CLI's reconcile finds no mismatch.
 *
 * The chains are the dev chains (`startDevChains`: tokens, Disperse) given the testnet chain ids the
 * sandbox expects without DEV_CHAINS (Sepolia, BSC testnet), as an operator would run on testnets.
 * BINANCE's stand-in tokens keep mainnet's 18 decimals and its chain prices gas the legacy way: the
 * case that found the sweep's top-up quoted 72 gas short of the real transfer (`amountCalldataMargin`).
 */
import { getAddress, id as topicOf, Interface, toQuantity, Wallet, zeroPadValue } from 'ethers';
import {
  CUSTOMER_PRIVATE_KEYS,
  DEPLOYER_ADDRESS,
  DEV_SWEEP_CONTRACTS,
  DEV_TOKEN_ADDRESSES,
  DEV_TOKENS,
  startDevChains,
  type DevChains,
} from '../../src/devchain';
import type { RefundStep } from '../../src/modules/refunds/refund.engine';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { placeOrder, type EvmNet } from '../support/evm-harness';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { requireDist, CLI_JS } from '../support/process';
import { refundKillScenarios, type RefundKillChain, type TokenRole } from '../support/refund-kill-scenarios';
import { KILL_TANK_MNEMONIC } from '../support/sweep-kill-scenarios';

/** The chain ids the sandbox signs for without DEV_CHAINS (Sepolia, BSC testnet). */
const CHAIN_IDS: Record<EvmNet, number> = { ETHEREUM: 11155111, BINANCE: 97 };
const erc20 = new Interface([
  'function transfer(address to, uint256 value)',
  'function mint(address to, uint256 value)',
  'function balanceOf(address) view returns (uint256)',
]);
const TRANSFER_TOPIC = topicOf('Transfer(address,address,uint256)');
/** The stand-ins keep mainnet's decimals: 6 on ETHEREUM, 18 on BINANCE. */
const decimalsOf = (network: EvmNet) => DEV_TOKENS[network][0]!.decimals;
const STEPS: RefundStep[] = ['fund-sign', 'fund-broadcast', 'send-sign', 'send-broadcast', 'sent'];

let chains: DevChains;
let db: TestDatabase;
let api: TestGateway;

const customer = new Wallet(CUSTOMER_PRIVATE_KEYS[0]!);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function evmChain(network: EvmNet): RefundKillChain {
  const rpc = <T>(method: string, params: unknown[] = []) => chains[network].rpc.call<T>(method, params);
  const tokenOf = (t: TokenRole = 'main') => DEV_TOKEN_ADDRESSES[network][t === 'main' ? 'USDT' : 'USDC'];
  async function receipt(hash: string): Promise<{ status: string }> {
    for (let i = 0; i < 400; i++) {
      const r = await rpc<{ status: string } | null>('eth_getTransactionReceipt', [hash]);
      if (r) return r;
      await sleep(25);
    }
    throw new Error(`no receipt for ${hash}`);
  }
  return {
    network,
    workerEnv: () => ({
      [`SANDBOX_${network}_RPC_URLS`]: chains[network].rpcUrl,
      [`SANDBOX_${network}_CONFIRMATIONS`]: '1',
      [`SANDBOX_${network}_DISPERSE_ADDRESS`]: DEV_SWEEP_CONTRACTS.disperse,
    }),
    async newOrder(m) {
      const o = await placeOrder(api.url, api.app, m, network);
      return { orderId: o.orderId, orderNo: o.orderNo, depositId: o.depositId, address: o.address, total: o.total };
    },
    /** The customer's wallet sends the token (signed here for the chain's id: anvil's own signer keeps the old one). */
    async pay(to, amount, token) {
      const [nonce, gasPrice] = await Promise.all([rpc<string>('eth_getTransactionCount', [customer.address, 'pending']), rpc<string>('eth_gasPrice')]);
      const raw = await customer.signTransaction({
        type: 0,
        chainId: CHAIN_IDS[network],
        nonce: Number(BigInt(nonce)),
        to: tokenOf(token),
        data: erc20.encodeFunctionData('transfer', [to, amount]),
        gasLimit: 100_000n,
        // at the node's price: a higher one would raise what a base-fee-0 chain (BSC) quotes next
        gasPrice: BigInt(gasPrice),
      });
      const r = await receipt(await rpc<string>('eth_sendRawTransaction', [raw]));
      if (r.status !== '0x1') throw new Error(`payment to ${to} reverted`);
    },
    advance: () => rpc('anvil_mine', ['0x1']),
    tokenBalance: async (owner, token) =>
      BigInt(await rpc<string>('eth_call', [{ to: tokenOf(token), data: erc20.encodeFunctionData('balanceOf', [owner]) }, 'latest'])),
    async transfersFrom(from, token) {
      const logs = await rpc<{ topics: string[]; data: string }[]>('eth_getLogs', [
        { address: tokenOf(token), fromBlock: '0x0', toBlock: 'latest', topics: [TRANSFER_TOPIC, zeroPadValue(from, 32)] },
      ]);
      return logs.map((l) => ({ to: getAddress(`0x${l.topics[2]!.slice(26)}`), amount: BigInt(l.data) }));
    },
    newAddress: () => Wallet.createRandom().address,
    steps: STEPS,
    unit: 10n ** BigInt(decimalsOf(network) - 6),
  };
}

beforeAll(async () => {
  requireDist();
  requireDist(CLI_JS);
  chains = await startDevChains();
  db = await createTestDatabase();
  api = await startTestGateway(
    { ROLE: 'api', GAS_TANK_MNEMONIC_SANDBOX: KILL_TANK_MNEMONIC, FALLBACK_RATE_USDT_IDR: '16250', FALLBACK_RATE_USDC_IDR: '16250' },
    { db },
  );
  for (const network of ['ETHEREUM', 'BINANCE'] as const) {
    const rpc = <T>(method: string, params: unknown[] = []) => chains[network].rpc.call<T>(method, params);
    // Without DEV_CHAINS the sandbox's tokens are the testnet ones: this chain's are added like an operator would.
    for (const symbol of ['USDT', 'USDC'] as const) {
      await api.app.tokens.upsert(api.app.orm.em.fork(), {
        environment: 'sandbox',
        network,
        symbol,
        name: `${symbol} (local)`,
        address: DEV_TOKEN_ADDRESSES[network][symbol],
        decimals: decimalsOf(network),
      });
      await rpc('eth_sendTransaction', [
        { from: DEPLOYER_ADDRESS, to: DEV_TOKEN_ADDRESSES[network][symbol], data: erc20.encodeFunctionData('mint', [customer.address, 10n ** 30n]) },
      ]);
    }
    // The testnet's own token contracts do not exist on this chain: the operator deactivates them (reconciliation reads every active token).
    await api.app.orm.em
      .fork()
      .getConnection()
      .execute(`update tokens set active = false where environment = 'sandbox' and network = ? and profile = 'testnet' and address <> all(?::text[])`, [
        network,
        `{${Object.values(DEV_TOKEN_ADDRESSES[network]).join(',')}}`,
      ]);
    await rpc('anvil_setBalance', [api.app.gasTanks.address('sandbox', network)!, toQuantity(10n ** 21n)]);
    await rpc('anvil_setBalance', [customer.address, toQuantity(10n ** 21n)]);
    await rpc('anvil_mine', ['0x1']);
    // Last: anvil's unlocked accounts keep signing for the old id, so the customer signs here from now on.
    await rpc('anvil_setChainId', [CHAIN_IDS[network]]);
  }
}, 180_000);

afterAll(async () => {
  await api?.close();
  await chains?.stop();
});

refundKillScenarios({
  api: () => api,
  chains: [evmChain('ETHEREUM'), evmChain('BINANCE')],
  cliEnv: () => ({ SANDBOX_ETHEREUM_RPC_URLS: chains.ETHEREUM.rpcUrl }),
});
