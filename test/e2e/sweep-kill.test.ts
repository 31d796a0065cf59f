/**
 * Crash safety with the BUILT worker on ETHEREUM (anvil): the kill scenarios every chain runs
 * (test/support/sweep-kill-scenarios.ts) — the worker dies right after each sweep step, and once from a
 * real `kill -9` — on both EVM gas paths, chosen by the worker's configuration: the EIP-7702 batch (a
 * Sweeper for the tank) and the Disperse top-up (no Sweeper). Besides the shared checks, the gas tank's
 * nonces: every included tank transaction has its own nonce, they run 0…n-1 without a gap across all
 * steps of both paths on the one chain, and the chain's nonce equals the engine's next one (so later
 * sweeps — the next step's — still go through).
 *
 * The chain is the dev chain (`startDevChains`: tokens, Disperse) given the Sepolia chain id the
 * sandbox expects without DEV_CHAINS, with a Sweeper deployed for the tank of
 * `GAS_TANK_MNEMONIC_SANDBOX` — what an operator does on a real testnet.
 */
import { AbiCoder, getAddress, id as topicOf, Interface, toQuantity, Wallet, zeroPadValue } from 'ethers';
import {
  compileSweepContracts,
  CUSTOMER_PRIVATE_KEYS,
  DEPLOYER_ADDRESS,
  DEV_SWEEP_CONTRACTS,
  DEV_TOKEN_ADDRESSES,
  startDevChains,
  type DevChain,
  type DevChains,
} from '../../src/devchain';
import type { SweepStep } from '../../src/modules/sweeps/sweep.engine';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { placeOrder, sql } from '../support/evm-harness';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { requireDist } from '../support/process';
import { KILL_TANK_MNEMONIC, sweepKillScenarios } from '../support/sweep-kill-scenarios';

/** The chain id the sandbox signs for on ETHEREUM without DEV_CHAINS (Sepolia). */
const SEPOLIA = 11155111;
const erc20 = new Interface([
  'function transfer(address to, uint256 value)',
  'function mint(address to, uint256 value)',
  'function balanceOf(address) view returns (uint256)',
]);
const TRANSFER_TOPIC = topicOf('Transfer(address,address,uint256)');
const USDT = DEV_TOKEN_ADDRESSES.ETHEREUM.USDT;

type Path = 'batch' | 'topup';
/** The steps each path goes through (the batch path has no funding transaction: planned → funded directly). */
const STEPS: Record<Path, SweepStep[]> = {
  batch: ['plan', 'funded', 'send-sign', 'send-broadcast', 'sent'],
  topup: ['plan', 'fund-sign', 'fund-broadcast', 'funded', 'send-sign', 'send-broadcast', 'sent'],
};

let chains: DevChains;
let eth: DevChain;
let db: TestDatabase;
let api: TestGateway;
let tank: string;
let sweeper: string;

const customer = new Wallet(CUSTOMER_PRIVATE_KEYS[0]!);
const rpc = <T>(method: string, params: unknown[] = []) => eth.rpc.call<T>(method, params);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function receipt(hash: string): Promise<{ contractAddress: string | null; status: string }> {
  for (let i = 0; i < 200; i++) {
    const r = await rpc<{ contractAddress: string | null; status: string } | null>('eth_getTransactionReceipt', [hash]);
    if (r) return r;
    await sleep(25);
  }
  throw new Error(`no receipt for ${hash}`);
}

/** The customer's wallet pays (signed here for the chain's id, EIP-1559). */
async function pay(to: string, amount: bigint): Promise<void> {
  const [nonce, tip, block] = await Promise.all([
    rpc<string>('eth_getTransactionCount', [customer.address, 'pending']),
    rpc<string>('eth_maxPriorityFeePerGas'),
    rpc<{ baseFeePerGas: string }>('eth_getBlockByNumber', ['latest', false]),
  ]);
  const raw = await customer.signTransaction({
    type: 2,
    chainId: SEPOLIA,
    nonce: Number(BigInt(nonce)),
    to: USDT,
    data: erc20.encodeFunctionData('transfer', [to, amount]),
    gasLimit: 100_000n,
    maxPriorityFeePerGas: BigInt(tip),
    maxFeePerGas: BigInt(block.baseFeePerGas) * 2n + BigInt(tip),
  });
  const r = await receipt(await rpc<string>('eth_sendRawTransaction', [raw]));
  if (r.status !== '0x1') throw new Error(`payment to ${to} reverted`);
}

