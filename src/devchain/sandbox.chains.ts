/**
 * The sandbox `npm start` runs offline: ETHEREUM and BINANCE on anvil, TRON on the java-tron
 * emulator (anvil underneath), SOLANA on litesvm behind the JSON-RPC facade, each with test USDT and
 * USDC at fixed addresses, and a funded faucet wallet on each.
 *
 * What the stand-ins do not model is written beside each: `anvil.ts` (nothing: real EVM node),
 * `tron.emulator.ts` (energy/bandwidth/fees, TRX and TRC-10 transfers, account activation, TaPoS,
 * multi-signature, TVM differences, the TronGrid `/v1` API) and `solana.facade.ts` (consensus and
 * forks, commitment on account reads, blockhash expiry, priority fees, rent, lookup tables,
 * `jsonParsed`, subscriptions other than signatureSubscribe). Nothing persists: each start is a fresh
 * chain, so balances and payments from a previous start are gone (the database keeps its rows).
 */
import { Keypair, PublicKey } from '@solana/web3.js';
import { computeAddress, getAddress, Interface } from 'ethers';
import { EvmRpcClient, toQuantity } from '../chains/evm/evm.rpc.js';
import { fromHex } from 'tronweb/utils';
import type { Network } from '../common/environment.js';
import { DEPLOYER_ADDRESS, DEV_TOKENS, startDevChains, waitForReceipt, type DevChains } from './devchain.js';
import { startSolanaFacade, type SolanaFacade } from './solana.facade.js';
import { startTronEmulator, type TronEmulator } from './tron.emulator.js';
import { devSeed, SANDBOX_FAUCET_SECP256K1_KEY, SANDBOX_FAUCET_SOLANA_SEED } from './dev-keys.js';

export { SANDBOX_FAUCET_SECP256K1_KEY, SANDBOX_FAUCET_SOLANA_SEED } from './dev-keys.js';

export type SandboxTokenSymbol = 'USDT' | 'USDC';

export interface SandboxToken {
  symbol: SandboxTokenSymbol;
  name: string;
  /** Contract (EVM hex, TRON base58) or SPL mint (base58). */
  address: string;
  decimals: number;
}

/** Mint authority (and fee payer) of the local SPL test tokens. */
export const SOLANA_MINT_AUTHORITY = Keypair.fromSeed(devSeed('solana/mint-authority'));
/** The local customer wallet `dev pay` uses on SOLANA. */
export const SOLANA_DEV_CUSTOMER = Keypair.fromSeed(devSeed('solana/customer'));
const SOLANA_MINT_KEYS: Record<SandboxTokenSymbol, Keypair> = {
  USDT: Keypair.fromSeed(devSeed('solana/mint/USDT')),
  USDC: Keypair.fromSeed(devSeed('solana/mint/USDC')),
};

/** TRON's TRC-20s run on the emulator's anvil, deployed by account 0 at nonces 0 and 1: the EVM stand-ins' addresses, 41-prefixed. */
const tronAddressOf = (evm: string) => fromHex(`41${getAddress(evm).slice(2).toLowerCase()}`);

/** The token registry seed of the local sandbox (same addresses on every start). */
export const SANDBOX_TOKENS: Record<Network, readonly SandboxToken[]> = {
  ETHEREUM: DEV_TOKENS.ETHEREUM.map((t) => ({ symbol: t.symbol, name: t.name, address: t.address, decimals: t.decimals })),
  BINANCE: DEV_TOKENS.BINANCE.map((t) => ({ symbol: t.symbol, name: t.name, address: t.address, decimals: t.decimals })),
  TRON: DEV_TOKENS.ETHEREUM.map((t) => ({
    symbol: t.symbol,
    name: `${t.name.replace(' (dev)', '')} (dev TRON)`,
    address: tronAddressOf(t.address),
    decimals: 6,
  })),
  SOLANA: (['USDT', 'USDC'] as const).map((symbol) => ({
    symbol,
    name: symbol === 'USDT' ? 'Tether USD (dev SOLANA)' : 'USD Coin (dev SOLANA)',
    address: SOLANA_MINT_KEYS[symbol].publicKey.toBase58(),
    decimals: 6,
  })),
};

export const sandboxToken = (network: Network, symbol: string): SandboxToken | undefined => SANDBOX_TOKENS[network].find((t) => t.symbol === symbol);

