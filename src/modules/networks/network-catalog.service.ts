import type { EntityManager } from '@mikro-orm/postgresql';
import { networkProfile } from '../../chains/registry.js';
import { ENVIRONMENTS, NETWORKS, type Environment, type Network } from '../../common/environment.js';
import type { Config } from '../../config/index.js';
import type { TokenService } from '../tokens/token.service.js';

type Key = `${Environment}:${Network}`;
const envKey = (e: Environment) => (e === 'sandbox' ? 'SANDBOX' : 'PRODUCTION');

/** One watched network as `GET /api/v2/{testnet|mainnet}/networks` shows it. */
export interface NetworkView {
  name: Network;
  /** EVM chain id (what a wallet such as MetaMask asks for); null on TRON and SOLANA. */
  chain_id: number | null;
  /** An RPC URL an outside wallet may use; null when none is configured. */
  rpc_url: string | null;
  confirmations: number;
  tokens: { symbol: string; name: string; address: string; decimals: number }[];
}

/**
 * Which networks this deployment watches per environment, and what a wallet needs to reach them.
 * A network is watched when it has RPC URLs in config, when it is a local sandbox chain (DEV_CHAINS),
 * or when the process was given URLs at start (`markWatched`). Tokens of a network nothing watches
 * are not offered: a payment there would never be detected.
 */
export class NetworkCatalog {
  private readonly watched = new Map<Key, { publicRpcUrl: string | null; rpcUrls: string[] }>();

  constructor(private readonly config: Config) {
    for (const environment of ENVIRONMENTS) {
      for (const network of NETWORKS) {
        const urls = config[`${envKey(environment)}_${network}_RPC_URLS`] as string[] | undefined;
        if (urls?.length || (environment === 'sandbox' && config.DEV_CHAINS)) this.markWatched(environment, network, { rpcUrls: urls ?? [] });
      }
    }
  }

  /**
   * Records a network as watched through `rpcUrls`. A `local` chain is one this process runs: its URL
   * is also the public one, unless config names another.
   */
  markWatched(environment: Environment, network: Network, at: { rpcUrls: string[]; local?: boolean }): void {
    const configured = this.config[`${envKey(environment)}_${network}_PUBLIC_RPC_URL`] as string | undefined;
    const before = this.watched.get(`${environment}:${network}`);
    const rpcUrls = at.rpcUrls.length ? at.rpcUrls : (before?.rpcUrls ?? []);
    this.watched.set(`${environment}:${network}`, {
      rpcUrls,
      publicRpcUrl: configured ?? (at.local ? (at.rpcUrls[0] ?? null) : (before?.publicRpcUrl ?? null)),
    });
  }

  /** RPC URLs this process reaches a watched network by (keyed; never shown to clients). */
  rpcUrls(environment: Environment, network: Network): string[] {
    return this.watched.get(`${environment}:${network}`)?.rpcUrls ?? [];
  }

  isWatched(environment: Environment, network: Network): boolean {
    return this.watched.has(`${environment}:${network}`);
  }

  /** Whether tokens on this network are listed and accepted for quotes and QRs. */
  isOffered(environment: Environment, network: Network): boolean {
    return this.config.OFFER_UNWATCHED_NETWORKS || this.isWatched(environment, network);
  }

  /** Blocks (slots) a payment on this network needs before it counts as confirmed (`<ENV>_<NETWORK>_CONFIRMATIONS`). */
  confirmations(environment: Environment, network: Network): number {
    return this.config[`${envKey(environment)}_${network}_CONFIRMATIONS`] as number;
  }

  async list(em: EntityManager, tokens: TokenService, environment: Environment): Promise<NetworkView[]> {
    const active = await tokens.listActive(em, environment);
    return NETWORKS.filter((n) => this.isWatched(environment, n)).map((network) => ({
      name: network,
      chain_id: networkProfile(environment, network, this.config.DEV_CHAINS).chainId ?? null,
      rpc_url: this.watched.get(`${environment}:${network}`)!.publicRpcUrl,
      confirmations: this.confirmations(environment, network),
      tokens: active.filter((t) => t.network === network).map((t) => ({ symbol: t.symbol, name: t.name, address: t.address, decimals: t.decimals })),
    }));
  }
}
