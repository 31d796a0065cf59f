import { Field, ObjectType, registerEnumType } from 'type-graphql';
import type { TeamRole } from '../../common/permissions.js';
import type { InviteView, MemberView } from './team.service.js';

/** GraphQL's upper-case names for the team roles (docs/teams.md "Permission table"). */
export enum TeamRoleEnum {
  OWNER = 'owner',
  ADMIN = 'admin',
  DEVELOPER = 'developer',
  FINANCE = 'finance',
  VIEWER = 'viewer',
}
registerEnumType(TeamRoleEnum, {
  name: 'TeamRole',
  description: 'A member’s role in a merchant’s team; what each may do is the permission table (docs/teams.md)',
});

export enum TeamInviteStatusEnum {
  PENDING = 'pending',
  EXPIRED = 'expired',
  ACCEPTED = 'accepted',
  REVOKED = 'revoked',
}
registerEnumType(TeamInviteStatusEnum, { name: 'TeamInviteStatus' });

@ObjectType('Membership', { description: 'One of the signed-in user’s merchants' })
export class MembershipType {
  @Field() merchantId!: string;
  @Field() merchantName!: string;
  @Field(() => TeamRoleEnum) role!: TeamRoleEnum;
  @Field() joinedAt!: Date;
  @Field({ description: 'The merchant the current session acts for' }) active!: boolean;
}

@ObjectType('TeamMember')
export class TeamMemberType {
  @Field() userId!: string;
  @Field() email!: string;
  @Field(() => TeamRoleEnum) role!: TeamRoleEnum;
  @Field() joinedAt!: Date;
}

@ObjectType('TeamInvite')
export class TeamInviteType {
  @Field() id!: string;
  @Field() email!: string;
  @Field(() => TeamRoleEnum) role!: TeamRoleEnum;
  @Field() createdAt!: Date;
  @Field() expiresAt!: Date;
  @Field(() => String, { nullable: true, description: 'Email of the member who sent it' }) invitedBy!: string | null;
  @Field(() => TeamInviteStatusEnum) status!: TeamInviteStatusEnum;
}

@ObjectType('TeamInviteResult')
export class TeamInviteResultType {
  @Field(() => TeamInviteType) invite!: TeamInviteType;
  @Field(() => String, { nullable: true, description: 'The link, only when no SMTP server is configured outside production; otherwise null (it was mailed)' })
  inviteUrl!: string | null;
}

@ObjectType('AcceptedTeamInvite')
export class AcceptedTeamInviteType {
  @Field() merchantId!: string;
  @Field() merchantName!: string;
  @Field() email!: string;
  @Field(() => TeamRoleEnum) role!: TeamRoleEnum;
  @Field({ description: 'True when accepting created the account; false: an existing account joined' }) accountCreated!: boolean;
}

export const toMemberType = (m: MemberView): TeamMemberType => ({ ...m, role: m.role as TeamRoleEnum });
export const toInviteType = (i: InviteView): TeamInviteType => ({ ...i, role: i.role as TeamRoleEnum, status: i.status as TeamInviteStatusEnum });
export const asRole = (r: TeamRoleEnum): TeamRole => r as TeamRole;
