import { unwrapResolverError } from '@apollo/server/errors';
import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import type { Logger } from 'pino';
import { ArgumentValidationError } from 'type-graphql';
import { isDomainError } from '../common/errors.js';
import { unavailableError } from '../db/connection.errors.js';

// Codes GraphQL/Apollo themselves produce for client mistakes; passed through unchanged.
const CLIENT_CODES = new Set([
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'BAD_USER_INPUT',
  'BAD_REQUEST',
  'PERSISTED_QUERY_NOT_FOUND',
  'PERSISTED_QUERY_NOT_SUPPORTED',
  'OPERATION_RESOLUTION_FAILURE',
]);

/** The one GraphQL error mapping: domain errors keep their code; anything unknown is INTERNAL, logged, text hidden. */
export function formatGraphqlError(log: Logger) {
  return (formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError => {
    const unwrapped = unwrapResolverError(error);
    // Errors raised outside resolvers (operation limits, rate limits) carry their DomainError as originalError.
    const carried = unwrapped instanceof GraphQLError && isDomainError(unwrapped.originalError) ? unwrapped.originalError : unwrapped;
    const original = unavailableError(carried) ?? carried;
    if (isDomainError(original)) {
      return {
        message: original.message,
        path: formatted.path,
        locations: formatted.locations,
        extensions: { code: original.code, ...(original.details ?? {}) },
      };
    }
    if (original instanceof ArgumentValidationError) {
      return { message: 'Invalid arguments', path: formatted.path, extensions: { code: 'BAD_USER_INPUT' } };
    }
    const code = formatted.extensions?.code;
    if (typeof code === 'string' && CLIENT_CODES.has(code)) {
      return { message: formatted.message, locations: formatted.locations, path: formatted.path, extensions: { code } };
    }
    log.error({ err: original }, 'graphql resolver failed');
    return { message: 'Internal server error', path: formatted.path, extensions: { code: 'INTERNAL' } };
  };
}
