import type { EntityManager } from '@mikro-orm/postgresql';
import { errors as joseErrors, jwtVerify, SignJWT } from 'jose';
import { requireDashboardSession, type DashboardCaller } from '../../common/access.js';
import type { RequestContext } from '../../common/context.js';
import { randomToken, sha256Hex } from '../../common/crypto.js';
import { DomainError } from '../../common/errors.js';
import { unix } from '../../common/time.js';
import { parseInput } from '../../common/validation.js';
import { recordAudit, type AuditSource } from '../audit/audit.service.js';
import { DashboardUser } from './dashboard-user.entity.js';
import { loginCommand, refreshCommand, type LoginCommand, type RefreshCommand } from './merchant.commands.js';
import { verifyPassword } from './password.js';
import type { LoginChallenge, SecondFactorMethod, SecondFactorProof, SecondFactorService } from './second-factor.service.js';
import { RefreshToken, Session } from './session.entity.js';

export interface TokenPair {
  token: string;
  refreshToken: string;
  tokenType: 'Bearer';
  /** Access-token lifetime, seconds. */
  expiresIn: number;
  /** Unix seconds. */
  expiredAt: number;
  refreshExpiredAt: number;
}

/** One of the signed-in user's merchants (`memberships`). */
export interface MembershipView {
  merchantId: string;
  merchantName: string;
  role: string;
  joinedAt: Date;
  /** The merchant the current session acts for. */
  active: boolean;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * What a right password gets: the session, or — when the user has a second factor — a short-lived
 * challenge that `completeLogin` exchanges for the session with a TOTP code, a recovery code or a passkey.
 */
export type LoginOutcome = { kind: 'session'; pair: TokenPair; userId: string } | { kind: 'second_factor'; challenge: LoginChallenge; userId: string };

/** What `reauthenticate` proved, and until when the session counts as fresh. */
export interface Reauthentication {
  until: Date;
  /** The second factor used, when the user has one. */
  secondFactor: SecondFactorMethod | null;
}

export interface AuthOptions {
  jwtSecret: string;
  accessTtlS: number;
  refreshTtlS: number;
  /** Takes one login attempt for an account (SHA-256 of the normalised email); throws RATE_LIMITED when used up. */
  throttleAccount?: (accountHash: string) => Promise<void>;
  /** How long a `reauthenticate` makes the session fresh for sensitive operations (REAUTH_WINDOW_S). */
  reauthWindowS?: number;
  /** Second factors (TOTP, recovery codes, passkeys); without it login is password-only. */
  secondFactors?: SecondFactorService;
}

const ISSUER = 'crypto-payment-gateway';
const AUDIENCE = 'dashboard';

/**
 * Dashboard sessions: a short-lived HS256 JWT (carries the session id and the merchant it acts for)
 * plus an opaque, rotating refresh token. The session row is the allowlist and the membership the
 * role: every access token is checked against both, so logout, a removal from the team or a role
 * change takes effect on the next request, not at token expiry.
 */
export class AuthService {
  private readonly key: Uint8Array;

  constructor(private readonly opts: AuthOptions) {
    this.key = new TextEncoder().encode(opts.jwtSecret);
  }

  /**
   * Password sign-in. A user with a second factor gets a challenge instead of the session (the
   * transports turn it into SECOND_FACTOR_REQUIRED carrying the challenge token).
   */
  async login(ctx: RequestContext, cmd: LoginCommand): Promise<LoginOutcome> {
    const { em } = ctx;
    const { email, password } = parseInput(loginCommand, cmd);
    const normalised = email.trim().toLowerCase();
    // Per account as well as per IP (the transport's limit): a botnet spreading guesses over many
    // addresses still gets RATE_LIMITED per account. Taken before the password hash is checked.
    await this.opts.throttleAccount?.(sha256Hex(normalised));
    const user = await em.findOne(DashboardUser, { email: normalised });
    const ok = await verifyPassword(user?.passwordHash ?? null, password);
    if (!user || !ok) {
      // Recorded on every merchant the user belongs to when the email is known (each team sees attempts
      // on its members' accounts), else on the operators' chain.
      await this.recordLoginFailed(em, ctx, normalised, user?.id ?? null);
      throw new DomainError('INVALID_CREDENTIALS', 'Invalid email or password');
    }
    const merchantId = await this.defaultMerchant(em, user.id);
    const sf = this.opts.secondFactors;
    if (sf && (await sf.hasFactor(em, user.id))) return { kind: 'second_factor', challenge: await sf.loginChallenge(em, user.id), userId: user.id };
    return { kind: 'session', pair: await this.openSession(em, ctx, user, merchantId, null), userId: user.id };
  }