beforeAll(async () => {
  requireDist();
  chains = await startDevChains();
  eth = chains.ETHEREUM;
  db = await createTestDatabase();
  api = await startTestGateway(
    { ROLE: 'api', GAS_TANK_MNEMONIC_SANDBOX: KILL_TANK_MNEMONIC, FALLBACK_RATE_USDT_IDR: '16250', FALLBACK_RATE_USDC_IDR: '16250' },
    { db },
  );
  // Without DEV_CHAINS the sandbox's ETHEREUM tokens are the testnet ones: this chain's USDT is added like an operator would.
  await api.app.tokens.upsert(api.app.orm.em.fork(), {
    environment: 'sandbox',
    network: 'ETHEREUM',
    symbol: 'USDT',
    name: 'Tether USD (local)',
    address: USDT,
    decimals: 6,
  });
  tank = api.app.gasTanks.address('sandbox', 'ETHEREUM')!;
  // The operator's Sweeper for this tank (`gas-tank deploy-sweeper` does the same), and the tank funded.
  const { sweeper: compiled } = compileSweepContracts();
  const hash = await rpc<string>('eth_sendTransaction', [
    { from: DEPLOYER_ADDRESS, gas: toQuantity(3_000_000n), data: compiled.bytecode + AbiCoder.defaultAbiCoder().encode(['address'], [tank]).slice(2) },
  ]);
  sweeper = getAddress((await receipt(hash)).contractAddress!);
  await rpc('anvil_setBalance', [tank, toQuantity(10n ** 21n)]);
  // The customer holds plenty of USDT.
  await receipt(
    await rpc<string>('eth_sendTransaction', [{ from: DEPLOYER_ADDRESS, to: USDT, data: erc20.encodeFunctionData('mint', [customer.address, 10n ** 15n]) }]),
  );
  // Last: anvil's unlocked accounts keep signing for the old id, so the customer signs here from now on.
  await rpc('anvil_setChainId', [SEPOLIA]);
}, 120_000);

afterAll(async () => {
  await api?.close();
  await chains?.stop();
});

const tokenBalance = async (owner: string) =>
  BigInt(await rpc<string>('eth_call', [{ to: USDT, data: erc20.encodeFunctionData('balanceOf', [owner]) }, 'latest']));

/** Every token Transfer out of `from` on the whole chain. */
async function transfersFrom(from: string): Promise<{ to: string; amount: bigint }[]> {
  const logs = await rpc<{ topics: string[]; data: string }[]>('eth_getLogs', [
    { address: USDT, fromBlock: '0x0', toBlock: 'latest', topics: [TRANSFER_TOPIC, zeroPadValue(from, 32)] },
  ]);
  return logs.map((l) => ({ to: getAddress(`0x${l.topics[2]!.slice(26)}`), amount: BigInt(l.data) }));
}

/** The tank's nonces: one included transaction each, 0…n-1 without a gap, and the chain agrees with the engine's next one. */
async function expectNoNonceGap(): Promise<void> {
  const used = await sql<{ nonce: string; n: number }>(
    api.app,
    `select nonce::text, count(*)::int as n from sweep_txs where signer = ? and state = 'included' group by nonce order by sweep_txs.nonce`,
    [tank],
  );
  expect(used.every((u) => u.n === 1)).toBe(true);
  expect(used.map((u) => Number(u.nonce))).toEqual(used.map((_, i) => i));
  const chainNonce = Number(BigInt(await rpc<string>('eth_getTransactionCount', [tank, 'latest'])));
  const [next] = await sql<{ next_nonce: string }>(api.app, `select next_nonce::text from signer_nonces where signer = ?`, [tank]);
  expect(chainNonce).toBe(used.length);
  expect(Number(next!.next_nonce)).toBe(chainNonce);
}

describe.each(['batch', 'topup'] as Path[])('%s path', (path) => {
  sweepKillScenarios({
    network: 'ETHEREUM',
    api: () => api,
    workerEnv: () => ({
      SANDBOX_ETHEREUM_RPC_URLS: eth.rpcUrl,
      SANDBOX_ETHEREUM_CONFIRMATIONS: '1',
      SANDBOX_ETHEREUM_DISPERSE_ADDRESS: DEV_SWEEP_CONTRACTS.disperse,
      // set → EIP-7702 batches paid by the tank; unset → Disperse top-up, then one transfer per deposit
      SANDBOX_ETHEREUM_SWEEPER_ADDRESS: path === 'batch' ? sweeper : undefined,
    }),
    async newOrder(m) {
      const o = await placeOrder(api.url, api.app, m, 'ETHEREUM');
      return { orderId: o.orderId, depositId: o.depositId, address: o.address, total: o.total };
    },
    pay,
    // automine only mines with transactions; confirmations need blocks
    advance: () => rpc('anvil_mine', ['0x1']),
    tokenBalance,
    transfersFrom,
    newAddress: () => Wallet.createRandom().address,
    steps: STEPS[path],
    afterSwept: expectNoNonceGap,
  });
});
