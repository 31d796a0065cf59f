import { AbiCoder, computeAddress, getAddress, getCreateAddress, Interface, JsonRpcProvider, Network as EthersNetwork, Wallet } from 'ethers';
import type { ChainNetworkConfig, WatchedToken } from '../chains/chain-adapter.js';
import { EvmRpcClient, toQuantity } from '../chains/evm/evm.rpc.js';
import { startAnvil, type AnvilInstance } from './anvil.js';
import { DEV_GAS_TANK_EVM_ADDRESS } from './dev-keys.js';
import { compileContractFile, compileTestToken, type CompileResult } from './solc.js';

/** anvil's built-in dev accounts come from this mnemonic; anvil unlocks them for eth_sendTransaction. */
export const ANVIL_DEV_MNEMONIC = 'test test test test test test test test test test test junk';

/** Private keys of anvil accounts 0–5 (public knowledge: never use them outside local chains). */
export const ANVIL_DEV_KEYS = [
  '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
  '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
  '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a',
  '0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6',
  '0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a',
  '0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba',
] as const;

/** Account 0 deploys the tokens (and mints); keep it out of tests' customer traffic so its nonces stay predictable. */
export const DEPLOYER_PRIVATE_KEY = ANVIL_DEV_KEYS[0];
export const DEPLOYER_ADDRESS = computeAddress(DEPLOYER_PRIVATE_KEY);

/** Accounts 1–5: funded with 10,000 native coins each; stand-ins for customers' wallets (and a future faucet). */
export const CUSTOMER_PRIVATE_KEYS: readonly string[] = ANVIL_DEV_KEYS.slice(1);

export type DevNetwork = 'ETHEREUM' | 'BINANCE';
export type DevTokenSymbol = 'USDT' | 'USDC';

export const DEV_CHAIN_IDS: Record<DevNetwork, number> = { ETHEREUM: 31337, BINANCE: 31338 };

export interface DevTokenSpec extends WatchedToken {
  symbol: DevTokenSymbol;
  name: string;
  /** Deployer nonce it is created at on a fresh chain: fixes its address. */
  nonce: number;
}

const tokenSpec = (symbol: DevTokenSymbol, name: string, decimals: number, nonce: number): DevTokenSpec => ({
  symbol,
  name,
  decimals,
  nonce,
  address: getCreateAddress({ from: DEPLOYER_ADDRESS, nonce }),
});

/** Token registry seed for the dev chains: same order, same deployer, so the same addresses on every start. */
export const DEV_TOKENS: Record<DevNetwork, readonly DevTokenSpec[]> = {
  // mainnet Ethereum USDT/USDC have 6 decimals, BSC's have 18: the stand-ins keep that difference
  ETHEREUM: [tokenSpec('USDT', 'Tether USD (dev)', 6, 0), tokenSpec('USDC', 'USD Coin (dev)', 6, 1)],
  BINANCE: [tokenSpec('USDT', 'Tether USD (dev BSC)', 18, 0), tokenSpec('USDC', 'USD Coin (dev BSC)', 18, 1)],
};

export const DEV_TOKEN_ADDRESSES: Record<DevNetwork, Record<DevTokenSymbol, string>> = {
  ETHEREUM: { USDT: DEV_TOKENS.ETHEREUM[0]!.address, USDC: DEV_TOKENS.ETHEREUM[1]!.address },
  BINANCE: { USDT: DEV_TOKENS.BINANCE[0]!.address, USDC: DEV_TOKENS.BINANCE[1]!.address },
};

export { DEV_GAS_TANK_EVM_ADDRESS, DEV_GAS_TANK_EVM_KEY } from './dev-keys.js';

/** Sweep contracts on each dev chain, deployed after the tokens by the same deployer: fixed addresses. */
export const DEV_SWEEP_CONTRACTS = {
  /** `src/chains/evm/contracts/Disperse.sol`, deployer nonce 2. */
  disperse: getCreateAddress({ from: DEPLOYER_ADDRESS, nonce: 2 }),
  /** `src/chains/evm/contracts/Sweeper.sol` for `DEV_GAS_TANK_EVM_ADDRESS`, deployer nonce 3. */
  sweeper: getCreateAddress({ from: DEPLOYER_ADDRESS, nonce: 3 }),
} as const;

