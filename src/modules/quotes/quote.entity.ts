import { Entity, ManyToOne, OptionalProps, PrimaryKey, Property, Unique, type Rel } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import type { Network } from '../../common/environment.js';
import { AmountType } from '../../db/types.js';
import { Order } from '../orders/order.entity.js';
import { Token } from '../tokens/token.entity.js';

/** The rate and fees locked for (order, token). Final: later calls and the deposit reuse it. */
@Entity({ tableName: 'quotes' })
@Unique({ properties: ['order', 'token'] })
export class Quote {
  [OptionalProps]?: 'lockedAt';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => Order, { fieldName: 'order_id' })
  order!: Rel<Order>;

  @ManyToOne(() => Token, { fieldName: 'token_id' })
  token!: Rel<Token>;

  @Property({ type: 'text' })
  network!: Network;

  @Property({ type: 'integer' })
  decimals!: number;

  /** Rate source id (`indodax`, `coingecko`) or `fallback`. */
  @Property({ type: 'text' })
  rateSource!: string;

  /** IDR per whole token, decimal string. */
  @Property({ type: 'text' })
  cryptoRate!: string;

  @Property({ type: AmountType }) amountIdr!: bigint;
  @Property({ type: AmountType }) amountCrypto!: bigint;
  @Property({ type: 'text' }) feePercent!: string;
  @Property({ type: 'boolean' }) feeIncluded!: boolean;
  @Property({ type: AmountType }) feeAmountIdr!: bigint;
  @Property({ type: AmountType }) feeAmountCrypto!: bigint;
  @Property({ type: AmountType }) totalIdr!: bigint;
  @Property({ type: AmountType }) totalCrypto!: bigint;
  @Property({ type: AmountType }) merchantReceivesIdr!: bigint;
  @Property({ type: AmountType }) merchantReceivesCrypto!: bigint;

  @Property({ type: 'timestamptz' })
  lockedAt: Date = new Date();
}
