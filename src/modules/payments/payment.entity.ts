import { Entity, Index, ManyToOne, OptionalProps, PrimaryKey, Property, Unique, type Rel } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import type { Environment, Network } from '../../common/environment.js';
import { AmountType } from '../../db/types.js';
import { Deposit } from '../deposits/deposit.entity.js';
import { Order } from '../orders/order.entity.js';
import { Token } from '../tokens/token.entity.js';
import type { PaymentStatus } from './payment.transitions.js';

/** A token transfer into a deposit address, as observed on chain. Recorded once; never deleted. */
@Entity({ tableName: 'payments' })
@Unique({ properties: ['environment', 'network', 'txHash', 'logIndex'] })
@Index({ properties: ['order'] })
/** The GraphQL `payments` connection: an environment's payments, newest detected first. */
@Index({ properties: ['environment', 'detectedAt'] })
export class Payment {
  [OptionalProps]?: 'status' | 'late' | 'detectedAt' | 'confirmedAt' | 'orphanedAt' | 'reorgedAt' | 'reorgReportedAt';

  @PrimaryKey({ type: 'uuid' }) id: string = randomUUID();
  @Property({ type: 'text' }) environment!: Environment;
  @Property({ type: 'text' }) network!: Network;
  @Property({ type: 'text' }) txHash!: string;
  @Property({ type: 'integer' }) logIndex!: number;
  @Property({ type: 'bigint' }) blockNumber!: string;
  @Property({ type: 'text' }) blockHash!: string;
  @ManyToOne(() => Token, { fieldName: 'token_id' }) token!: Rel<Token>;
  @ManyToOne(() => Deposit, { fieldName: 'deposit_id' }) deposit!: Rel<Deposit>;
  @ManyToOne(() => Order, { fieldName: 'order_id' }) order!: Rel<Order>;
  @Property({ type: 'text' }) fromAddress!: string;
  @Property({ type: 'text' }) toAddress!: string;
  @Property({ type: AmountType }) amount!: bigint;
  @Property({ type: 'text' }) status: PaymentStatus = 'pending';
  /** Arrived after the order's expiry. */
  @Property({ type: 'boolean' }) late: boolean = false;
  @Property({ type: 'timestamptz' }) detectedAt: Date = new Date();
  @Property({ type: 'timestamptz', nullable: true }) confirmedAt: Date | null = null;
  @Property({ type: 'timestamptz', nullable: true }) orphanedAt: Date | null = null;
  /** Last time it left the canonical chain after it was confirmed (a reorg deeper than the confirmation depth). */
  @Property({ type: 'timestamptz', nullable: true }) reorgedAt: Date | null = null;
  /** The reorg a `payment.reorged` event was raised for (equal to reorgedAt once reported). */
  @Property({ type: 'timestamptz', nullable: true }) reorgReportedAt: Date | null = null;
}
