import type { Config } from '../config/index.js';
import { ENVIRONMENTS, NETWORKS, type Environment, type Network } from '../common/environment.js';
import type { ChainAdapter, ChainNetworkConfig } from './chain-adapter.js';
import { createEvmAdapter } from './evm/index.js';
import { familyOf, networkProfile } from './registry.js';
import { createSolanaAdapter } from './solana/index.js';
import { createTronAdapter } from './tron/index.js';

/** A network the worker watches in one environment. */
export interface WatchedNetwork {
  environment: Environment;
  network: Network;
  config: ChainNetworkConfig;
  adapter: ChainAdapter;
}

/** RPC URLs supplied at runtime (the local dev chains started by `npm start`), overriding config. */
export type RpcOverrides = Partial<Record<`${Environment}:${Network}`, string[]>>;

const ADAPTERS = {
  evm: createEvmAdapter,
  tron: createTronAdapter,
  solana: createSolanaAdapter,
} as const;

/** Every (environment, network) that has RPC URLs, with its adapter. Networks without URLs are not watched. */
export function watchedNetworks(config: Config, overrides: RpcOverrides = {}): WatchedNetwork[] {
  const out: WatchedNetwork[] = [];
  for (const environment of ENVIRONMENTS) {
    for (const network of NETWORKS) {
      const key = `${environment === 'sandbox' ? 'SANDBOX' : 'PRODUCTION'}_${network}` as const;
      const rpcUrls = overrides[`${environment}:${network}`] ?? (config[`${key}_RPC_URLS`] as string[] | undefined);
      if (!rpcUrls?.length) continue;
      const chainConfig: ChainNetworkConfig = {
        network,
        rpcUrls,
        chainId: networkProfile(environment, network, config.DEV_CHAINS).chainId,
        confirmations: config[`${key}_CONFIRMATIONS`] as number,
        maxBlockRange: config.WATCH_MAX_BLOCK_RANGE,
        timeoutMs: config.RPC_TIMEOUT_MS,
      };
      out.push({ environment, network, config: chainConfig, adapter: ADAPTERS[familyOf(network)](chainConfig) });
    }
  }
  return out;
}