/** Compiles the EVM sweep contracts (Disperse, Sweeper) with solc-js, cached like the test token. */
export function compileSweepContracts(opts: { cacheDir?: string } = {}): { disperse: CompileResult; sweeper: CompileResult } {
  return {
    disperse: compileContractFile('src/chains/evm/contracts/Disperse.sol', 'Disperse', opts),
    sweeper: compileContractFile('src/chains/evm/contracts/Sweeper.sol', 'Sweeper', opts),
  };
}

export interface DevChain {
  network: DevNetwork;
  chainId: number;
  rpcUrl: string;
  wsUrl: string;
  tokens: readonly DevTokenSpec[];
  /** Raw JSON-RPC client on this chain. */
  rpc: EvmRpcClient;
  /** ethers provider (block-number cache off) for signing helpers and tests. */
  provider: JsonRpcProvider;
  stop(): Promise<void>;
}

export interface DevChainTimings {
  /** spawn → "Listening on", per chain (they start in parallel). */
  anvilStartMs: Record<DevNetwork, number>;
  compileMs: number;
  compileSource: CompileResult['source'];
  /** Deploying both tokens, per chain (in parallel). */
  deployMs: Record<DevNetwork, number>;
  totalMs: number;
}

export interface DevChains {
  ETHEREUM: DevChain;
  BINANCE: DevChain;
  timings: DevChainTimings;
  stop(): Promise<void>;
}

export interface StartDevChainsOptions {
  /** Where the compiled TestToken is cached across starts (optional). */
  cacheDir?: string;
  /** Seconds per block; omitted = automine. */
  blockTime?: number;
}

export interface SentTx {
  txHash: string;
  blockNumber: bigint;
  blockHash: string;
}

export interface SentTransfer extends SentTx {
  /** Log index of the token's Transfer event. */
  logIndex: number;
}

export interface RpcReceipt {
  status: string;
  gasUsed: string;
  effectiveGasPrice: string;
  blockNumber: string;
  blockHash: string;
  contractAddress: string | null;
  logs: { address: string; logIndex: string; topics: string[] }[];
}

const tokenInterface = new Interface([
  'function mint(address to, uint256 value)',
  'function transfer(address to, uint256 value) returns (bool)',
  'function balanceOf(address owner) view returns (uint256)',
]);

const running = new Set<DevChains>();

/**
 * Polls the node for a receipt (no block subscription to miss on automine). A revert throws unless
 * `allowRevert` (a test that expects the revert reads the receipt's status).
 */