  /**
   * The login's second step: the challenge from `login` and one second factor → the session, acting
   * for the user's oldest membership (as a login without a second factor).
   */
  async completeLogin(
    ctx: RequestContext,
    challengeToken: unknown,
    proof: SecondFactorProof,
  ): Promise<{ pair: TokenPair; userId: string; method: SecondFactorMethod }> {
    const sf = this.opts.secondFactors;
    if (!sf) throw new DomainError('CHALLENGE_EXPIRED', 'Unknown or expired sign-in step; log in again');
    const { userId, method } = await sf.completeLogin(ctx, challengeToken, proof);
    const user = await ctx.em.findOne(DashboardUser, { id: userId });
    if (!user) throw new DomainError('CHALLENGE_EXPIRED', 'Unknown or expired sign-in step; log in again');
    const merchantId = await this.defaultMerchant(ctx.em, user.id);
    return { pair: await this.openSession(ctx.em, ctx, user, merchantId, method), userId, method };
  }

  /** Opens the session (the login's last step, with or without a second factor) and records the login. */
  private openSession(
    em: EntityManager,
    ctx: AuditSource,
    user: DashboardUser,
    merchantId: string,
    secondFactor: SecondFactorMethod | null,
  ): Promise<TokenPair> {
    return em.transactional(async (tx) => {
      const session = tx.create(Session, { user: user.id, merchant: merchantId, expiresAt: new Date(Date.now() + this.opts.refreshTtlS * 1000) });
      const pair = await this.issue(tx, session, user);
      await tx.flush();
      await recordAudit(tx, ctx, 'auth.login', { merchantId, userId: user.id, after: { email: user.email, sessionId: session.id, secondFactor } });
      return pair;
    });
  }

  /**
   * Exchanges a refresh token for a new pair. Each refresh token works once: presenting a used one
   * means it leaked (or a client raced itself), so the whole session is revoked.
   */
  async refresh(ctx: RequestContext, cmd: RefreshCommand): Promise<TokenPair> {
    const { refreshToken } = parseInput(refreshCommand, cmd);
    const hash = sha256Hex(refreshToken);
    const outcome = await ctx.em.transactional(async (tx) => {
      const rt = await tx.findOne(RefreshToken, { tokenHash: hash }, { populate: ['session', 'session.user'] });
      if (!rt) throw new DomainError('INVALID_TOKEN', 'Invalid refresh token');
      const session = rt.session;
      if (session.revokedAt || session.expiresAt <= new Date()) throw new DomainError('SESSION_REVOKED', 'Session expired or revoked; log in again');
      // Compare-and-set so two concurrent refreshes with the same token cannot both succeed.
      const claimed = await tx.nativeUpdate(RefreshToken, { id: rt.id, usedAt: null }, { usedAt: new Date() });
      if (claimed === 0) {
        session.revokedAt = new Date();
        session.revokedReason = 'refresh_token_reuse';
        await tx.flush();
        return { reused: true as const };
      }
      const pair = await this.issue(tx, session, session.user);
      session.lastUsedAt = new Date();
      await tx.flush();
      return { reused: false as const, pair };
    });
    // Thrown after commit: the revocation must persist even though the call fails.
    if (outcome.reused) throw new DomainError('REFRESH_TOKEN_REUSED', 'Refresh token already used; the session has been revoked');
    return outcome.pair;
  }

  /** Deletes sessions that expired or were revoked more than a day ago (their refresh tokens cascade). */
  async pruneSessions(em: EntityManager): Promise<void> {
    await em.execute(`delete from sessions where expires_at < now() - interval '1 day' or revoked_at < now() - interval '1 day'`);
  }

  async logout(ctx: RequestContext): Promise<void> {
    const caller = requireDashboardSession(ctx);
    await ctx.em.transactional(async (tx) => {
      await tx.nativeUpdate(Session, { id: caller.sessionId, revokedAt: null }, { revokedAt: new Date(), revokedReason: 'logout' });
      await recordAudit(tx, ctx, 'auth.logout', { after: { sessionId: caller.sessionId } });
    });
  }

