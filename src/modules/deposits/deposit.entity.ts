import { Entity, Index, ManyToOne, OptionalProps, PrimaryKey, Property, Unique, type Rel } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import type { ChainFamily } from '../../chains/chain-adapter.js';
import type { Environment, Network, WalletType } from '../../common/environment.js';
import { AmountType } from '../../db/types.js';
import { Order } from '../orders/order.entity.js';
import { Quote } from '../quotes/quote.entity.js';
import { Token } from '../tokens/token.entity.js';
import { MerchantWallet } from './wallet.entity.js';
import type { DepositStatus } from './deposit.transitions.js';

/**
 * Where one order is paid with one token: an address at a fresh HD index (never reused — unique on
 * wallet, family and index) and the exact amount to send. One per (order, token).
 */
@Entity({ tableName: 'deposits' })
@Unique({ properties: ['order', 'token'] })
@Unique({ properties: ['wallet', 'family', 'derivationIndex'] })
@Index({ properties: ['environment', 'network', 'status'] })
export class Deposit {
  [OptionalProps]?: 'status' | 'createdAt' | 'watchAddress' | 'cursor' | 'watchSeen' | 'watchSeenAt' | 'amountReceived';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => Order, { fieldName: 'order_id' })
  order!: Rel<Order>;

  @ManyToOne(() => Token, { fieldName: 'token_id' })
  token!: Rel<Token>;

  @ManyToOne(() => Quote, { fieldName: 'quote_id' })
  quote!: Rel<Quote>;

  @ManyToOne(() => MerchantWallet, { fieldName: 'wallet_id' })
  wallet!: Rel<MerchantWallet>;

  @Property({ type: 'text' })
  environment!: Environment;

  @Property({ type: 'text' })
  network!: Network;

  @Property({ type: 'text' })
  family!: ChainFamily;

  @Property({ type: 'integer' })
  derivationIndex!: number;

  /** Deposit address shown to the customer (SOLANA: the owner; funds land in its token account). */
  @Property({ type: 'text' })
  address!: string;

  /** Address the watcher looks at, when it differs (SOLANA associated token account). */
  @Property({ type: 'text', nullable: true })
  watchAddress: string | null = null;

  /** Wallet chosen at creation (the QR is rebuilt per wallet on later calls). */
  @Property({ type: 'text' })
  walletType!: WalletType;

  /** 1..999, unique among the open deposits of the same wallet (merchant and environment), network and token. */
  @Property({ type: 'integer' })
  uniqueCode!: number;

  @Property({ type: AmountType }) uniqueCodeAmount!: bigint;
  /** What the customer must send, exactly: quote total + unique code amount. */
  @Property({ type: AmountType }) totalAmount!: bigint;
  /** IDR value of totalAmount (quote total IDR + the code's IDR value, rounded down). */
  @Property({ type: AmountType }) totalAmountFiat!: bigint;

  @Property({ type: 'text' })
  status: DepositStatus = 'open';

  /** Confirmed token units received (settlement keeps it; payments are the source of truth). */
  @Property({ type: AmountType })
  amountReceived: bigint = 0n;

  /** Watcher cursor for per-address polling (SOLANA newest signature). */
  @Property({ type: 'text', nullable: true })
  cursor: string | null = null;

  /** Account-polling watchers: the deposit's token accounts as last listed in full (opaque to all but the adapter). */
  @Property({ type: 'text', nullable: true })
  watchSeen: string | null = null;

  /** When `watchSeen` was read (a sweep that moved after it asks for another listing). */
  @Property({ type: 'timestamptz', nullable: true })
  watchSeenAt: Date | null = null;

  @Property({ type: 'timestamptz' })
  expiresAt!: Date;

  @Property({ type: 'timestamptz' })
  createdAt: Date = new Date();
}
