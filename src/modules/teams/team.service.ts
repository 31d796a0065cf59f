import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { z } from 'zod';
import { requireFreshAuth, requirePermission, type DashboardCaller } from '../../common/access.js';
import type { RequestContext } from '../../common/context.js';
import { randomToken, sha256Hex } from '../../common/crypto.js';
import { DomainError } from '../../common/errors.js';
import { can, type TeamRole } from '../../common/permissions.js';
import { parseInput } from '../../common/validation.js';
import { recordAudit } from '../audit/audit.service.js';
import type { MailTransport } from '../customer-mail/customer-mail.service.js';
import { hashPassword, verifyPassword } from '../merchants/password.js';
import {
  acceptInviteCommand,
  changeRoleCommand,
  inviteMemberCommand,
  inviteRefCommand,
  memberRefCommand,
  newAccountPassword,
  type AcceptInviteCommand,
  type ChangeRoleCommand,
  type InviteMemberCommand,
  type InviteRefCommand,
  type MemberRefCommand,
} from './team.commands.js';

export interface MemberView {
  userId: string;
  email: string;
  role: TeamRole;
  joinedAt: Date;
}

export type InviteStatus = 'pending' | 'expired' | 'accepted' | 'revoked';

export interface InviteView {
  id: string;
  email: string;
  role: TeamRole;
  createdAt: Date;
  expiresAt: Date;
  /** Email of the member who sent it (null when that user is gone). */
  invitedBy: string | null;
  status: InviteStatus;
}

export interface AcceptedInvite {
  merchantId: string;
  merchantName: string;
  email: string;
  role: TeamRole;
  /** True when accepting created the account (false: an existing account joined). */
  accountCreated: boolean;
}

export interface TeamOptions {
  inviteTtlS: number;
  /** The dashboard page that accepts invites; the link is `<url>#token=<token>` (a fragment: never sent to a server or a log). */
  inviteUrl: () => string;
  /** SMTP (customer-mail's transport); null: no mail server configured. */
  transport: MailTransport | null;
  from: string | undefined;
  /** Without SMTP, outside production, the link is returned to the inviter instead of mailed. */
  returnLinkWithoutMail: boolean;
  /** The login budget of an account (an existing account's password is checked on accept). */
  throttleAccount?: (accountHash: string) => Promise<void>;
  log: Logger;
}

interface InviteRow {
  id: string;
  merchant_id: string;
  email: string;
  role: TeamRole;
  created_at: Date;
  expires_at: Date;
  accepted_at: Date | null;
  revoked_at: Date | null;
  invited_by: string | null;
}

const inviteStatus = (r: InviteRow, now = Date.now()): InviteStatus =>
  r.accepted_at ? 'accepted' : r.revoked_at ? 'revoked' : new Date(r.expires_at).getTime() <= now ? 'expired' : 'pending';

const inviteView = (r: InviteRow): InviteView => ({
  id: r.id,
  email: r.email,
  role: r.role,
  createdAt: new Date(r.created_at),
  expiresAt: new Date(r.expires_at),
  invitedBy: r.invited_by,
  status: inviteStatus(r),
});

const INVITE_COLUMNS = `i.id, i.merchant_id, i.email, i.role, i.created_at, i.expires_at, i.accepted_at, i.revoked_at, u.email as invited_by`;

/**
 * A merchant's team: members (users × role, `memberships`) and email invites (`team_invites`).
 * Reads need `team.read`; every change needs `team.manage` and a fresh re-authentication, and
 * anything touching the owner role (inviting, making, demoting or removing an owner) `team.ownership`
 * (permissions.ts). The last owner can be neither removed nor demoted. Removing a member revokes that
 * user's sessions for the merchant at once (and the membership row, read on every request, is gone).
 *
 * Audit hooks: `invite`, `revokeInvite`, `acceptInvite`, `changeRole`, `removeMember` are the team's
 * sensitive operations; each returns what changed.
 */
export class TeamService {
  constructor(private readonly opts: TeamOptions) {}

  async members(ctx: RequestContext): Promise<MemberView[]> {
    const caller = requirePermission(ctx, 'team.read');
    const rows = await ctx.em.execute<{ user_id: string; email: string; role: TeamRole; created_at: Date }[]>(
      `select m.user_id, u.email, m.role, m.created_at from memberships m join dashboard_users u on u.id = m.user_id
        where m.merchant_id = ? order by m.created_at, m.user_id`,
      [caller.merchantId],
    );
    return rows.map((r) => ({ userId: r.user_id, email: r.email, role: r.role, joinedAt: new Date(r.created_at) }));
  }

