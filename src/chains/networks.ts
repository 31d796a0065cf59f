import { BLOCK_TIME_MS, type Config } from '../config/index.js';
import { ENVIRONMENTS, NETWORKS, type Environment, type Network } from '../common/environment.js';
import type { ChainAdapter, ChainNetworkConfig } from './chain-adapter.js';
import { MAINNET_GENESIS } from './chain-identity.js';
import type { ProviderFailureReason } from './provider-health.js';
import { createEvmAdapter } from './evm/index.js';
import { familyOf, networkProfile } from './registry.js';
import { createSolanaAdapter } from './solana/index.js';
import { solanaWsUrl } from './solana/solana.heads.js';
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

/**
 * Called on every failed RPC attempt, every family (metrics, logs). `provider` is the URL's host only:
 * paths and queries may carry API keys. `consecutiveFailures` 1 starts a streak (the provider is demoted).
 */
/** Every request sent to an RPC provider (host only), by method: the RPC budget. */
export type RpcCallHook = (call: { environment: Environment; network: Network; provider: string; method: string }) => void;

export type RpcFailureHook = (failure: {
  environment: Environment;
  network: Network;
  provider: string;
  reason: ProviderFailureReason;
  consecutiveFailures: number;
}) => void;

/** The EVM sweep contracts of the local dev chains (src/devchain), handed in by the composition root. */
export interface LocalSweepContracts {
  disperse: string;
  sweeper: string;
}

export interface WatchOptions {
  onRpcFailure?: RpcFailureHook;
  onWrongChain?: WrongChainHook;
  onRpcCall?: RpcCallHook;
  /** Used on the sandbox's local EVM chains (DEV_CHAINS) where config names no sweep contract. */
  localSweepContracts?: LocalSweepContracts;
}

/** The adapter of a family. */
function createAdapter(config: ChainNetworkConfig): ChainAdapter {
  switch (familyOf(config.network)) {
    case 'evm':
      return createEvmAdapter(config);
    case 'tron':
      return createTronAdapter(config);
    case 'solana':
      return createSolanaAdapter(config);
  }
}

/** EVM sweep contracts of a network: configured, else the local chain's when the sandbox runs on dev chains. */
function sweepContracts(
  config: Config,
  environment: Environment,
  network: Network,
  localContracts: LocalSweepContracts | undefined,
): Pick<ChainNetworkConfig, 'disperseAddress' | 'sweeperAddress' | 'sweepBatchMax'> {
  if (network !== 'ETHEREUM' && network !== 'BINANCE') return {};
  const key = `${environment === 'sandbox' ? 'SANDBOX' : 'PRODUCTION'}_${network}` as const;
  const local = networkProfile(environment, network, config.DEV_CHAINS).profile === 'local' ? localContracts : undefined;
  return {
    disperseAddress: (config[`${key}_DISPERSE_ADDRESS`] as string | undefined) ?? local?.disperse,
    sweeperAddress: (config[`${key}_SWEEPER_ADDRESS`] as string | undefined) ?? local?.sweeper,
    sweepBatchMax: config.EVM_SWEEP_BATCH_MAX,
  };
}

/**
 * WebSocket URLs for push (EVM `eth_subscribe("newHeads")`, SOLANA `slotSubscribe`): configured, else
 * the local dev chain's (anvil serves WebSocket on its HTTP port; the SOLANA facade, like a validator,
 * on its RPC port + 1). None when `WATCH_PUSH` is off or the network has no push (TRON).
 */
