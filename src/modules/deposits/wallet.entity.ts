import { Entity, ManyToOne, OptionalProps, PrimaryKey, Property, Unique, type Rel } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import type { Environment } from '../../common/environment.js';
import { Merchant } from '../merchants/merchant.entity.js';

/** The merchant's HD wallet for one environment: a BIP-39 seed generated here, sealed at rest (the data key, docs/security.md "Keys at rest"). */
@Entity({ tableName: 'merchant_wallets' })
@Unique({ properties: ['merchant', 'environment'] })
export class MerchantWallet {
  [OptionalProps]?: 'createdAt';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => Merchant, { fieldName: 'merchant_id' })
  merchant!: Rel<Merchant>;

  @Property({ type: 'text' })
  environment!: Environment;

  /** AES-256-GCM sealed mnemonic (aad = `wallet:<id>`). */
  @Property({ type: 'text', hidden: true })
  mnemonicCiphertext!: string;

  @Property({ type: 'timestamptz' })
  createdAt: Date = new Date();
}
