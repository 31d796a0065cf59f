import { Entity, ManyToOne, OptionalProps, PrimaryKey, Property, Unique, type Rel } from '@mikro-orm/core';
import { uuid7 } from '../../common/uuid7.js';
import type { Environment, Network } from '../../common/environment.js';
import { AmountType } from '../../db/types.js';
import { Merchant } from '../merchants/merchant.entity.js';
import type { OrderStatus } from './order.transitions.js';

export type OrderSource = 'api' | 'payment_link';

@Entity({ tableName: 'orders' })
@Unique({ properties: ['merchant', 'environment', 'orderNo'] })
// (merchant, environment, created_at) INCLUDE (paid facts) is owned by migration 000800: MikroORM cannot express INCLUDE.
export class Order {
  [OptionalProps]?:
    | 'status'
    | 'currency'
    | 'createdAt'
    | 'updatedAt'
    | 'customerName'
    | 'customerEmail'
    | 'paymentLinkId'
    | 'paidAt'
    | 'source'
    | 'checkoutKeyHash'
    | 'checkoutKeyExpiresAt'
    | 'overpaid'
    | 'reorged'
    | 'successUrl'
    | 'cancelUrl'
    | 'autoRedirect'
    | 'linkUseHeld'
    | 'paidDepositId'
    | 'paidNetwork'
    | 'paidTokenId'
    | 'paidDecimals'
    | 'paidAmount'
    | 'receivedIdr'
    | 'feeIdr'
    | 'netIdr';

  @PrimaryKey({ type: 'uuid' })
  id: string = uuid7();

  @ManyToOne(() => Merchant, { fieldName: 'merchant_id' })
  merchant!: Rel<Merchant>;

  @Property({ type: 'text' })
  environment!: Environment;

  @Property({ type: 'text' })
  orderNo!: string;

  /** IDR, whole rupiah. */
  @Property({ type: AmountType })
  amount!: bigint;

  @Property({ type: 'text' })
  currency: string = 'IDR';

  /** Written only by OrderStatusService through the transition table. */
  @Property({ type: 'text' })
  status: OrderStatus = 'Created';

  @Property({ type: 'text', nullable: true })
  customerName: string | null = null;

  @Property({ type: 'text', nullable: true })
  customerEmail: string | null = null;

  @Property({ type: 'text' })
  source: OrderSource = 'api';

  @Property({ type: 'uuid', nullable: true })
  paymentLinkId: string | null = null;

  /** Holds one of its payment link's uses (reserved at open, released on unpaid expiry: payment-links/link-use.ts). */
  @Property({ type: 'boolean' })
  linkUseHeld: boolean = false;

  /** SHA-256 of the scoped checkout key; the key itself is returned once. */
  /** Found through the order id inside the key (primary key), so no index of its own. */
  @Property({ type: 'text', nullable: true })
  checkoutKeyHash: string | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  checkoutKeyExpiresAt: Date | null = null;

  @Property({ type: 'timestamptz' })
  expiresAt!: Date;

  @Property({ type: 'timestamptz', nullable: true })
  paidAt: Date | null = null;

  /** Confirmed receipts exceeded the total due (the excess is recorded, never lost). */
  @Property({ type: 'boolean' })
  overpaid: boolean = false;

  /** A payment of this order that had been confirmed was reorganised away (a reorg deeper than the confirmation depth). */
  @Property({ type: 'boolean' })
  reorged: boolean = false;

  // Facts of the paying deposit, copied by OrderStatusService when the order becomes Success (so
  // dashboards filter and aggregate the orders table alone). Null until then.
  @Property({ type: 'uuid', nullable: true })
  paidDepositId: string | null = null;

  @Property({ type: 'text', nullable: true })
  paidNetwork: Network | null = null;

  @Property({ type: 'uuid', nullable: true })
  paidTokenId: string | null = null;

  @Property({ type: 'int', nullable: true })
  paidDecimals: number | null = null;

  /** Confirmed base units received on the paying deposit (refreshed when an overpayment is flagged). */
  @Property({ type: AmountType, nullable: true })
  paidAmount: bigint | null = null;

  /** IDR actually received: confirmed receipts at the locked quotes (order-revenue.sql.ts); null until something arrived. */
  @Property({ type: AmountType, nullable: true })
  receivedIdr: bigint | null = null;

  /** Platform fee, IDR, on the money received only (a half-paid order: half the fee). */
  @Property({ type: AmountType, nullable: true })
  feeIdr: bigint | null = null;

  /** What the merchant keeps of the money received, IDR: received − fee. */
  @Property({ type: AmountType, nullable: true })
  netIdr: bigint | null = null;

  /** Hosted checkout's way back to the shop (optional; see src/modules/orders/return-urls.ts). */
  @Property({ type: 'text', nullable: true })
  successUrl: string | null = null;

  @Property({ type: 'text', nullable: true })
  cancelUrl: string | null = null;

  @Property({ type: 'boolean' })
  autoRedirect: boolean = false;

  @Property({ type: 'timestamptz' })
  createdAt: Date = new Date();

  @Property({ type: 'timestamptz', onUpdate: () => new Date() })
  updatedAt: Date = new Date();
}

/** The fields every order view reads: a managed Order, or the plain row the hot-path insert returns. */
export type OrderRecord = Pick<
  Order,
  | 'id'
  | 'environment'
  | 'orderNo'
  | 'amount'
  | 'currency'
  | 'status'
  | 'customerName'
  | 'customerEmail'
  | 'source'
  | 'paymentLinkId'
  | 'expiresAt'
  | 'paidAt'
  | 'createdAt'
> &
  Partial<Pick<Order, 'overpaid' | 'reorged' | 'paidNetwork' | 'paidTokenId' | 'paidDecimals' | 'paidAmount' | 'receivedIdr' | 'feeIdr' | 'netIdr'>> & {
    merchant: { id: string };
  };
