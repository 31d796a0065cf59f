import type { Config } from '../config/index.js';
import { ENVIRONMENTS, NETWORKS, type Environment, type Network } from '../common/environment.js';
import type { ChainAdapter, ChainNetworkConfig } from './chain-adapter.js';
import { MAINNET_GENESIS } from './chain-identity.js';
import { DEV_SWEEP_CONTRACTS } from '../devchain/devchain.js';
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

/** Called once each time a provider is refused for serving another chain (metrics, error log): host only. */
export type WrongChainHook = (refusal: { environment: Environment; network: Network; provider: string; message: string }) => void;

/** Called on every failed RPC attempt (metrics). `provider` is the URL's host only: paths and queries may carry API keys. */
export type RpcFailureHook = (failure: { environment: Environment; network: Network; provider: string; kind: string }) => void;

const hostOf = (url: string): string => {
  try {
    return new URL(url).host;
  } catch {
    return 'unknown';
  }
};

/** A fetch that reports failed attempts (thrown, or a non-2xx answer) before passing them on. */
function reportingFetch(report: (url: string, kind: string) => void): typeof fetch {
  return async (input, init) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    try {
      const res = await fetch(input, init);
      if (!res.ok) report(url, res.status === 429 ? 'rate-limited' : 'http');
      return res;
    } catch (e) {
      report(url, (e as Error)?.name === 'AbortError' || (e as Error)?.name === 'TimeoutError' ? 'timeout' : 'network');
      throw e;
    }
  };
}

/** The adapter of a family, with failed attempts reported where its client exposes them (EVM: every attempt; TRON: every HTTP call; SOLANA: through watcher tick failures only). */
function createAdapter(config: ChainNetworkConfig, report?: (url: string, kind: string) => void): ChainAdapter {
  switch (familyOf(config.network)) {
    case 'evm':
      return createEvmAdapter(config, report ? { rpc: { onAttemptFailed: (f) => report(f.url, f.kind) } } : {});
    case 'tron':
      return createTronAdapter(config, report ? { fetch: reportingFetch(report) } : {});
    case 'solana':
      return createSolanaAdapter(config);
  }
}

/** EVM sweep contracts of a network: configured, else the local chain's when the sandbox runs on dev chains. */
function sweepContracts(config: Config, environment: Environment, network: Network): Pick<ChainNetworkConfig, 'disperseAddress' | 'sweeperAddress' | 'sweepBatchMax'> {
  if (network !== 'ETHEREUM' && network !== 'BINANCE') return {};
  const key = `${environment === 'sandbox' ? 'SANDBOX' : 'PRODUCTION'}_${network}` as const;
  const local = networkProfile(environment, network, config.DEV_CHAINS).profile === 'local' ? DEV_SWEEP_CONTRACTS : undefined;
  return {
    disperseAddress: (config[`${key}_DISPERSE_ADDRESS`] as string | undefined) ?? local?.disperse,
    sweeperAddress: (config[`${key}_SWEEPER_ADDRESS`] as string | undefined) ?? local?.sweeper,
    sweepBatchMax: config.EVM_SWEEP_BATCH_MAX,
  };
}

/** Every (environment, network) that has RPC URLs, with its adapter. Networks without URLs are not watched. */
export function watchedNetworks(config: Config, overrides: RpcOverrides = {}, onRpcFailure?: RpcFailureHook, onWrongChain?: WrongChainHook): WatchedNetwork[] {
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
        // production serves the mainnets only: a provider on anything else is refused from its first answer
        genesisHash: environment === 'production' ? MAINNET_GENESIS[network] : undefined,
        identityRecheckMs: config.CHAIN_IDENTITY_RECHECK_MS,
        verifyIdentity: true,
        onWrongChain: onWrongChain && ((e) => onWrongChain({ environment, network, provider: e.provider, message: e.message })),
        ...sweepContracts(config, environment, network),
      };
      const report = onRpcFailure && ((url: string, kind: string) => onRpcFailure({ environment, network, provider: hostOf(url), kind }));
      out.push({ environment, network, config: chainConfig, adapter: createAdapter(chainConfig, report) });
    }
  }
  return out;
}
