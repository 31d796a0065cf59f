import type { EntityManager } from '@mikro-orm/postgresql';
import { driverFor, networkProfile } from '../../chains/registry.js';
import { requireEnvironment } from '../../common/access.js';
import type { RequestContext } from '../../common/context.js';
import { NETWORKS, type Environment, type Network } from '../../common/environment.js';
import { DomainError } from '../../common/errors.js';
import { Token } from './token.entity.js';

/** The token registry: which contracts/mints are accepted per environment and network. */
export class TokenService {
  constructor(
    private readonly devChains: boolean,
    /** Whether a network is offered in an environment (something watches it); default: all are. */
    private readonly offered: (environment: Environment, network: Network) => boolean = () => true,
  ) {}

  /** Active tokens of an environment, on the chain set each network currently uses, on offered networks only (chain watchers: no request). */
  async listActive(em: EntityManager, environment: Environment, network?: Network): Promise<Token[]> {
    const networks = (network ? [network] : [...NETWORKS]).filter((n) => this.offered(environment, n));
    if (!networks.length) return [];
    return em.find(
      Token,
      { environment, active: true, $or: networks.map((n) => ({ network: n, profile: networkProfile(environment, n, this.devChains).profile })) },
      { orderBy: { network: 'asc', symbol: 'asc' } },
    );
  }

  /** `listToken` / `tokens`: the active tokens of the caller's environment. */
  async list(ctx: RequestContext): Promise<Token[]> {
    return this.listActive(ctx.em, requireEnvironment(ctx));
  }

  /** The token a client names by (network, address); refuses unknown and inactive ones clearly. */
  async resolve(ctx: RequestContext, environment: Environment, network: Network, address: string): Promise<Token> {
    const driver = driverFor(network);
    if (!driver.isValidAddress(address)) {
      throw new DomainError('TOKEN_NOT_SUPPORTED', `tokenAddress is not a valid ${network} address`, { network, tokenAddress: address });
    }
    const canonical = driver.normalizeAddress(address);
    if (!this.offered(environment, network)) {
      throw new DomainError(
        'NETWORK_NOT_WATCHED',
        `${network} is not watched in ${environment === 'production' ? 'production' : 'sandbox'}: a payment there would never be detected; see /networks`,
        { network },
      );
    }
    const { profile } = networkProfile(environment, network, this.devChains);
    const token = await ctx.em.findOne(Token, { environment, network, profile, address: canonical });
    const envName = environment === 'production' ? 'production' : 'sandbox';
    if (!token)
      throw new DomainError('TOKEN_NOT_SUPPORTED', `Token ${canonical} is not supported on ${network} in ${envName}; see /listToken`, {
        network,
        tokenAddress: canonical,
      });
    if (!token.active)
      throw new DomainError('TOKEN_NOT_SUPPORTED', `Token ${token.symbol} on ${network} is not active in ${envName}`, { network, tokenAddress: canonical });
    return token;
  }

  /** Adds or reactivates a token (operators, test chains: no request). Idempotent. */
  async upsert(
    em: EntityManager,
    t: { environment: Environment; network: Network; symbol: string; name: string; address: string; decimals: number },
  ): Promise<Token> {
    const { profile } = networkProfile(t.environment, t.network, this.devChains);
    const address = driverFor(t.network).normalizeAddress(t.address);
    await em.execute(
      `insert into tokens (id, environment, network, profile, symbol, name, address, decimals, active) values (gen_random_uuid(), ?, ?, ?, ?, ?, ?, ?, true)
         on conflict (environment, network, profile, address) do update set active = true, symbol = excluded.symbol, name = excluded.name, decimals = excluded.decimals`,
      [t.environment, t.network, profile, t.symbol, t.name, address, t.decimals],
    );
    return em.findOneOrFail(Token, { environment: t.environment, network: t.network, profile, address }, { refresh: true });
  }
}