export function pushUrls(config: Config, environment: Environment, network: Network, rpcUrls: string[]): string[] | undefined {
  if (!config.WATCH_PUSH || network === 'TRON') return undefined;
  const configured = config[`${environment === 'sandbox' ? 'SANDBOX' : 'PRODUCTION'}_${network}_WS_URLS`] as string[] | undefined;
  if (configured?.length) return configured;
  if (networkProfile(environment, network, config.DEV_CHAINS).profile !== 'local') return undefined;
  const http = rpcUrls.filter((u) => /^https?:\/\//.test(u));
  return familyOf(network) === 'solana' ? http.map(solanaWsUrl) : http.map((u) => u.replace(/^http/, 'ws'));
}

/**
 * How often a network's watcher polls: `WATCH_POLL_MS_<NETWORK>`, else production at the chain's
 * block time and the sandbox at `WATCH_POLL_MS`. While push is open: EVM at `WATCH_PUSH_POLL_MS`
 * (at most half of `WATCHER_STALL_S`, so readiness never calls an idle chain's watcher stalled), never
 * faster than the cadence (a head says everything a poll would find); SOLANA keeps its own cadence (a slot says
 * nothing about the deposits: a poll reads their token accounts, and its slow turn comes every
 * `CLOSED_DEPOSIT_POLL_EVERY` polls, so a pushed slot only brings the next poll forward).
 */
export function pollCadence(config: Config, environment: Environment, network: Network): { pollMs: number; pushPollMs: number } {
  const pollMs = (config[`WATCH_POLL_MS_${network}`] as number | undefined) ?? (environment === 'production' ? BLOCK_TIME_MS[network] : config.WATCH_POLL_MS);
  // a poll at least twice per `WATCHER_STALL_S` while push is open: an idle chain's watcher is never shown `stalled`
  const pushPollMs = Math.min(config.WATCH_PUSH_POLL_MS, (config.WATCHER_STALL_S * 1000) / 2);
  return { pollMs, pushPollMs: familyOf(network) === 'solana' ? pollMs : Math.max(pollMs, pushPollMs) };
}

/** Every (environment, network) that has RPC URLs, with its adapter. Networks without URLs are not watched. */
export function watchedNetworks(config: Config, overrides: RpcOverrides = {}, options: WatchOptions = {}): WatchedNetwork[] {
  const { onRpcFailure, onWrongChain, onRpcCall } = options;
  const out: WatchedNetwork[] = [];
  for (const environment of ENVIRONMENTS) {
    for (const network of NETWORKS) {
      const key = `${environment === 'sandbox' ? 'SANDBOX' : 'PRODUCTION'}_${network}` as const;
      const rpcUrls = overrides[`${environment}:${network}`] ?? (config[`${key}_RPC_URLS`] as string[] | undefined);
      if (!rpcUrls?.length) continue;
      const chainConfig: ChainNetworkConfig = {
        network,
        rpcUrls,
        wsUrls: pushUrls(config, environment, network, rpcUrls),
        chainId: networkProfile(environment, network, config.DEV_CHAINS).chainId,
        confirmations: config[`${key}_CONFIRMATIONS`] as number,
        maxBlockRange: config.WATCH_MAX_BLOCK_RANGE,
        timeoutMs: config.RPC_TIMEOUT_MS,
        // production serves the mainnets only: a provider on anything else is refused from its first answer;
        // the sandbox's chain is configured, or the one most of its providers agree on
        genesisHash: environment === 'production' ? MAINNET_GENESIS[network] : config[`SANDBOX_${network}_GENESIS`],
        identityRecheckMs: config.CHAIN_IDENTITY_RECHECK_MS,
        verifyIdentity: true,
        onWrongChain: onWrongChain && ((e) => onWrongChain({ environment, network, provider: e.provider, message: e.message })),
        onProviderFailure: onRpcFailure && ((f) => onRpcFailure({ environment, network, ...f })),
        onRpcCall: onRpcCall && ((c) => onRpcCall({ environment, network, ...c })),
        ...sweepContracts(config, environment, network, options.localSweepContracts),
      };
      out.push({ environment, network, config: chainConfig, adapter: createAdapter(chainConfig) });
    }
  }
  return out;
}

/**
 * The adapter of a watched (environment, network), created on first use over the URLs `rpcUrls`
 * gives then (config, or the chains this process was started with) and kept for the process: API-side
 * chain reads (refund claims' contract check, refund wallet balances). Null when none are known.
 */
export function adapterLookup(
  config: Config,
  rpcUrls: (environment: Environment, network: Network) => string[],
): (environment: Environment, network: Network) => ChainAdapter | null {
  const made = new Map<string, ChainAdapter | null>();
  return (environment, network) => {
    const key = `${environment}:${network}`;
    if (!made.has(key)) {
      const urls = rpcUrls(environment, network);
      made.set(
        key,
        urls.length ? (watchedNetworks(config, { [key]: urls }).find((t) => t.environment === environment && t.network === network)?.adapter ?? null) : null,
      );
    }
    return made.get(key)!;
  };
}
