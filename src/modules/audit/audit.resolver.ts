import { Arg, Authorized, Ctx, Field, ID, InputType, Int, ObjectType, Query, Resolver } from 'type-graphql';
import { PageInfo, pageInfoOf, totalCountResolver } from '../../graphql/connection.js';
import type { GqlContext } from '../../graphql/context.js';
import type { AuditEventView } from './audit.service.js';

@ObjectType('AuditEvent', {
  description: 'One entry of the merchant’s audit trail: who did what, when, from where. Secrets never appear (fields outside an allowlist read "[redacted]")',
})
export class AuditEventType {
  @Field(() => ID) id!: string;
  @Field() occurredAt!: Date;
  @Field({ description: 'What was done, e.g. auth.login, api_key.rotated, webhook.notification_url_changed' }) action!: string;
  @Field(() => String, { nullable: true, description: 'The dashboard user who acted (or, for a login, who logged in)' }) userId!: string | null;
  @Field(() => String, { nullable: true, description: 'The API key that acted' }) apiKeyId!: string | null;
  @Field(() => String, { nullable: true, description: 'The operator who acted (a CLI command, the operator token)' }) operator!: string | null;
  @Field(() => String, { nullable: true, description: 'What was acted on: an environment, a payment link id, environment:network…' }) subject!: string | null;
  @Field(() => String, { nullable: true }) ip!: string | null;
  @Field(() => String, { nullable: true }) userAgent!: string | null;
  @Field(() => String, { nullable: true, description: 'State before, as JSON' }) before!: string | null;
  @Field(() => String, { nullable: true, description: 'State after (or what was done), as JSON' }) after!: string | null;
  @Field(() => Int, { description: 'Position in the merchant’s hash chain (1, 2, 3…)' }) chainSeq!: number;
  @Field({ description: 'SHA-256 over the previous entry’s hash and this entry (audit verify)' }) hash!: string;
}

@ObjectType()
export class AuditEventEdge {
  @Field() cursor!: string;
  @Field(() => AuditEventType) node!: AuditEventType;
}

@ObjectType()
export class AuditEventConnection {
  @Field(() => [AuditEventEdge]) edges!: AuditEventEdge[];
  @Field(() => PageInfo) pageInfo!: PageInfo;
  count!: () => Promise<number>;
}

@InputType()
export class AuditEventFilter {
  @Field(() => [String], { nullable: true, description: 'Only these actions' }) actions?: string[] | null;
  @Field({ nullable: true, description: 'From this time (inclusive)' }) from?: Date;
  @Field({ nullable: true, description: 'Until this time (exclusive)' }) to?: Date;
}

const json = (v: unknown): string | null => (v === null || v === undefined ? null : JSON.stringify(v));
const toType = (e: AuditEventView): AuditEventType => ({ ...e, before: json(e.before), after: json(e.after) });

@Resolver()
export class AuditResolver {
  @Authorized('DASHBOARD')
  @Query(() => AuditEventConnection, { description: 'The merchant’s audit trail, newest first (owners and admins)' })
  async auditEvents(
    @Ctx() ctx: GqlContext,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
    @Arg('filter', () => AuditEventFilter, { nullable: true }) filter?: AuditEventFilter,
  ): Promise<AuditEventConnection> {
    const page = await ctx.app.audit.list(ctx, {
      ...(first != null && { first }),
      ...(after != null && { after }),
      filter: {
        ...(filter?.actions && { actions: filter.actions as never }),
        ...(filter?.from && { from: filter.from }),
        ...(filter?.to && { to: filter.to }),
      },
    });
    const edges = page.events.map((e) => ({ cursor: e.cursor, node: toType(e) }));
    return { edges, pageInfo: pageInfoOf(edges, page.hasNextPage, after), count: page.count };
  }
}

export const AuditEventConnectionResolver = totalCountResolver(AuditEventConnection, 'Entries');
