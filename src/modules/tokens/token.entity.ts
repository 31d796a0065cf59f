import { Entity, OptionalProps, PrimaryKey, Property, Unique } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import type { TokenProfile } from '../../chains/registry.js';
import type { Environment, Network } from '../../common/environment.js';

/** A stablecoin contract (EVM/TRON) or mint (SOLANA) accepted in one environment and network. */
@Entity({ tableName: 'tokens' })
@Unique({ properties: ['environment', 'network', 'profile', 'address'] })
export class Token {
  [OptionalProps]?: 'active' | 'createdAt';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'text' })
  environment!: Environment;

  @Property({ type: 'text' })
  network!: Network;

  /** Which chain set the address lives on (mainnet, public testnet, local dev chain). */
  @Property({ type: 'text' })
  profile!: TokenProfile;

  @Property({ type: 'text' })
  symbol!: string;

  @Property({ type: 'text' })
  name!: string;

  /** Canonical address: EVM checksum, TRON base58, Solana base58 mint. */
  @Property({ type: 'text' })
  address!: string;

  @Property({ type: 'integer' })
  decimals!: number;

  @Property({ type: 'boolean' })
  active: boolean = true;

  @Property({ type: 'timestamptz' })
  createdAt: Date = new Date();
}
