import { Field, ObjectType, registerEnumType } from 'type-graphql';
import { PageInfo } from '../../graphql/connection.js';
import { PaymentType } from '../orders/order.types.js';

/** GraphQL enum values are upper-case; payments use the lower-case status names. */
export enum PaymentStatusEnum {
  PENDING = 'pending',
  CONFIRMED = 'confirmed',
  ORPHANED = 'orphaned',
}
registerEnumType(PaymentStatusEnum, { name: 'PaymentStatus', description: 'pending → confirmed, or orphaned (its block was reorganised away; never counts)' });

@ObjectType()
export class PaymentEdge {
  @Field() cursor!: string;
  @Field(() => PaymentType) node!: PaymentType;
}

@ObjectType({ description: 'A page of payments, newest detected first (Relay connection)' })
export class PaymentConnection {
  @Field(() => [PaymentEdge]) edges!: PaymentEdge[];
  @Field(() => PageInfo) pageInfo!: PageInfo;
  /** Counts the filtered payments (one statement), only when `totalCount` is selected. */
  count!: () => Promise<number>;
}