  /** Invites not accepted or revoked (pending and expired), newest first. */
  async invites(ctx: RequestContext): Promise<InviteView[]> {
    const caller = requirePermission(ctx, 'team.read');
    const rows = await ctx.em.execute<InviteRow[]>(
      `select ${INVITE_COLUMNS} from team_invites i left join dashboard_users u on u.id = i.invited_by_user_id
        where i.merchant_id = ? and i.accepted_at is null and i.revoked_at is null order by i.created_at desc limit 200`,
      [caller.merchantId],
    );
    return rows.map(inviteView);
  }

  /**
   * Invites `email` with `role`: a single-use link (only its SHA-256 is stored) mailed through SMTP,
   * valid TEAM_INVITE_TTL_S. A pending invite of the same email is replaced (its link stops working).
   * A mail the server refuses leaves no invite (MAIL_FAILED). `inviteUrl` is returned only without
   * SMTP outside production (a development gateway); otherwise it is null and the link is in the mail only.
   */
  async invite(ctx: RequestContext, cmd: InviteMemberCommand): Promise<{ invite: InviteView; inviteUrl: string | null }> {
    const caller = requireFreshAuth(ctx, 'team.manage', 'invite team members');
    const { email, role } = parseInput(inviteMemberCommand, cmd);
    if (role === 'owner') this.requireOwnership(caller, 'invite an owner');
    if (!this.opts.transport && !this.opts.returnLinkWithoutMail)
      throw new DomainError('MAIL_UNAVAILABLE', 'Invites are mailed, and no SMTP server is configured (SMTP_HOST)');
    const token = randomToken(32);
    const { row, merchantName } = await ctx.em.transactional(async (tx) => {
      // Two invites of one email at once: one after the other (the second replaces the first).
      await tx.execute(`select pg_advisory_xact_lock(hashtextextended(?, 0))`, [`team_invites:${caller.merchantId}:${email}`]);
      const [member] = await tx.execute<{ user_id: string }[]>(
        `select m.user_id from memberships m join dashboard_users u on u.id = m.user_id where m.merchant_id = ? and u.email = ?`,
        [caller.merchantId, email],
      );
      if (member) throw new DomainError('ALREADY_A_MEMBER', `${email} is already a member of this team`);
      await tx.execute(`update team_invites set revoked_at = now() where merchant_id = ? and email = ? and accepted_at is null and revoked_at is null`, [
        caller.merchantId,
        email,
      ]);
      const [inserted] = await tx.execute<{ id: string }[]>(
        `insert into team_invites (id, merchant_id, email, role, token_hash, invited_by_user_id, created_at, expires_at)
         values (gen_random_uuid(), ?, ?, ?, ?, ?, now(), now() + make_interval(secs => ?)) returning id`,
        [caller.merchantId, email, role, sha256Hex(token), caller.userId, this.opts.inviteTtlS],
      );
      const [r] = await tx.execute<InviteRow[]>(
        `select ${INVITE_COLUMNS} from team_invites i left join dashboard_users u on u.id = i.invited_by_user_id where i.id = ?`,
        [inserted!.id],
      );
      const [m] = await tx.execute<{ name: string }[]>(`select name from merchants where id = ?`, [caller.merchantId]);
      await recordAudit(tx, ctx, 'team.invited', { subject: email, after: { inviteId: r!.id, email, role, expiresAt: r!.expires_at } });
      return { row: r!, merchantName: m!.name };
    });
    const url = `${this.opts.inviteUrl()}#token=${token}`;
    if (!this.opts.transport) return { invite: inviteView(row), inviteUrl: url };
    try {
      await this.opts.transport.sendMail({
        from: this.opts.from,
        to: email,
        subject: `You are invited to ${merchantName}'s team`,
        text:
          `${row.invited_by ?? 'A team member'} invited you to join ${merchantName} as ${role}.\n\n` +
          `Accept the invitation here (the link works once, until ${new Date(row.expires_at).toISOString()}):\n${url}\n\n` +
          `If you did not expect this invitation, ignore this mail.\n`,
      });
    } catch (e) {
      // Never delivered: the invite must not exist (nobody could use it, and a retry should not find it pending).
      // The trail keeps the invite it recorded, and says it was withdrawn.
      await ctx.em.transactional(async (tx) => {
        await tx.execute(`delete from team_invites where id = ?`, [row.id]);
        await recordAudit(tx, ctx, 'team.invite_revoked', { subject: email, after: { inviteId: row.id, email, reason: 'mail_failed' } });
      });
      this.opts.log.warn({ err: String((e as Error).message ?? e), merchantId: caller.merchantId }, 'team invite mail failed');
      throw new DomainError('MAIL_FAILED', 'The invitation mail could not be sent; try again later');
    }
    return { invite: inviteView(row), inviteUrl: null };
  }

