import type { App } from '../app.js';
import { tokenPairView } from './merchant.views.js';
import type { RestRoute } from './routes.js';
import { toAcceptInvite, toInvite, toRole, toSwitchMerchant } from './team.mappers.js';
import { acceptedInviteView, inviteView, membershipView, memberView } from './team.views.js';

type UserParams = { user_id: string };
type InviteParams = { invite_id: string };

/**
 * `/api/v2/auth/memberships`, `/api/v2/auth/switch-merchant` and `/api/v2/team/*`: the REST twins of
 * the GraphQL team operations (docs/teams.md), calling the same services, so the permission table
 * (src/common/permissions.ts) refuses the same roles.
 */
export function teamRoutes(app: App): RestRoute[] {
  return [
    {
      method: 'GET',
      url: '/auth/memberships',
      auth: 'dashboard',
      limit: 'auth',
      handler: async (ctx) => ({ data: (await app.auth.memberships(ctx)).map(membershipView) }),
    },
    {
      method: 'POST',
      url: '/auth/switch-merchant',
      auth: 'dashboard',
      limit: 'auth',
      handler: async (ctx, req) => ({ message: 'Switched merchant', data: tokenPairView(await app.auth.switchMerchant(ctx, toSwitchMerchant(req.body))) }),
    },
    {
      method: 'GET',
      url: '/team/members',
      auth: 'dashboard',
      limit: 'merchant',
      handler: async (ctx) => ({ data: (await app.teams.members(ctx)).map(memberView) }),
    },
    {
      method: 'PUT',
      url: '/team/members/:user_id',
      auth: 'dashboard',
      limit: 'merchant',
      handler: async (ctx, req) => ({
        message: 'Role changed',
        data: memberView(await app.teams.changeRole(ctx, { userId: (req.params as UserParams).user_id, role: toRole(req.body) })),
      }),
    },
    {
      method: 'DELETE',
      url: '/team/members/:user_id',
      auth: 'dashboard',
      limit: 'merchant',
      handler: async (ctx, req) => ({
        message: 'Member removed',
        data: memberView(await app.teams.removeMember(ctx, { userId: (req.params as UserParams).user_id })),
      }),
    },
    {
      method: 'GET',
      url: '/team/invites',
      auth: 'dashboard',
      limit: 'merchant',
      handler: async (ctx) => ({ data: (await app.teams.invites(ctx)).map(inviteView) }),
    },
    {
      method: 'POST',
      url: '/team/invites',
      auth: 'dashboard',
      limit: 'merchant',
      handler: async (ctx, req) => {
        const r = await app.teams.invite(ctx, toInvite(req.body));
        return {
          status: 201,
          message: r.inviteUrl ? 'Invite created (no SMTP server: the link is returned)' : 'Invite mailed',
          data: { ...inviteView(r.invite), invite_url: r.inviteUrl },
        };
      },
    },
    {
      method: 'DELETE',
      url: '/team/invites/:invite_id',
      auth: 'dashboard',
      limit: 'merchant',
      handler: async (ctx, req) => ({
        message: 'Invite revoked',
        data: inviteView(await app.teams.revokeInvite(ctx, { inviteId: (req.params as InviteParams).invite_id })),
      }),
    },
    {
      method: 'POST',
      url: '/team/invites/accept',
      auth: 'public',
      limit: 'auth',
      handler: async (ctx, req) => ({
        message: 'Invite accepted; log in',
        data: acceptedInviteView(await app.teams.acceptInvite(ctx, toAcceptInvite(req.body))),
      }),
    },
  ];
}
