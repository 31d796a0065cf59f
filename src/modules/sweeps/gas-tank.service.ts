import type { EntityManager } from '@mikro-orm/postgresql';
import { mnemonicToSeedSync } from '@scure/bip39';
import type { Logger } from 'pino';
import type { ChainAdapter } from '../../chains/chain-adapter.js';
import { driverFor } from '../../chains/registry.js';
import type { Environment, Network } from '../../common/environment.js';

/** A gas tank's state as operators see it (GraphQL `gasTanks`, `/readyz` details, logs). */
export interface GasTankState {
  environment: Environment;
  network: Network;
  address: string;
  /** Native base units at the last check (null before the first one). */
  balance: bigint | null;
  lowThreshold: bigint;
  /** Below the threshold, or unable to pay the sweeps waiting for it. */
  low: boolean;
  /** Native units the sweeps waiting for this tank need now (0 when none wait). */
  needed: bigint;
  checkedAt: Date | null;
}

/**
 * What an operator must do about a tank: `ok`; `low` (below its threshold or short of what waiting
 * sweeps need: they wait, nothing fails; refill it); `unfunded` (holds nothing, or never read).
 */
export type GasTankHealth = 'ok' | 'low' | 'unfunded';

export function gasTankHealth(t: Pick<GasTankState, 'balance' | 'low'>): GasTankHealth {
  if (t.balance === null || t.balance === 0n) return 'unfunded';
  return t.low ? 'low' : 'ok';
}

export interface GasTankOptions {
  /** Mnemonic per environment (config GAS_TANK_MNEMONIC_*); an environment without one has no tanks. */
  mnemonics: Partial<Record<Environment, string>>;
  lowThreshold: (network: Network) => bigint;
  log: Logger;
  /**
   * Tanks whose key is fixed elsewhere (the local dev EVM chains: their Sweeper contract obeys one
   * known dev key, `DEV_GAS_TANK_EVM_KEY`); keyed `environment:network`.
   */
  fixed?: Partial<Record<`${Environment}:${Network}`, { key: string; address: string }>>;
}

/**
 * One gas tank per environment and network: a hot wallet derived from the environment's tank
 * mnemonic (never a merchant's seed) at index 0 through the network's driver. It pays sweeps' network
 * fees. Keys are derived only to sign and never leave the caller; addresses are public (operators
 * fund them, settlement-wallet validation refuses them).
 */
export class GasTankService {
  private readonly addresses = new Map<string, string>();
  private readonly seeds = new Map<Environment, Uint8Array>();

  constructor(private readonly opts: GasTankOptions) {}

  /** Whether `environment` has tanks (a mnemonic is configured). */
  enabled(environment: Environment, network?: Network): boolean {
    return Boolean(this.opts.mnemonics[environment]) || (network !== undefined && Boolean(this.opts.fixed?.[`${environment}:${network}`]));
  }

  private seed(environment: Environment): Uint8Array {
    const mnemonic = this.opts.mnemonics[environment];
    if (!mnemonic) throw new Error(`No gas tank mnemonic configured for ${environment}`);
    let seed = this.seeds.get(environment);
    if (!seed) {
      seed = mnemonicToSeedSync(mnemonic);
      this.seeds.set(environment, seed);
    }
    return seed;
  }

  /** The tank's address (canonical form); null when the environment has no tank mnemonic. */
  address(environment: Environment, network: Network): string | null {
    const fixed = this.opts.fixed?.[`${environment}:${network}`];
    if (fixed) return fixed.address;
    if (!this.enabled(environment)) return null;
    const key = `${environment}:${network}`;
    let address = this.addresses.get(key);
    if (!address) {
      address = driverFor(network).deriveAddress(this.seed(environment), 0);
      this.addresses.set(key, address);
    }
    return address;
  }

  /** Whether `address` is one of the tanks of `environment` on `network` (settlement-wallet validation refuses them). */
  isTankAddress(environment: Environment, network: Network, address: string): boolean {
    const tank = this.address(environment, network);
    const driver = driverFor(network);
    return tank !== null && driver.isValidAddress(address) && driver.addressKey(driver.normalizeAddress(address)) === driver.addressKey(tank);
  }

  /** The tank's private key, for one signing only: the caller must not keep, log or return it. */
  signingKey(environment: Environment, network: Network): Uint8Array {
    const fixed = this.opts.fixed?.[`${environment}:${network}`];
    if (fixed) return Uint8Array.from(Buffer.from(fixed.key.replace(/^0x/, ''), 'hex'));
    return driverFor(network).derivePrivateKey(this.seed(environment), 0);
  }

  /**
   * Reads the tank's balance (RPC, outside any transaction), stores its state and logs a change to
   * or from `low`. `needed`: what the sweeps waiting for the tank need now.
   */
  async refresh(em: EntityManager, environment: Environment, adapter: ChainAdapter, needed = 0n): Promise<GasTankState | null> {
    const address = this.address(environment, adapter.network);
    if (!address || !adapter.sweeps) return null;
    const balance = await adapter.sweeps.nativeBalance(address);
    const threshold = this.opts.lowThreshold(adapter.network);
    const low = balance < threshold || balance < needed;
    const rows = await em.execute<{ was_low: boolean | null }[]>(
      `with prev as (select low from gas_tanks where environment = ? and network = ?)
       insert into gas_tanks (environment, network, address, balance, low_threshold, low, needed, checked_at) values (?, ?, ?, ?, ?, ?, ?, now())
       on conflict (environment, network) do update set address = excluded.address, balance = excluded.balance, low_threshold = excluded.low_threshold,
         low = excluded.low, needed = excluded.needed, checked_at = excluded.checked_at
       returning (select low from prev) as was_low`,
      [environment, adapter.network, environment, adapter.network, address, balance.toString(), threshold.toString(), low, needed.toString()],
    );
    const wasLow = rows[0]?.was_low ?? false;
    const fields = {
      environment,
      network: adapter.network,
      tank: address,
      balance: balance.toString(),
      threshold: threshold.toString(),
      needed: needed.toString(),
    };
    if (low && !wasLow) this.opts.log.warn(fields, 'gas tank low: sweeps wait until it is refilled');
    else if (!low && wasLow) this.opts.log.info(fields, 'gas tank refilled');
    return { environment, network: adapter.network, address, balance, lowThreshold: threshold, low, needed, checkedAt: new Date() };
  }

  /** Every tank's last stored state (operators' query, `/readyz` details). */
  async states(em: EntityManager): Promise<GasTankState[]> {
    const rows = await em.execute<
      {
        environment: Environment;
        network: Network;
        address: string;
        balance: string | null;
        low_threshold: string;
        low: boolean;
        needed: string;
        checked_at: Date | null;
      }[]
    >(`select environment, network, address, balance::text, low_threshold::text, low, needed::text, checked_at from gas_tanks order by environment, network`);
    return rows.map((r) => ({
      environment: r.environment,
      network: r.network,
      address: r.address,
      balance: r.balance === null ? null : BigInt(r.balance),
      lowThreshold: BigInt(r.low_threshold),
      low: r.low,
      needed: BigInt(r.needed),
      checkedAt: r.checked_at ? new Date(r.checked_at) : null,
    }));
  }
}