  async revokeInvite(ctx: RequestContext, cmd: InviteRefCommand): Promise<InviteView> {
    const caller = requireFreshAuth(ctx, 'team.manage', 'revoke team invites');
    const { inviteId } = parseInput(inviteRefCommand, cmd);
    return ctx.em.transactional(async (tx) => {
      const [row] = await tx.execute<InviteRow[]>(
        `select ${INVITE_COLUMNS} from team_invites i left join dashboard_users u on u.id = i.invited_by_user_id
          where i.id = ? and i.merchant_id = ? for update of i`,
        [inviteId, caller.merchantId],
      );
      if (!row || row.accepted_at || row.revoked_at) throw new DomainError('INVITE_NOT_FOUND', 'No pending invite with this id');
      if (row.role === 'owner') this.requireOwnership(caller, 'revoke an owner invite');
      const [r] = await tx.execute<{ revoked_at: Date }[]>(`update team_invites set revoked_at = now() where id = ? returning revoked_at`, [row.id]);
      await recordAudit(tx, ctx, 'team.invite_revoked', { subject: row.email, after: { inviteId: row.id, email: row.email, role: row.role } });
      return inviteView({ ...row, revoked_at: r!.revoked_at });
    });
  }

  /**
   * The invitee, from the link (no session needed): the token works once, before it expires, unless
   * revoked. An email with no account gets one with `password`; an existing account must give its
   * own password (so a leaked link cannot attach someone else's login), and a wrong one leaves the
   * invite unused. Refusals change nothing.
   */
  async acceptInvite(ctx: RequestContext, cmd: AcceptInviteCommand): Promise<AcceptedInvite> {
    const { token, password } = parseInput(acceptInviteCommand, cmd);
    const hash = sha256Hex(token);
    return ctx.em.transactional(async (tx) => {
      const [row] = await tx.execute<(InviteRow & { merchant_name: string })[]>(
        `select ${INVITE_COLUMNS}, x.name as merchant_name
           from team_invites i join merchants x on x.id = i.merchant_id left join dashboard_users u on u.id = i.invited_by_user_id
          where i.token_hash = ? for update of i`,
        [hash],
      );
      if (!row) throw new DomainError('INVALID_INVITE', 'This invite link is not valid');
      const status = inviteStatus(row);
      if (status === 'accepted') throw new DomainError('INVITE_USED', 'This invite link has been used already');
      if (status === 'revoked') throw new DomainError('INVITE_REVOKED', 'This invite was revoked');
      if (status === 'expired') throw new DomainError('INVITE_EXPIRED', 'This invite link has expired; ask for a new one');

      // Two invites of one new email accepted at once (two merchants): one account, made by the first.
      await tx.execute(`select pg_advisory_xact_lock(hashtextextended(?, 0))`, [`dashboard_users:${row.email}`]);
      const [existing] = await tx.execute<{ id: string; password_hash: string }[]>(`select id, password_hash from dashboard_users where email = ?`, [
        row.email,
      ]);
      let userId: string;
      if (existing) {
        await this.opts.throttleAccount?.(sha256Hex(row.email));
        if (!(await verifyPassword(existing.password_hash, password)))
          throw new DomainError('INVALID_PASSWORD', `${row.email} has an account: give its password to accept`);
        userId = existing.id;
      } else {
        const { password: newPassword } = parseInput(z.object({ password: newAccountPassword }), { password });
        const [created] = await tx.execute<{ id: string }[]>(
          `insert into dashboard_users (id, email, password_hash, created_at) values (gen_random_uuid(), ?, ?, now()) returning id`,
          [row.email, await hashPassword(newPassword)],
        );
        userId = created!.id;
      }
      await tx.execute(
        `insert into memberships (id, user_id, merchant_id, role, created_at) values (gen_random_uuid(), ?, ?, ?, now())
         on conflict (user_id, merchant_id) do nothing`,
        [userId, row.merchant_id, row.role],
      );
      await tx.execute(`update team_invites set accepted_at = now(), accepted_user_id = ? where id = ?`, [userId, row.id]);
      // No session yet: the merchant and the user are the invite's.
      await recordAudit(tx, ctx, 'team.invite_accepted', {
        merchantId: row.merchant_id,
        userId,
        subject: row.email,
        after: { inviteId: row.id, email: row.email, role: row.role, accountCreated: !existing },
      });
      return { merchantId: row.merchant_id, merchantName: row.merchant_name, email: row.email, role: row.role, accountCreated: !existing };
    });
  }

