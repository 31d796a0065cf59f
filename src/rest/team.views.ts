import { unix } from '../common/time.js';
import type { MembershipView } from '../modules/merchants/auth.service.js';
import type { AcceptedInvite, InviteView, MemberView } from '../modules/teams/team.service.js';

/* Team answers in the REST dialect: snake_case, times in Unix seconds. */

export const membershipView = (m: MembershipView) => ({
  merchant_id: m.merchantId,
  merchant_name: m.merchantName,
  role: m.role,
  joined_at: unix(m.joinedAt),
  active: m.active,
});
export const memberView = (m: MemberView) => ({ user_id: m.userId, email: m.email, role: m.role, joined_at: unix(m.joinedAt) });
export const inviteView = (i: InviteView) => ({
  invite_id: i.id,
  email: i.email,
  role: i.role,
  status: i.status,
  invited_by: i.invitedBy,
  created_at: unix(i.createdAt),
  expired_at: unix(i.expiresAt),
});
export const acceptedInviteView = (a: AcceptedInvite) => ({
  merchant_id: a.merchantId,
  merchant_name: a.merchantName,
  email: a.email,
  role: a.role,
  account_created: a.accountCreated,
});
