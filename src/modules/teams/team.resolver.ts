import { Arg, Authorized, Ctx, Mutation, Query, Resolver } from 'type-graphql';
import type { GqlContext } from '../../graphql/context.js';
import { RateLimited } from '../../graphql/request.middleware.js';
import {
  AcceptedTeamInviteType,
  asRole,
  TeamInviteResultType,
  TeamInviteType,
  TeamMemberType,
  TeamRoleEnum,
  toInviteType,
  toMemberType,
} from './team.types.js';

/** The merchant's team (docs/teams.md). Roles are checked by TeamService against the permission table. */
@Resolver()
export class TeamResolver {
  @Authorized('DASHBOARD')
  @Query(() => [TeamMemberType], { description: 'Members of the session’s merchant with their roles (team.read)' })
  async teamMembers(@Ctx() ctx: GqlContext): Promise<TeamMemberType[]> {
    return (await ctx.app.teams.members(ctx)).map(toMemberType);
  }

  @Authorized('DASHBOARD')
  @Query(() => [TeamInviteType], { description: 'Invites neither accepted nor revoked (pending or expired), newest first (team.read)' })
  async teamInvites(@Ctx() ctx: GqlContext): Promise<TeamInviteType[]> {
    return (await ctx.app.teams.invites(ctx)).map(toInviteType);
  }

  @Authorized('DASHBOARD')
  @Mutation(() => TeamInviteResultType, {
    description:
      'Mails a single-use invite link (TEAM_INVITE_TTL_S) giving `role`; replaces a pending invite of the same email. team.manage (an owner invite: team.ownership) and `reauthenticate` first',
  })
  async inviteTeamMember(
    @Arg('email') email: string,
    @Arg('role', () => TeamRoleEnum) role: TeamRoleEnum,
    @Ctx() ctx: GqlContext,
  ): Promise<TeamInviteResultType> {
    const r = await ctx.app.teams.invite(ctx, { email, role: asRole(role) });
    return { invite: toInviteType(r.invite), inviteUrl: r.inviteUrl };
  }

  @Authorized('DASHBOARD')
  @Mutation(() => TeamInviteType, { description: 'The invite’s link stops working. team.manage and `reauthenticate` first' })
  async revokeTeamInvite(@Arg('inviteId') inviteId: string, @Ctx() ctx: GqlContext): Promise<TeamInviteType> {
    return toInviteType(await ctx.app.teams.revokeInvite(ctx, { inviteId }));
  }

  @RateLimited('auth')
  @Mutation(() => AcceptedTeamInviteType, {
    description:
      'Public: accepts an invite with the token from its link. A new email gets an account with `password`; an existing account gives its own password. Then `login`',
  })
  async acceptTeamInvite(@Arg('token') token: string, @Arg('password') password: string, @Ctx() ctx: GqlContext): Promise<AcceptedTeamInviteType> {
    const r = await ctx.app.teams.acceptInvite(ctx, { token, password });
    return { ...r, role: r.role as TeamRoleEnum };
  }

  @Authorized('DASHBOARD')
  @Mutation(() => TeamMemberType, {
    description:
      'A member’s new role, from their next request. team.manage (to or from owner: team.ownership; never the last owner) and `reauthenticate` first',
  })
  async changeTeamMemberRole(
    @Arg('userId') userId: string,
    @Arg('role', () => TeamRoleEnum) role: TeamRoleEnum,
    @Ctx() ctx: GqlContext,
  ): Promise<TeamMemberType> {
    return toMemberType(await ctx.app.teams.changeRole(ctx, { userId, role: asRole(role) }));
  }

  @Authorized('DASHBOARD')
  @Mutation(() => TeamMemberType, {
    description:
      'Removes a member; their sessions for this merchant end at once. team.manage (an owner: team.ownership; never the last owner) and `reauthenticate` first',
  })
  async removeTeamMember(@Arg('userId') userId: string, @Ctx() ctx: GqlContext): Promise<TeamMemberType> {
    return toMemberType(await ctx.app.teams.removeMember(ctx, { userId }));
  }
}
