import type { EntityManager } from '@mikro-orm/postgresql';
import { errors as joseErrors, jwtVerify, SignJWT } from 'jose';
import { requireDashboard, type DashboardCaller } from '../../common/access.js';
import type { RequestContext } from '../../common/context.js';
import { randomToken, sha256Hex } from '../../common/crypto.js';
import { DomainError } from '../../common/errors.js';
import { unix } from '../../common/time.js';
import { parseInput } from '../../common/validation.js';
import { recordAudit } from '../audit/audit.service.js';
import { DashboardUser } from './dashboard-user.entity.js';
import { loginCommand, refreshCommand, type LoginCommand, type RefreshCommand } from './merchant.commands.js';
import { verifyPassword } from './password.js';
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

export type { DashboardCaller };

export interface AuthOptions {
  jwtSecret: string;
  accessTtlS: number;
  refreshTtlS: number;
  /** Takes one login attempt for an account (SHA-256 of the normalised email); throws RATE_LIMITED when used up. */
  throttleAccount?: (accountHash: string) => Promise<void>;
  /** How long a `reauthenticate` makes the session fresh for sensitive operations (REAUTH_WINDOW_S). */
  reauthWindowS?: number;
}

const ISSUER = 'crypto-payment-gateway';
const AUDIENCE = 'dashboard';

/**
 * Dashboard sessions: a short-lived HS256 JWT (carries the session id) plus an opaque, rotating
 * refresh token. The session row is the allowlist: every access token is checked against it, so
 * logout takes effect on the next request, not at token expiry.
 */
export class AuthService {
  private readonly key: Uint8Array;

  constructor(private readonly opts: AuthOptions) {
    this.key = new TextEncoder().encode(opts.jwtSecret);
  }

  async login(ctx: RequestContext, cmd: LoginCommand): Promise<TokenPair> {
    const { em } = ctx;
    const { email, password } = parseInput(loginCommand, cmd);
    const normalised = email.trim().toLowerCase();
    // Per account as well as per IP (the transport's limit): a botnet spreading guesses over many
    // addresses still gets RATE_LIMITED per account. Taken before the password hash is checked.
    await this.opts.throttleAccount?.(sha256Hex(normalised));
    const user = await em.findOne(DashboardUser, { email: normalised });
    const ok = await verifyPassword(user?.passwordHash ?? null, password);
    if (!user || !ok) {
      // Recorded on the user's merchant when the email is known, else on the operators' chain.
      await recordAudit(em, ctx, 'auth.login_failed', { merchantId: user?.merchant.id ?? null, userId: user?.id ?? null, after: { email: normalised } });
      throw new DomainError('INVALID_CREDENTIALS', 'Invalid email or password');
    }
    return em.transactional(async (tx) => {
      const session = tx.create(Session, { user: user.id, expiresAt: new Date(Date.now() + this.opts.refreshTtlS * 1000) });
      const pair = await this.issue(tx, session, user);
      await tx.flush();
      await recordAudit(tx, ctx, 'auth.login', { merchantId: user.merchant.id, userId: user.id, after: { email: normalised, sessionId: session.id } });
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

  async logout(ctx: RequestContext): Promise<void> {
    const caller = requireDashboard(ctx);
    await ctx.em.transactional(async (tx) => {
      await tx.nativeUpdate(Session, { id: caller.sessionId, revokedAt: null }, { revokedAt: new Date(), revokedReason: 'logout' });
      await recordAudit(tx, ctx, 'auth.logout', { after: { sessionId: caller.sessionId } });
    });
  }

  /**
   * The password again, on the current session: for `REAUTH_WINDOW_S` the session may do sensitive
   * operations (access.ts requireFreshAuth). Counted against the account's login budget, checked in
   * constant time (a dummy hash when the user is gone). Returns until when it counts.
   */
  async reauthenticate(ctx: RequestContext, password: unknown): Promise<Date> {
    const caller = requireDashboard(ctx);
    if (typeof password !== 'string' || password.length === 0 || password.length > 1024) {
      throw new DomainError('VALIDATION_FAILED', 'Invalid request: password: required', { fields: { password: 'required' } });
    }
    const user = await ctx.em.findOne(DashboardUser, { id: caller.userId });
    await this.opts.throttleAccount?.(sha256Hex(user?.email ?? caller.userId));
    if (!(await verifyPassword(user?.passwordHash ?? null, password)) || !user) {
      await recordAudit(ctx.em, ctx, 'auth.reauthentication_failed', { after: { sessionId: caller.sessionId } });
      throw new DomainError('INVALID_PASSWORD', 'The password is not correct');
    }
    return ctx.em.transactional(async (tx) => {
      const rows = await tx.execute<{ at: Date }[]>(
        `update sessions set reauthenticated_at = now() where id = ? and revoked_at is null and expires_at > now() returning reauthenticated_at as at`,
        [caller.sessionId],
      );
      if (!rows[0]) throw new DomainError('SESSION_REVOKED', 'Session revoked; log in again');
      const until = new Date(new Date(rows[0].at).getTime() + this.reauthWindowS * 1000);
      await recordAudit(tx, ctx, 'auth.reauthenticated', { after: { sessionId: caller.sessionId, until } });
      return until;
    });
  }

  private get reauthWindowS(): number {
    return this.opts.reauthWindowS ?? 300;
  }

  /** Transports, before a context has a caller: verifies a Bearer token and that its session is still on the allowlist. */
  async authenticate(em: EntityManager, token: string): Promise<DashboardCaller> {
    let payload;
    try {
      ({ payload } = await jwtVerify(token, this.key, { issuer: ISSUER, audience: AUDIENCE, algorithms: ['HS256'] }));
    } catch (e) {
      if (e instanceof joseErrors.JWTExpired) throw new DomainError('INVALID_TOKEN', 'Access token expired; use the refresh endpoint');
      throw new DomainError('INVALID_TOKEN', 'Invalid access token');
    }
    const sid = typeof payload.sid === 'string' ? payload.sid : '';
    const rows = await em
      .execute<{ user_id: string; merchant_id: string; role: string; reauth_until: string | null }[]>(
        `select s.user_id, u.merchant_id, u.role,
                (extract(epoch from s.reauthenticated_at) * 1000 + ? * 1000)::bigint::text as reauth_until
           from sessions s join dashboard_users u on u.id = s.user_id
          where s.id = ? and s.revoked_at is null and s.expires_at > now()`,
        [this.reauthWindowS, sid],
      );
    const row = rows[0];
    if (!row || row.user_id !== payload.sub) throw new DomainError('SESSION_REVOKED', 'Session revoked; log in again');
    return { kind: 'dashboard', userId: row.user_id, merchantId: row.merchant_id, sessionId: sid, role: row.role, reauthUntil: row.reauth_until === null ? null : Number(row.reauth_until) };
  }

  private async issue(em: EntityManager, session: Session, user: DashboardUser): Promise<TokenPair> {
    const now = Math.floor(Date.now() / 1000);
    const exp = now + this.opts.accessTtlS;
    const token = await new SignJWT({ sid: session.id, role: user.role })
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
