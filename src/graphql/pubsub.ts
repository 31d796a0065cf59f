import { createPubSub, type PubSub } from '@graphql-yoga/subscription';
import type { GraphQLSchema } from 'graphql';
import type { SubscriptionTopics } from '../modules/events/event.catalogue.js';

/** The GraphQL subscription topics (listed with every other event in the event catalogue). */
export type GatewayTopics = SubscriptionTopics;
export type GatewayPubSub = PubSub<GatewayTopics>;

/** In-process PubSub of one API process; fed by its LISTEN connection, read by subscriptions. */
export const createGatewayPubSub = (): GatewayPubSub => createPubSub<GatewayTopics>();

// ---------------------------------------------------------------------------------------------------
// The PubSub a schema was built with. Subscriptions that use type-graphql's `subscribe` option get no
// PubSub argument; they find theirs through `info.schema` (two gateways in one process stay apart).

const schemaPubSubs = new WeakMap<GraphQLSchema, GatewayPubSub>();

export function registerSchemaPubSub(schema: GraphQLSchema, pubSub: GatewayPubSub): void {
  schemaPubSubs.set(schema, pubSub);
}

export function pubSubOf(schema: GraphQLSchema): GatewayPubSub {
  const pubSub = schemaPubSubs.get(schema);
  if (!pubSub) throw new Error('This schema was not built by buildGatewaySchema (no PubSub registered)');
  return pubSub;
}