/** What the faucet wallet holds after a start: enough for a million faucet calls of 1000 units. */
const FAUCET_TOKEN_UNITS = 10n ** 9n;
const MINT = new Interface(['function mint(address to, uint256 value)']);

export interface SandboxChains {
  evm: DevChains;
  tron: TronEmulator;
  solana: SolanaFacade;
  /** RPC URL of each local chain (TRON: the java-tron HTTP API; SOLANA: JSON-RPC, WebSocket on the same port). */
  rpcUrls: Record<Network, string>;
  timings: { totalMs: number; evmMs: number; tronMs: number; solanaMs: number };
  stop(): Promise<void>;
}

export interface StartSandboxChainsOptions {
  cacheDir?: string;
  /** Seconds per block on the anvil-based chains (default 1). */
  blockTime?: number;
  /** Faucet wallets to fund (default: the local dev faucet keys). */
  faucet?: { secp256k1Key?: string; solanaSeedHex?: string };
}

/**
 * Native coins and both tokens for the faucet wallet. Mints go out one after another with explicit
 * nonces: sent concurrently, the higher nonce could reach anvil first, wait as a queued transaction, and
 * stay unmined on automine after the lower one was mined (start-up then hung for the receipt).
 */
async function fundEvmFaucet(chain: DevChains['ETHEREUM'], faucet: string): Promise<void> {
  await chain.rpc.call('anvil_setBalance', [faucet, toQuantity(10n ** 24n)]);
  const nonce = BigInt(await chain.rpc.call<string>('eth_getTransactionCount', [DEPLOYER_ADDRESS, 'pending']));
  const hashes: string[] = [];
  for (const [i, t] of chain.tokens.entries()) {
    hashes.push(
      await chain.rpc.call<string>('eth_sendTransaction', [
        {
          from: DEPLOYER_ADDRESS,
          to: t.address,
          nonce: toQuantity(nonce + BigInt(i)),
          data: MINT.encodeFunctionData('mint', [faucet, FAUCET_TOKEN_UNITS * 10n ** BigInt(t.decimals)]),
        },
      ]),
    );
  }
  // A revert throws from waitForReceipt: the faucet wallet is then not funded and start-up fails loudly.
  await Promise.all(hashes.map((h) => waitForReceipt(chain, h)));
}

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const t = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - t };
}

