import { Field, FieldResolver, Int, ObjectType, Resolver, Root, type ClassType } from 'type-graphql';

/**
 * Relay connections, the one pagination style of the GraphQL API: `edges { cursor node }`,
 * `pageInfo`, `totalCount`. Cursors are opaque (src/common/cursor.ts); only forward paging
 * (`first`/`after`) is offered, so `hasPreviousPage` says whether `after` was given.
 */
@ObjectType()
export class PageInfo {
  @Field() hasNextPage!: boolean;
  @Field({ description: 'true when the page was asked for with `after`' }) hasPreviousPage!: boolean;
  @Field(() => String, { nullable: true }) startCursor!: string | null;
  @Field(() => String, { nullable: true, description: 'Pass as `after` for the next page' }) endCursor!: string | null;
}

/** PageInfo of a page of edges. */
export function pageInfoOf(edges: readonly { cursor: string }[], hasNextPage: boolean, after: string | null | undefined): PageInfo {
  return { hasNextPage, hasPreviousPage: Boolean(after), startCursor: edges[0]?.cursor ?? null, endCursor: edges[edges.length - 1]?.cursor ?? null };
}

/** A connection whose total is counted (one statement) only when `totalCount` is selected. */
export interface Counted {
  count: () => Promise<number>;
}

/** The `totalCount` field of a connection type: `what` names its rows in the description. */
export function totalCountResolver(connection: ClassType<Counted>, what: string): ClassType {
  @Resolver(() => connection)
  class TotalCountResolver {
    @FieldResolver(() => Int, { description: `${what} matching the filters (all pages); counted only when selected` })
    totalCount(@Root() c: Counted): Promise<number> {
      return c.count();
    }
  }
  return TotalCountResolver;
}
