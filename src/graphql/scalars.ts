import { registerEnumType } from 'type-graphql';

/** GraphQL enum values are upper-case; services use the lower-case internal names. */
export enum EnvironmentEnum {
  SANDBOX = 'sandbox',
  PRODUCTION = 'production',
}
registerEnumType(EnvironmentEnum, { name: 'Environment', description: 'Sandbox (testnets) or production (mainnets)' });

import { NETWORKS, WALLET_TYPES } from '../common/environment.js';
import { ORDER_STATUSES } from '../modules/orders/order.transitions.js';

// The domain's string unions, exposed as GraphQL enums with the same values.
const asEnum = <T extends string>(values: readonly T[]) => Object.fromEntries(values.map((v) => [v, v])) as { [K in T]: K };
export const NetworkEnum = asEnum(NETWORKS);
registerEnumType(NetworkEnum, { name: 'Network' });
export const WalletTypeEnum = asEnum(WALLET_TYPES);
registerEnumType(WalletTypeEnum, { name: 'WalletType' });
export const OrderStatusEnum = asEnum(ORDER_STATUSES);
registerEnumType(OrderStatusEnum, { name: 'OrderStatus', description: 'Created → Processing → Success; Underpaid / Expired at expiry (docs/order-lifecycle.md)' });