  /** A member's new role; applies to their next request. Owners are made or demoted only by owners; the last owner stays. */
  async changeRole(ctx: RequestContext, cmd: ChangeRoleCommand): Promise<MemberView> {
    const caller = requireFreshAuth(ctx, 'team.manage', 'change team roles');
    const { userId, role } = parseInput(changeRoleCommand, cmd);
    return ctx.em.transactional(async (tx) => {
      const members = await this.lockMembers(tx, caller.merchantId);
      const target = members.find((m) => m.userId === userId);
      if (!target) throw new DomainError('MEMBER_NOT_FOUND', 'No member with this user id in this team');
      if (target.role === 'owner' || role === 'owner') this.requireOwnership(caller, role === 'owner' ? 'make an owner' : 'demote an owner');
      if (target.role === 'owner' && role !== 'owner' && members.filter((m) => m.role === 'owner').length === 1) {
        throw new DomainError('LAST_OWNER', 'The last owner cannot be demoted; make another member owner first');
      }
      await tx.execute(`update memberships set role = ? where user_id = ? and merchant_id = ?`, [role, userId, caller.merchantId]);
      await recordAudit(tx, ctx, 'team.role_changed', {
        subject: userId,
        before: { userId, email: target.email, role: target.role },
        after: { userId, email: target.email, role },
      });
      return { ...target, role };
    });
  }

  /**
   * Removes a member: the membership goes, and every live session of that user for this merchant is
   * revoked in the same transaction — their next request (and, at its next check, a live
   * subscription) is refused with SESSION_REVOKED. Their sessions for other merchants are untouched.
   */
  async removeMember(ctx: RequestContext, cmd: MemberRefCommand): Promise<MemberView> {
    const caller = requireFreshAuth(ctx, 'team.manage', 'remove team members');
    const { userId } = parseInput(memberRefCommand, cmd);
    return ctx.em.transactional(async (tx) => {
      const members = await this.lockMembers(tx, caller.merchantId);
      const target = members.find((m) => m.userId === userId);
      if (!target) throw new DomainError('MEMBER_NOT_FOUND', 'No member with this user id in this team');
      if (target.role === 'owner') {
        this.requireOwnership(caller, 'remove an owner');
        if (members.filter((m) => m.role === 'owner').length === 1)
          throw new DomainError('LAST_OWNER', 'The last owner cannot be removed; make another member owner first');
      }
      await tx.execute(`delete from memberships where user_id = ? and merchant_id = ?`, [userId, caller.merchantId]);
      await tx.execute(
        `update sessions set revoked_at = now(), revoked_reason = 'member_removed' where user_id = ? and merchant_id = ? and revoked_at is null`,
        [userId, caller.merchantId],
      );
      await recordAudit(tx, ctx, 'team.member_removed', { subject: userId, before: { userId, email: target.email, role: target.role } });
      return target;
    });
  }

  private requireOwnership(caller: DashboardCaller, action: string): void {
    if (!can(caller.role, 'team.ownership'))
      throw new DomainError('FORBIDDEN', `Only an owner can ${action}`, { permission: 'team.ownership', role: caller.role });
  }

  /** The merchant's members, locked until the transaction ends: owner counts cannot change underneath. */
  private async lockMembers(tx: EntityManager, merchantId: string): Promise<MemberView[]> {
    const rows = await tx.execute<{ user_id: string; email: string; role: TeamRole; created_at: Date }[]>(
      `select m.user_id, u.email, m.role, m.created_at from memberships m join dashboard_users u on u.id = m.user_id
        where m.merchant_id = ? order by m.user_id for update of m`,
      [merchantId],
    );
    return rows.map((r) => ({ userId: r.user_id, email: r.email, role: r.role, joinedAt: new Date(r.created_at) }));
  }
}