/** Starts the four local chains in parallel, deploys the test tokens and funds the faucet wallet. */
export async function startSandboxChains(opts: StartSandboxChainsOptions = {}): Promise<SandboxChains> {
  const t0 = performance.now();
  const blockTime = opts.blockTime ?? 1;
  const faucetEvm = computeAddress(opts.faucet?.secp256k1Key ?? SANDBOX_FAUCET_SECP256K1_KEY);
  const faucetSol = Keypair.fromSeed(Buffer.from(opts.faucet?.solanaSeedHex ?? SANDBOX_FAUCET_SOLANA_SEED, 'hex')).publicKey;

  const [evm, tron, solana] = await Promise.allSettled([
    timed(async () => {
      // set up on automine (no waiting for block ticks), then mine a block a second like a real chain
      const chains = await startDevChains({ cacheDir: opts.cacheDir });
      try {
        await Promise.all((['ETHEREUM', 'BINANCE'] as const).map((n) => fundEvmFaucet(chains[n], faucetEvm)));
        await Promise.all((['ETHEREUM', 'BINANCE'] as const).map((n) => chains[n].rpc.call('evm_setIntervalMining', [blockTime])));
      } catch (err) {
        await chains.stop();
        throw err;
      }
      return chains;
    }),
    timed(async () => {
      // solidity lag 3 with 1 s blocks: a payment solidifies in seconds, as the sandbox's 3 confirmations expect
      const emu = await startTronEmulator({ solidityLag: 3, cacheDir: opts.cacheDir });
      try {
        for (const t of SANDBOX_TOKENS.TRON) {
          const at = await emu.deployToken({ name: t.name, symbol: t.symbol, decimals: t.decimals });
          if (at !== t.address) throw new Error(`TRON ${t.symbol} deployed at ${at}, expected ${t.address}`);
        }
        const faucetTron = tronAddressOf(faucetEvm);
        // TRX is the emulator's anvil balance (see tron.emulator.ts)
        const anvil = new EvmRpcClient({ urls: [emu.anvilUrl], timeoutMs: 10_000 });
        await anvil.call('anvil_setBalance', [faucetEvm, toQuantity(10n ** 24n)]);
        await Promise.all(SANDBOX_TOKENS.TRON.map((t) => emu.mint(t.address, faucetTron, FAUCET_TOKEN_UNITS * 10n ** BigInt(t.decimals))));
        await anvil.call('evm_setIntervalMining', [blockTime]);
      } catch (err) {
        await emu.stop();
        throw err;
      }
      return emu;
    }),
    timed(async () => {
      // a slot every 400 ms, like a cluster: "finalized" (32 slots behind) follows in about 13 s
      const facade = await startSolanaFacade({ payer: SOLANA_MINT_AUTHORITY, slotIntervalMs: 400 });
      try {
        for (const t of SANDBOX_TOKENS.SOLANA) {
          const mint = await facade.createUsdcMint({ decimals: t.decimals, keypair: SOLANA_MINT_KEYS[t.symbol] });
          await facade.mintTo(faucetSol, mint, FAUCET_TOKEN_UNITS * 10n ** BigInt(t.decimals));
        }
        await facade.connection.requestAirdrop(faucetSol, 1000 * 1e9);
      } catch (err) {
        await facade.stop();
        throw err;
      }
      return facade;
    }),
  ]);
  const ok = [evm, tron, solana].flatMap((r) => (r.status === 'fulfilled' ? [r.value.value] : []));
  const failed = [evm, tron, solana].find((r) => r.status === 'rejected');
  if (failed || evm.status !== 'fulfilled' || tron.status !== 'fulfilled' || solana.status !== 'fulfilled') {
    await Promise.all(ok.map((c) => c.stop()));
    throw (failed as PromiseRejectedResult | undefined)?.reason ?? new Error('a local chain failed to start');
  }
  return {
    evm: evm.value.value,
    tron: tron.value.value,
    solana: solana.value.value,
    rpcUrls: { ETHEREUM: evm.value.value.ETHEREUM.rpcUrl, BINANCE: evm.value.value.BINANCE.rpcUrl, TRON: tron.value.value.url, SOLANA: solana.value.value.url },
    timings: { totalMs: performance.now() - t0, evmMs: evm.value.ms, tronMs: tron.value.ms, solanaMs: solana.value.ms },
    async stop() {
      await Promise.all([evm.value.value.stop(), tron.value.value.stop(), solana.value.value.stop()]);
    },
  };
}

/** What the sandbox gives each non-EVM gas tank at start: 10 000 TRX, 100 SOL (the EVM dev tank is funded by `startDevChains`). */
export const SANDBOX_TANK_FUNDING = { TRON: 10_000n * 1_000_000n, SOLANA: 100n * 1_000_000_000n } as const;

/**
 * Funds the TRON and SOLANA gas tanks of the local sandbox with the chains' own funding calls (the
 * emulator's faucet payment, which also activates the account; SOLANA `requestAirdrop`), so sweeps run
 * on all four networks right after `npm start`. Tops up only what a tank lacks, so a restart adds nothing.
 */
export async function fundSandboxGasTanks(
  chains: Pick<SandboxChains, 'tron' | 'solana'>,
  tanks: { TRON?: string | null; SOLANA?: string | null },
): Promise<void> {
  if (tanks.TRON && (await chains.tron.trxBalance(tanks.TRON)) < SANDBOX_TANK_FUNDING.TRON) await chains.tron.setTrx(tanks.TRON, SANDBOX_TANK_FUNDING.TRON);
  if (tanks.SOLANA) {
    const owner = new PublicKey(tanks.SOLANA);
    const held = BigInt(await chains.solana.connection.getBalance(owner, 'confirmed'));
    if (held < SANDBOX_TANK_FUNDING.SOLANA) {
      const sig = await chains.solana.connection.requestAirdrop(owner, Number(SANDBOX_TANK_FUNDING.SOLANA - held));
      const latest = await chains.solana.connection.getLatestBlockhash('confirmed');
      await chains.solana.connection.confirmTransaction({ signature: sig, ...latest }, 'confirmed');
    }
  }
}
