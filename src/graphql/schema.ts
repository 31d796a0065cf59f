import { lexicographicSortSchema, printSchema, type GraphQLSchema } from 'graphql';
import 'reflect-metadata';
import { buildSchema, type NonEmptyArray, type PubSub } from 'type-graphql';
import { MerchantResolver } from '../modules/merchants/merchant.resolver.js';
import { authChecker } from './auth-checker.js';

// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
export const resolvers: NonEmptyArray<Function> = [MerchantResolver];

export async function buildGatewaySchema(pubSub?: PubSub): Promise<GraphQLSchema> {
  return buildSchema({ resolvers, authChecker, validate: false, pubSub, emitSchemaFile: false });
}

/** The SDL committed in `schema/schema.graphql` (sorted, so it diffs cleanly). */
export function printGatewaySchema(schema: GraphQLSchema): string {
  return printSchema(lexicographicSortSchema(schema)) + '\n';
}