  /**
   * The password again — and the second factor, when the user has one — on the current session: for
   * `REAUTH_WINDOW_S` the session may do sensitive operations (access.ts requireFreshAuth). Counted
   * against the account's login budget, checked in constant time (a dummy hash when the user is gone).
   * A right password without the second factor is SECOND_FACTOR_REQUIRED and makes nothing fresh.
   */
  async reauthenticate(ctx: RequestContext, password: unknown, proof?: SecondFactorProof | null): Promise<Reauthentication> {
    const caller = requireDashboardSession(ctx);
    if (typeof password !== 'string' || password.length === 0 || password.length > 1024) {
      throw new DomainError('VALIDATION_FAILED', 'Invalid request: password: required', { fields: { password: 'required' } });
    }
    const user = await ctx.em.findOne(DashboardUser, { id: caller.userId });
    await this.opts.throttleAccount?.(sha256Hex(user?.email ?? caller.userId));
    if (!(await verifyPassword(user?.passwordHash ?? null, password)) || !user) {
      await recordAudit(ctx.em, ctx, 'auth.reauthentication_failed', { after: { sessionId: caller.sessionId } });
      throw new DomainError('INVALID_PASSWORD', 'The password is not correct');
    }
    const sf = this.opts.secondFactors;
    let method: SecondFactorMethod | null = null;
    if (sf && (await sf.hasFactor(ctx.em, user.id))) {
      const given = proof && (proof.totpCode != null || proof.recoveryCode != null || proof.passkey != null);
      if (!given) throw new DomainError('SECOND_FACTOR_REQUIRED', 'Give your second factor too (secondFactor: totpCode, recoveryCode or passkey)');
      method = await sf.verifyForReauth(ctx, user.id, caller.sessionId, proof);
    }
    return ctx.em.transactional(async (tx) => {
      const rows = await tx.execute<{ at: Date }[]>(
        `update sessions set reauthenticated_at = now(), reauth_second_factor_at = case when ? then now() else reauth_second_factor_at end
          where id = ? and revoked_at is null and expires_at > now() returning reauthenticated_at as at`,
        [method !== null, caller.sessionId],
      );
      if (!rows[0]) throw new DomainError('SESSION_REVOKED', 'Session revoked; log in again');
      const until = new Date(new Date(rows[0].at).getTime() + this.reauthWindowS * 1000);
      await recordAudit(tx, ctx, 'auth.reauthenticated', { after: { sessionId: caller.sessionId, until, secondFactor: method } });
      return { until, secondFactor: method };
    });
  }

  /**
   * The merchants the signed-in user belongs to, oldest membership first, with the role in each and
   * which one this session acts for.
   */
  async memberships(ctx: RequestContext): Promise<MembershipView[]> {
    const caller = requireDashboardSession(ctx);
    const rows = await ctx.em.execute<{ merchant_id: string; merchant_name: string; role: string; created_at: Date }[]>(
      `select m.merchant_id, x.name as merchant_name, m.role, m.created_at
         from memberships m join merchants x on x.id = m.merchant_id
        where m.user_id = ? order by m.created_at, m.merchant_id`,
      [caller.userId],
    );
    return rows.map((r) => ({
      merchantId: r.merchant_id,
      merchantName: r.merchant_name,
      role: r.role,
      joinedAt: new Date(r.created_at),
      active: r.merchant_id === caller.merchantId,
    }));
  }

  /**
   * A new session (token pair) acting for another merchant the signed-in user belongs to; the current
   * session stays as it is (another tab may use it). Not a member: NOT_A_MEMBER, nothing created.
   */
  async switchMerchant(ctx: RequestContext, merchantId: unknown): Promise<TokenPair> {
    const caller = requireDashboardSession(ctx);
    if (typeof merchantId !== 'string' || !UUID.test(merchantId)) {
      throw new DomainError('VALIDATION_FAILED', 'Invalid request: merchantId: must be a UUID', { fields: { merchantId: 'must be a UUID' } });
    }
    return ctx.em.transactional(async (tx) => {
      const [member] = await tx.execute<{ user_id: string }[]>(`select user_id from memberships where user_id = ? and merchant_id = ?`, [
        caller.userId,
        merchantId,
      ]);
      if (!member) throw new DomainError('NOT_A_MEMBER', 'You are not a member of that merchant');
      const user = await tx.findOneOrFail(DashboardUser, caller.userId);
      const session = tx.create(Session, { user, merchant: merchantId, expiresAt: new Date(Date.now() + this.opts.refreshTtlS * 1000) });
      const pair = await this.issue(tx, session, user);
      await tx.flush();
      // On the merchant switched to (the one the new session acts for).
      await recordAudit(tx, ctx, 'auth.merchant_switched', {
        merchantId,
        userId: caller.userId,
        after: { fromMerchantId: caller.merchantId, sessionId: session.id },
      });
      return pair;
    });
  }

  private async recordLoginFailed(em: EntityManager, ctx: AuditSource, email: string, userId: string | null): Promise<void> {
    const rows = userId
      ? await em.execute<{ merchant_id: string }[]>(`select merchant_id from memberships where user_id = ? order by created_at, merchant_id`, [userId])
      : [];
    const merchants = rows.length > 0 ? rows.map((r) => r.merchant_id) : [null];
    await em.transactional(async (tx) => {
      for (const merchantId of merchants) await recordAudit(tx, ctx, 'auth.login_failed', { merchantId, userId, after: { email } });
    });
  }

