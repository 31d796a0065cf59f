import { Field, ObjectType } from 'type-graphql';

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
