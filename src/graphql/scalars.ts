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
registerEnumType(OrderStatusEnum, {
  name: 'OrderStatus',
  description: 'Created → Processing → Success; Underpaid / Expired at expiry (docs/order-lifecycle.md)',
});

import { GraphQLScalarType } from 'graphql';
import { GraphQLDateTimeISO } from 'graphql-scalars';
/** Every time in GraphQL: ISO-8601 in UTC (`2026-11-23T05:06:07.123Z`). REST keeps the spec's Unix seconds. */
export const DateTimeScalar = new GraphQLScalarType({
  ...GraphQLDateTimeISO.toConfig(),
  name: 'DateTime',
  description: 'ISO-8601 date-time in UTC, e.g. 2026-11-23T05:06:07.123Z',
});

import { ORDER_SORTS, SORT_DIRECTIONS, STATS_GROUPS } from '../modules/orders/order.commands.js';
export const OrderSortEnum = asEnum(ORDER_SORTS);
registerEnumType(OrderSortEnum, { name: 'OrderSort', description: 'CREATED_AT (default), AMOUNT (IDR) or PAID_AT (paid orders only)' });
export const SortDirectionEnum = asEnum(SORT_DIRECTIONS);
registerEnumType(SortDirectionEnum, { name: 'SortDirection' });
export const OrderStatsGroupEnum = asEnum(STATS_GROUPS);
registerEnumType(OrderStatsGroupEnum, {
  name: 'OrderStatsGroup',
  description: 'DAY or HOUR (local to timeZone, by creation time), STATUS, NETWORK / TOKEN (paying)',
});
