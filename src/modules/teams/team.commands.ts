import { z } from 'zod';
import { TEAM_ROLES } from '../../common/permissions.js';
import { email, password } from '../merchants/merchant.commands.js';

export const teamRole = z.enum(TEAM_ROLES, { message: `must be one of ${TEAM_ROLES.join(', ')}` });
const uuid = z.uuid({ message: 'must be a UUID' });

export const inviteMemberCommand = z.object({ email, role: teamRole });
export type InviteMemberCommand = z.input<typeof inviteMemberCommand>;

export const inviteRefCommand = z.object({ inviteId: uuid });
export type InviteRefCommand = z.input<typeof inviteRefCommand>;

/**
 * Accepting an invite: the token from the mailed link and a password — the new account's (at least
 * 8 characters), or the existing account's when the email already has one (proof it is the same person).
 */
export const acceptInviteCommand = z.object({
  token: z.string().min(1, 'required').max(256),
  password: z.string().min(1, 'required').max(256),
});
export type AcceptInviteCommand = z.input<typeof acceptInviteCommand>;
export const newAccountPassword = password;

export const changeRoleCommand = z.object({ userId: uuid, role: teamRole });
export type ChangeRoleCommand = z.input<typeof changeRoleCommand>;

export const memberRefCommand = z.object({ userId: uuid });
export type MemberRefCommand = z.input<typeof memberRefCommand>;
