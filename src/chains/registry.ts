import type { Environment, Network } from '../common/environment.js';
import type { ChainFamily, ChainFamilyDriver } from './chain-adapter.js';
// The drivers only (offline: derivation, validation, URIs), not the families' index: the adapters and
// sweeps behind it bring RPC clients and TronWeb, which only the worker's watchers and sweeps use.
import { evmDriver } from './evm/evm.driver.js';
import { solanaDriver } from './solana/solana.driver.js';
import { tronDriver } from './tron/tron.driver.js';

/** The only map from network to chain family; everything else asks the registry. */
const FAMILY: Record<Network, ChainFamily> = { ETHEREUM: 'evm', BINANCE: 'evm', TRON: 'tron', SOLANA: 'solana' };
const DRIVERS: Record<ChainFamily, ChainFamilyDriver> = { evm: evmDriver, tron: tronDriver, solana: solanaDriver };

export const familyOf = (network: Network): ChainFamily => FAMILY[network];
export const driverFor = (network: Network): ChainFamilyDriver => DRIVERS[FAMILY[network]];
export const driverOfFamily = (family: ChainFamily): ChainFamilyDriver => DRIVERS[family];

/**
 * Token registry profile a network uses in an environment: production → mainnet tokens; sandbox →
 * the public testnets, or the local chains (`src/devchain/`) when dev chains run.
 */
export type TokenProfile = 'mainnet' | 'testnet' | 'local';

export interface NetworkProfile {
  profile: TokenProfile;
  /** EVM chain id (EIP-681); undefined for non-EVM networks. */
  chainId?: number;
}

const CHAIN_IDS: Record<TokenProfile, Partial<Record<Network, number>>> = {
  mainnet: { ETHEREUM: 1, BINANCE: 56 },
  testnet: { ETHEREUM: 11155111, BINANCE: 97 },
  local: { ETHEREUM: 31337, BINANCE: 31338 },
};

export function networkProfile(environment: Environment, network: Network, devChains: boolean): NetworkProfile {
  const profile: TokenProfile = environment === 'production' ? 'mainnet' : devChains ? 'local' : 'testnet';
  return { profile, chainId: CHAIN_IDS[profile][network] };
}

/**
 * Address the watcher observes for a deposit, when it is not the deposit address itself (see
 * `ChainFamilyDriver.watchAddress`).
 */
export function watchAddressFor(network: Network, owner: string, tokenAddress: string): string | null {
  return driverFor(network).watchAddress(owner, tokenAddress);
}

/** The native coin of a network: what gas tanks hold and sweep fees are paid in (symbol, decimals). */
const NATIVE: Record<Network, { symbol: string; decimals: number }> = {
  ETHEREUM: { symbol: 'ETH', decimals: 18 },
  BINANCE: { symbol: 'BNB', decimals: 18 },
  TRON: { symbol: 'TRX', decimals: 6 },
  SOLANA: { symbol: 'SOL', decimals: 9 },
};
export const nativeAsset = (network: Network): { symbol: string; decimals: number } => NATIVE[network];

/** SQL of the native coin's symbol of the network in column `networkColumn` (for rows with no token: native receipts and sweeps). */
export const nativeSymbolSql = (networkColumn: string): string =>
  `(case ${networkColumn} ${Object.entries(NATIVE)
    .map(([n, a]) => `when '${n}' then '${a.symbol}'`)
    .join(' ')} end)`;

/** SQL of the native coin's decimals of the network in column `networkColumn`. */
export const nativeDecimalsSql = (networkColumn: string): string =>
  `(case ${networkColumn} ${Object.entries(NATIVE)
    .map(([n, a]) => `when '${n}' then ${a.decimals}`)
    .join(' ')} end)`;

/** Names a person recognises (the enum values are API words): the checkout page, receipts, mails. */
const DISPLAY_NAMES: Record<Network, string> = { ETHEREUM: 'Ethereum', BINANCE: 'BNB Smart Chain', TRON: 'TRON', SOLANA: 'Solana' };
export const networkDisplayName = (network: Network): string => DISPLAY_NAMES[network];

/**
 * Transaction pages of the public block explorers, per token profile. The local dev chains have no
 * explorer: no link then (a dead link is worse than none). `{hash}` marks where the hash goes.
 */
const EXPLORER_TX: Record<Exclude<TokenProfile, 'local'>, Record<Network, string>> = {
  mainnet: {
    ETHEREUM: 'https://etherscan.io/tx/{hash}',
    BINANCE: 'https://bscscan.com/tx/{hash}',
    TRON: 'https://tronscan.org/#/transaction/{hash}',
    SOLANA: 'https://solscan.io/tx/{hash}',
  },
  testnet: {
    ETHEREUM: 'https://sepolia.etherscan.io/tx/{hash}',
    BINANCE: 'https://testnet.bscscan.com/tx/{hash}',
    TRON: 'https://nile.tronscan.org/#/transaction/{hash}',
    SOLANA: 'https://solscan.io/tx/{hash}?cluster=devnet',
  },
};

/** The explorer page of transaction `hash` on `network` as the environment runs it; null on the local dev chains. */
export function explorerTxUrl(environment: Environment, network: Network, hash: string, devChains: boolean): string | null {
  const { profile } = networkProfile(environment, network, devChains);
  return profile === 'local' ? null : EXPLORER_TX[profile][network].replace('{hash}', encodeURIComponent(hash));
}