export async function waitForReceipt(
  chain: Pick<DevChain, 'rpc'>,
  txHash: string,
  opts: { timeoutMs?: number; allowRevert?: boolean } = {},
): Promise<RpcReceipt> {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const deadline = Date.now() + timeoutMs;
  for (let delay = 5; ; delay = Math.min(delay * 2, 200)) {
    const receipt = await chain.rpc.call<RpcReceipt | null>('eth_getTransactionReceipt', [txHash]);
    if (receipt) {
      if (receipt.status !== '0x1' && !opts.allowRevert) throw new Error(`transaction ${txHash} reverted`);
      return receipt;
    }
    if (Date.now() > deadline) throw new Error(`no receipt for ${txHash} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, delay));
  }
}

const txOf = (txHash: string, r: RpcReceipt): SentTx => ({ txHash, blockNumber: BigInt(r.blockNumber), blockHash: r.blockHash });

function resolveToken(chain: Pick<DevChain, 'tokens'>, token: DevTokenSymbol | string): string {
  const spec = chain.tokens.find((t) => t.symbol === token);
  return spec ? spec.address : getAddress(token);
}

/** Mints `amount` base units of `token` (symbol or address) to `to`, sent from the deployer account. */
export async function mintTo(chain: DevChain, token: DevTokenSymbol | string, to: string, amount: bigint): Promise<SentTx> {
  // eth_sendTransaction from an unlocked account lets anvil assign nonces: concurrent mints are safe
  const txHash = await chain.rpc.call<string>('eth_sendTransaction', [
    { from: DEPLOYER_ADDRESS, to: resolveToken(chain, token), data: tokenInterface.encodeFunctionData('mint', [getAddress(to), amount]) },
  ]);
  return txOf(txHash, await waitForReceipt(chain, txHash));
}

/**
 * Sends an ERC-20 transfer signed with `privateKey`, the way a customer's wallet would (EIP-1559 on
 * the ETHEREUM stand-in, legacy gas price on the BSC stand-in). Not safe to call concurrently for one key.
 */
export async function transferToken(chain: DevChain, token: DevTokenSymbol | string, privateKey: string, to: string, amount: bigint): Promise<SentTransfer> {
  const wallet = new Wallet(privateKey, chain.provider);
  const tokenAddress = resolveToken(chain, token);
  const data = tokenInterface.encodeFunctionData('transfer', [getAddress(to), amount]);
  const tx =
    chain.network === 'BINANCE'
      ? await wallet.sendTransaction({ to: tokenAddress, data, type: 0, gasPrice: BigInt(await chain.rpc.call<string>('eth_gasPrice', [])) })
      : await wallet.sendTransaction({ to: tokenAddress, data });
  const receipt = await waitForReceipt(chain, tx.hash);
  const log = receipt.logs.find((l) => l.address.toLowerCase() === tokenAddress.toLowerCase());
  if (!log) throw new Error(`transfer ${tx.hash} emitted no Transfer log`);
  return { ...txOf(tx.hash, receipt), logIndex: Number(BigInt(log.logIndex)) };
}

/** Token balance in base units. */
export async function balanceOf(chain: DevChain, token: DevTokenSymbol | string, owner: string): Promise<bigint> {
  const data = tokenInterface.encodeFunctionData('balanceOf', [getAddress(owner)]);
  return BigInt(await chain.rpc.call<string>('eth_call', [{ to: resolveToken(chain, token), data }, 'latest']));
}

/** Adapter config pointing at a dev chain; tests override what they exercise (e.g. maxBlockRange). */
export function devChainNetworkConfig(chain: DevChain, overrides: Partial<ChainNetworkConfig> = {}): ChainNetworkConfig {
  return {
    network: chain.network,
    rpcUrls: [chain.rpcUrl],
    chainId: chain.chainId,
    confirmations: 1,
    maxBlockRange: 1000,
    timeoutMs: 5000,
    ...overrides,
  };
}

interface Deployment {
  name: string;
  nonce: number;
  /** Creation bytecode with its constructor arguments. */
  data: string;
  expected: string;
}

async function deployTokens(chain: DevChain, compiled: CompileResult, sweep: ReturnType<typeof compileSweepContracts>): Promise<void> {
  const nonce = BigInt(await chain.rpc.call<string>('eth_getTransactionCount', [DEPLOYER_ADDRESS, 'latest']));
  if (nonce !== 0n) throw new Error(`${chain.network} dev chain is not fresh (deployer nonce ${nonce}): token addresses would differ`);
  const factory = new Interface(compiled.abi as Record<string, unknown>[]);
  const deployments: Deployment[] = [
    ...chain.tokens.map((t) => ({
      name: t.symbol,
      nonce: t.nonce,
      data: compiled.bytecode + factory.encodeDeploy([t.name, t.symbol, t.decimals]).slice(2),
      expected: t.address,
    })),
    { name: 'Disperse', nonce: 2, data: sweep.disperse.bytecode, expected: DEV_SWEEP_CONTRACTS.disperse },
    {
      name: 'Sweeper',
      nonce: 3,
      data: sweep.sweeper.bytecode + AbiCoder.defaultAbiCoder().encode(['address'], [DEV_GAS_TANK_EVM_ADDRESS]).slice(2),
      expected: DEV_SWEEP_CONTRACTS.sweeper,
    },
  ];
  // Sent one after another with explicit nonces, so the order (and thus each address) is fixed. Not
  // concurrently: a higher nonce arriving first would wait queued and could stay unmined on automine.
  const hashes: string[] = [];
  for (const d of deployments) {
    hashes.push(
      await chain.rpc.call<string>('eth_sendTransaction', [
        { from: DEPLOYER_ADDRESS, nonce: toQuantity(BigInt(d.nonce)), gas: toQuantity(3_000_000n), data: d.data },
      ]),
    );
  }
  const receipts = await Promise.all(hashes.map((h) => waitForReceipt(chain, h)));
  receipts.forEach((r, i) => {
    const d = deployments[i]!;
    const actual = r.contractAddress ? getAddress(r.contractAddress) : null;
    if (actual !== d.expected) throw new Error(`${chain.network} ${d.name} deployed at ${actual}, expected ${d.expected}`);
  });
  // the local gas tank starts full on every start
  await chain.rpc.call('anvil_setBalance', [DEV_GAS_TANK_EVM_ADDRESS, toQuantity(10n ** 24n)]);
}

function makeChain(network: DevNetwork, anvil: AnvilInstance): DevChain {
  const chain = connectDevChain(network, anvil.rpcUrl, anvil.wsUrl);
  return {
    ...chain,
    async stop() {
      await chain.stop();
      await anvil.stop();
    },
  };
}

/**
 * A handle on a dev chain another process runs (the worker of `npm start`), for the CLI's
 * `dev pay`; `stop()` only closes this handle.
 */
export function connectDevChain(network: DevNetwork, rpcUrl: string, wsUrl = rpcUrl.replace(/^http/, 'ws')): DevChain {
  const chainId = DEV_CHAIN_IDS[network];
  const rpc = new EvmRpcClient({ urls: [rpcUrl], timeoutMs: 10_000, maxAttempts: 2, baseDelayMs: 20 });
  const provider = new JsonRpcProvider(rpcUrl, undefined, {
    staticNetwork: EthersNetwork.from(chainId),
    cacheTimeout: -1,
    pollingInterval: 50,
  });
  return {
    network,
    chainId,
    rpcUrl,
    wsUrl,
    tokens: DEV_TOKENS[network],
    rpc,
    provider,
    async stop() {
      provider.destroy();
    },
  };
}

/**
 * Starts the ETHEREUM (31337) and BINANCE (31338, base fee 0) stand-ins and deploys USDT/USDC on
 * each at `DEV_TOKEN_ADDRESSES`. Nothing persists: every start is a fresh chain.
 */
export async function startDevChains(opts: StartDevChainsOptions = {}): Promise<DevChains> {
  const t0 = performance.now();
  const startOne = async (network: DevNetwork, baseFee?: number) => {
    const s = performance.now();
    const anvil = await startAnvil({ chainId: DEV_CHAIN_IDS[network], baseFee, blockTime: opts.blockTime });
    return { anvil, ms: performance.now() - s };
  };
  const starting = Promise.allSettled([startOne('ETHEREUM'), startOne('BINANCE', 0)]);
  let compiled: CompileResult | undefined;
  let sweepContracts: ReturnType<typeof compileSweepContracts> | undefined;
  let compileError: unknown;
  try {
    // synchronous (solc-js is wasm): it overlaps with the two anvil processes booting
    compiled = compileTestToken({ cacheDir: opts.cacheDir });
    sweepContracts = compileSweepContracts({ cacheDir: opts.cacheDir });
  } catch (err) {
    compileError = err;
  }
  const [eth, bsc] = await starting;
  const started = [eth, bsc].flatMap((r) => (r.status === 'fulfilled' ? [r.value.anvil] : []));
  const abort = async (err: unknown): Promise<never> => {
    await Promise.all(started.map((a) => a.stop()));
    throw err;
  };
  if (eth.status === 'rejected') return abort(eth.reason);
  if (bsc.status === 'rejected') return abort(bsc.reason);
  if (!compiled || !sweepContracts) return abort(compileError);
  const token = compiled;
  const sweep = sweepContracts;

  const chains = { ETHEREUM: makeChain('ETHEREUM', eth.value.anvil), BINANCE: makeChain('BINANCE', bsc.value.anvil) };
  const deployMs = { ETHEREUM: 0, BINANCE: 0 };
  try {
    await Promise.all(
      (['ETHEREUM', 'BINANCE'] as const).map(async (n) => {
        const s = performance.now();
        await deployTokens(chains[n], token, sweep);
        deployMs[n] = performance.now() - s;
      }),
    );
  } catch (err) {
    await Promise.all([chains.ETHEREUM.stop(), chains.BINANCE.stop()]);
    throw err;
  }

  const set: DevChains = {
    ...chains,
    timings: {
      anvilStartMs: { ETHEREUM: eth.value.ms, BINANCE: bsc.value.ms },
      compileMs: token.ms + sweep.disperse.ms + sweep.sweeper.ms,
      compileSource: token.source,
      deployMs,
      totalMs: performance.now() - t0,
    },
    async stop() {
      running.delete(set);
      await Promise.all([chains.ETHEREUM.stop(), chains.BINANCE.stop()]);
    },
  };
  running.add(set);
  return set;
}

/** Stops `chains`, or every set this process started. */
export async function stopDevChains(chains?: DevChains): Promise<void> {
  const sets = chains ? [chains] : [...running];
  await Promise.all(sets.map((s) => s.stop()));
}
