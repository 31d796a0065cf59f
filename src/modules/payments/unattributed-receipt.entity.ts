import { Entity, Index, ManyToOne, OptionalProps, PrimaryKey, Property, Unique, type Rel } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import type { Environment, Network } from '../../common/environment.js';
import { AmountType } from '../../db/types.js';
import { Deposit } from '../deposits/deposit.entity.js';
import { Order } from '../orders/order.entity.js';
import { Token } from '../tokens/token.entity.js';
import type { PaymentStatus } from './payment.transitions.js';

/**
 * Why a receipt at a deposit address is not the deposit's payment:
 * - `late`: it arrived after the deposit closed (the order's late window was over);
 * - `wrong_token`: another watched token of the deposit's network (USDC sent to a USDT deposit);
 * - `wrong_network`: a watched token of another network of the same family (the EVM address on the other EVM chain);
 * - `native_coin`: the network's native coin (ETH, BNB, TRX) sent by a transaction's own value; no token.
 */
export const RECEIPT_REASONS = ['late', 'wrong_token', 'wrong_network', 'native_coin'] as const;
export type ReceiptReason = (typeof RECEIPT_REASONS)[number];

/** A transfer into a deposit address that never counts toward its order; recorded once, reported to the merchant. */
@Entity({ tableName: 'unattributed_receipts' })
@Unique({ properties: ['environment', 'network', 'txHash', 'logIndex'] })
@Index({ properties: ['order'] })
export class UnattributedReceipt {
  [OptionalProps]?: 'status' | 'detectedAt' | 'confirmedAt' | 'orphanedAt';

  @PrimaryKey({ type: 'uuid' }) id: string = randomUUID();
  @Property({ type: 'text' }) environment!: Environment;
  /** The network the transfer happened on (for `wrong_network`, not the deposit's). */
  @Property({ type: 'text' }) network!: Network;
  @Property({ type: 'text' }) txHash!: string;
  @Property({ type: 'integer' }) logIndex!: number;
  @Property({ type: 'bigint' }) blockNumber!: string;
  @Property({ type: 'text' }) blockHash!: string;
  /** The token that arrived (a registry token of `network`); null for `native_coin` (the network's native coin). */
  @ManyToOne(() => Token, { fieldName: 'token_id', nullable: true, deleteRule: 'no action' }) token!: Rel<Token> | null;
  @ManyToOne(() => Deposit, { fieldName: 'deposit_id' }) deposit!: Rel<Deposit>;
  @ManyToOne(() => Order, { fieldName: 'order_id' }) order!: Rel<Order>;
  @Property({ type: 'text' }) fromAddress!: string;
  @Property({ type: 'text' }) toAddress!: string;
  @Property({ type: AmountType }) amount!: bigint;
  @Property({ type: 'text' }) reason!: ReceiptReason;
  /** pending → confirmed | orphaned, by the same rule and reorg check as payments. */
  @Property({ type: 'text' }) status: PaymentStatus = 'pending';
  @Property({ type: 'timestamptz' }) detectedAt: Date = new Date();
  @Property({ type: 'timestamptz', nullable: true }) confirmedAt: Date | null = null;
  @Property({ type: 'timestamptz', nullable: true }) orphanedAt: Date | null = null;
}