  /** Where a fresh login lands: the user's oldest membership. None left (removed everywhere): NO_MEMBERSHIP. */
  private async defaultMerchant(em: EntityManager, userId: string): Promise<string> {
    const [row] = await em.execute<{ merchant_id: string }[]>(
      `select merchant_id from memberships where user_id = ? order by created_at, merchant_id limit 1`,
      [userId],
    );
    if (!row) throw new DomainError('NO_MEMBERSHIP', 'This account is not a member of any merchant');
    return row.merchant_id;
  }

  private get reauthWindowS(): number {
    return this.opts.reauthWindowS ?? 300;
  }

  /**
   * Transports, before a context has a caller: verifies a Bearer token and that its session is still
   * on the allowlist. The session is fresh (`reauthUntil`) from its last `reauthenticate` — when the
   * user has a second factor, only if that re-authentication proved it too (so a password-only one
   * from before the factor was added no longer counts); `enrolmentRequired` when the merchant demands
   * a second factor the user lacks.
   */
  async authenticate(em: EntityManager, token: string): Promise<DashboardCaller> {
    let payload;
    try {
      ({ payload } = await jwtVerify(token, this.key, { issuer: ISSUER, audience: AUDIENCE, algorithms: ['HS256'] }));
    } catch (e) {
      if (e instanceof joseErrors.JWTExpired) throw new DomainError('INVALID_TOKEN', 'Access token expired; use the refresh endpoint');
      throw new DomainError('INVALID_TOKEN', 'Invalid access token');
    }
    const sid = typeof payload.sid === 'string' ? payload.sid : '';
    const rows = await em.execute<{ user_id: string; merchant_id: string; role: string | null; reauth_until: string | null; enrolment_required: boolean }[]>(
      // The role is the membership's now, not the token's: a changed role applies to the next
      // request, and a removed member (no membership row) is refused at once. The second-factor
      // policy is that of the merchant this session acts for (login's oldest membership, or the
      // one `switchMerchant` chose).
      `select s.user_id, s.merchant_id, m.role,
                (extract(epoch from case when not f.has then s.reauthenticated_at
                                         when s.reauthenticated_at is null or s.reauth_second_factor_at is null then null
                                         else least(s.reauthenticated_at, s.reauth_second_factor_at) end) * 1000 + ? * 1000)::bigint::text as reauth_until,
                (x.require_second_factor and not f.has) as enrolment_required
           from sessions s left join memberships m on m.user_id = s.user_id and m.merchant_id = s.merchant_id
           join merchants x on x.id = s.merchant_id
           cross join lateral (select exists(select 1 from user_totp t where t.user_id = s.user_id and t.confirmed_at is not null)
                                   or exists(select 1 from user_passkeys p where p.user_id = s.user_id) as has) f
          where s.id = ? and s.revoked_at is null and s.expires_at > now()`,
      [this.reauthWindowS, sid],
    );
    const row = rows[0];
    // Tokens issued before teams carry no `mid`; their session's merchant is the one they always had.
    if (!row || row.user_id !== payload.sub || (payload.mid !== undefined && row.merchant_id !== payload.mid))
      throw new DomainError('SESSION_REVOKED', 'Session revoked; log in again');
    if (row.role === null) throw new DomainError('SESSION_REVOKED', 'You are no longer a member of this merchant; log in again');
    return {
      kind: 'dashboard',
      userId: row.user_id,
      merchantId: row.merchant_id,
      sessionId: sid,
      role: row.role,
      reauthUntil: row.reauth_until === null ? null : Number(row.reauth_until),
      enrolmentRequired: row.enrolment_required,
    };
  }

  private async issue(em: EntityManager, session: Session, user: DashboardUser): Promise<TokenPair> {
    const now = Math.floor(Date.now() / 1000);
    const exp = now + this.opts.accessTtlS;
    const token = await new SignJWT({ sid: session.id, mid: session.merchant.id })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(user.id)
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setIssuedAt(now)
      .setExpirationTime(exp)
      .setJti(randomToken(12))
      .sign(this.key);
    const refresh = randomToken(32);
    em.create(RefreshToken, { session, tokenHash: sha256Hex(refresh) });
    return {
      token,
      refreshToken: refresh,
      tokenType: 'Bearer',
      expiresIn: this.opts.accessTtlS,
      expiredAt: exp,
      refreshExpiredAt: unix(session.expiresAt),
    };
  }
}
