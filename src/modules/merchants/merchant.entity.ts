import { Entity, OptionalProps, PrimaryKey, Property } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';

/** Merchant-level knobs that are not worth a column each (docs/order-lifecycle.md "Orders"). */
export interface MerchantSettings {
  /** Under-payment tolerance in token base units per decimals-6 unit (0 = exact). */
  paymentToleranceBps?: number;
  /** Logo shown in the hosted checkout's header (merchant.commands.ts `logoUrl` validates it). */
  logoUrl?: string;
}

@Entity({ tableName: 'merchants' })
export class Merchant {
  [OptionalProps]?:
    'platformFeePercent' | 'feeIncluded' | 'settings' | 'createdAt' | 'updatedAt' | 'orderTtlSeconds' | 'notificationUrlSandbox' | 'notificationUrlProduction';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'text' })
  name!: string;

  /** Platform fee percent set by an administrator (decimal string, default "1"). */
  @Property({ type: 'decimal', precision: 7, scale: 4 })
  platformFeePercent: string = '1';

  /** Fee mode: true = seller bears the fee (MDR), false = buyer pays amount + fee. */
  @Property({ type: 'boolean' })
  feeIncluded: boolean = true;

  @Property({ type: 'text', nullable: true })
  notificationUrlSandbox: string | null = null;

  @Property({ type: 'text', nullable: true })
  notificationUrlProduction: string | null = null;

  /** Order lifetime override (seconds); null → config ORDER_TTL_S. */
  @Property({ type: 'integer', nullable: true })
  orderTtlSeconds: number | null = null;

  @Property({ type: 'json' })
  settings: MerchantSettings = {};

  @Property({ type: 'timestamptz' })
  createdAt: Date = new Date();

  @Property({ type: 'timestamptz', onUpdate: () => new Date() })
  updatedAt: Date = new Date();
}
