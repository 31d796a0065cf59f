import { z } from 'zod';
import { parseInput } from '../common/validation.js';
import { TEAM_ROLES } from '../common/permissions.js';
import type { AcceptInviteCommand, InviteMemberCommand } from '../modules/teams/team.commands.js';

/* The REST dialect (snake_case) of the team's commands; the commands themselves validate the values. */

const role = z.enum(TEAM_ROLES, { message: `must be one of ${TEAM_ROLES.join(', ')}` });
export const inviteBody = z.object({ email: z.string().max(254), role });
export const acceptInviteBody = z.object({ token: z.string().max(256), password: z.string().max(256) });
export const changeRoleBody = z.object({ role });
export const switchMerchantBody = z.object({ merchant_id: z.string().max(64) });

export const toInvite = (body: unknown): InviteMemberCommand => parseInput(inviteBody, body);
export const toAcceptInvite = (body: unknown): AcceptInviteCommand => parseInput(acceptInviteBody, body);
export const toRole = (body: unknown) => parseInput(changeRoleBody, body).role;
export const toSwitchMerchant = (body: unknown): string => parseInput(switchMerchantBody, body).merchant_id;
