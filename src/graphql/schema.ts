import { lexicographicSortSchema, printSchema, type GraphQLSchema } from 'graphql';
import 'reflect-metadata';
import { buildSchema, type NonEmptyArray } from 'type-graphql';
import { MerchantResolver } from '../modules/merchants/merchant.resolver.js';
import { SecondFactorResolver } from '../modules/merchants/second-factor.resolver.js';
import { AuditEventConnectionResolver, AuditResolver } from '../modules/audit/audit.resolver.js';
import { PaymentLinkConnectionResolver, PaymentLinkResolver } from '../modules/payment-links/payment-link.resolver.js';
import { OrderConnectionResolver, OrderResolver } from '../modules/orders/order.resolver.js';
import { OrderFeedResolver } from '../modules/orders/order-feed.resolver.js';
import { OrderSubscriptionResolver } from '../modules/orders/order-subscription.resolver.js';
import { WebhookDeliveryPageResolver, WebhookResolver } from '../modules/webhooks/webhook.resolver.js';
import { PaymentConnectionResolver, PaymentFieldsResolver, PaymentResolver } from '../modules/payments/payment.resolver.js';
import { ReconciliationResolver } from '../modules/reconciliation/reconciliation.resolver.js';
import { SettlementWalletResolver } from '../modules/settlement-wallets/settlement-wallet.resolver.js';
import { GasTankResolver } from '../modules/sweeps/gas-tank.resolver.js';
import { SweepResolver, SweepConnectionResolver } from '../modules/sweeps/sweep.resolver.js';
import {
  DepositRefundableResolver,
  OrderRefundsResolver,
  ReceiptRefundableResolver,
  ReceiptRefundsResolver,
  RefundConnectionResolver,
  RefundExplorerResolver,
  RefundResolver,
} from '../modules/refunds/refund.resolver.js';
import { TeamResolver } from '../modules/teams/team.resolver.js';
import { authChecker } from './auth-checker.js';
import { DateTimeScalar } from './scalars.js';
import { NetworkHealthResolver } from '../modules/payments/network-health.resolver.js';
import { createGatewayPubSub, registerSchemaPubSub, type GatewayPubSub } from './pubsub.js';

// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
export const resolvers: NonEmptyArray<Function> = [
  MerchantResolver,
  SecondFactorResolver,
  OrderResolver,
  OrderConnectionResolver,
  PaymentLinkResolver,
  PaymentLinkConnectionResolver,
  PaymentResolver,
  PaymentConnectionResolver,
  PaymentFieldsResolver,
  OrderSubscriptionResolver,
  OrderFeedResolver,
  WebhookResolver,
  WebhookDeliveryPageResolver,
  ReconciliationResolver,
  SettlementWalletResolver,
  GasTankResolver,
  NetworkHealthResolver,
  AuditResolver,
  AuditEventConnectionResolver,
  SweepResolver,
  RefundResolver,
  RefundConnectionResolver,
  OrderRefundsResolver,
  ReceiptRefundsResolver,
  RefundExplorerResolver,
  DepositRefundableResolver,
  ReceiptRefundableResolver,
  SweepConnectionResolver,
  TeamResolver,
];

/** `pubSub`: the process's PubSub, fed by the LISTEN connection (runtime.ts); a private one if omitted (SDL, tests). */
export async function buildGatewaySchema(pubSub: GatewayPubSub = createGatewayPubSub()): Promise<GraphQLSchema> {
  const schema = await buildSchema({
    resolvers,
    authChecker,
    scalarsMap: [{ type: Date, scalar: DateTimeScalar }],
    validate: false,
    pubSub,
    emitSchemaFile: false,
  });
  registerSchemaPubSub(schema, pubSub);
  return schema;
}

/** The SDL committed in `schema/schema.graphql` (sorted, so it diffs cleanly). */
export function printGatewaySchema(schema: GraphQLSchema): string {
  return printSchema(lexicographicSortSchema(schema)) + '\n';
}
