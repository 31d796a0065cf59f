import type { EntityManager } from '@mikro-orm/postgresql';
import { recordAudit } from '../audit/audit.service.js';
import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
  type AuthenticationResponseJSON,
  type AuthenticatorTransport,
  type RegistrationResponseJSON,
} from '@simplewebauthn/server';
import QRCode from 'qrcode';
import { requireDashboardSession, requireFreshAuth, requireFreshSession } from '../../common/access.js';
import type { RequestContext } from '../../common/context.js';
import { randomToken, sha256Hex, type SecretBox } from '../../common/crypto.js';
import { DomainError } from '../../common/errors.js';
import { TOTP_AAD } from '../../common/secret-reencrypt.js';
import { DashboardUser } from './dashboard-user.entity.js';
import { secondFactorStore as store, type ChallengeRow, type PasskeyRow } from './second-factor.store.js';
import { generateRecoveryCodes, newTotpSecret, normaliseRecoveryCode, totpUri, verifyTotp } from './totp.js';

/** The proof a second step carries: exactly one of them. */
export interface SecondFactorProof {
  totpCode?: string | null;
  recoveryCode?: string | null;
  /** The WebAuthn assertion (`PublicKeyCredential.toJSON()` of `navigator.credentials.get`). */
  passkey?: Record<string, unknown> | null;
}

export type SecondFactorMethod = 'totp' | 'recovery_code' | 'passkey';

export interface LoginChallenge {
  /** Opaque; presented once to `completeLogin` (stored as SHA-256). */
  token: string;
  expiresAt: Date;
  /** What this user can answer with. */
  methods: SecondFactorMethod[];
}

export interface SecondFactorStatus {
  totpEnabled: boolean;
  /** An enrolment started and not confirmed yet. */
  totpPending: boolean;
  passkeys: PasskeyRow[];
  recoveryCodesRemaining: number;
  /** The merchant's policy. */
  requiredByMerchant: boolean;
  /** The policy applies and this user has no factor yet: enrol before anything else. */
  enrolmentRequired: boolean;
}

export interface SecondFactorOptions {
  box: SecretBox;
  /** The relying party (WebAuthn) and TOTP issuer, from PUBLIC_BASE_URL. Read per use: the test server fills in its port late. */
  relyingParty: () => { id: string; origin: string; name: string };
  /** Lifetime of the login second step and of the passkey ceremonies, seconds. */
  challengeTtlS: number;
  /** Wrong answers one login challenge takes before it is spent. */
  maxAttempts: number;
  /** Takes one attempt from the account's login budget (SHA-256 of the email); throws RATE_LIMITED. */
  throttleAccount?: (accountHash: string) => Promise<void>;
}

/**
 * Second factors of dashboard users: TOTP (RFC 6238, sealed at rest under the data key), single-use recovery
 * codes, WebAuthn passkeys; the login second step; the merchant's policy. AuthService asks it
 * `loginChallenge` after a right password and `verify` on re-authentication. Every proof is spent
 * atomically (store), so a code, a recovery code or a challenge works once.
 */
export class SecondFactorService {
  constructor(private readonly opts: SecondFactorOptions) {}

  hasFactor(em: EntityManager, userId: string): Promise<boolean> {
    return store.hasFactor(em, userId);
  }

  async status(ctx: RequestContext): Promise<SecondFactorStatus> {
    const caller = requireDashboardSession(ctx);
    const [totp, passkeys, left, required] = await Promise.all([
      store.totp(ctx.em, caller.userId),
      store.passkeys(ctx.em, caller.userId),
      store.recoveryCodesLeft(ctx.em, caller.userId),
      store.merchantRequiresFactor(ctx.em, caller.merchantId),
    ]);
    const totpEnabled = !!totp?.confirmed_at;
    return {
      totpEnabled,
      totpPending: !!totp && !totp.confirmed_at,
      passkeys,
      recoveryCodesRemaining: left,
      requiredByMerchant: required,
      enrolmentRequired: required && !totpEnabled && passkeys.length === 0,
    };
  }

  // ---- TOTP -------------------------------------------------------------------------------------

  /** Starts (or restarts) enrolment: a new secret, sealed at rest, shown once as URI and QR. Fresh session needed. */
  async beginTotp(ctx: RequestContext): Promise<{ secret: string; otpauthUri: string; qrCodeDataUrl: string }> {
    const caller = requireFreshSession(ctx, 'set up an authenticator app');
    const user = await this.user(ctx.em, caller.userId);
    const secret = newTotpSecret();
    const stored = await store.putPendingTotp(ctx.em, user.id, this.opts.box.seal(secret, TOTP_AAD(user.id)));
    if (!stored) throw new DomainError('SECOND_FACTOR_STATE', 'An authenticator app is already set up; turn it off first to replace it');
    const otpauthUri = totpUri({ secret, account: user.email, issuer: this.opts.relyingParty().name });
    const qrCodeDataUrl = await QRCode.toDataURL(otpauthUri, { errorCorrectionLevel: 'M', margin: 2, width: 240 });
    return { secret, otpauthUri, qrCodeDataUrl };
  }

  /**
   * Activates the pending secret with a first valid code. Returns the recovery codes when this is the
   * user's first factor (shown once), else null (the existing codes stay).
   */
  async confirmTotp(ctx: RequestContext, code: unknown): Promise<{ recoveryCodes: string[] | null }> {
    const caller = requireDashboardSession(ctx);
    const totp = await store.totp(ctx.em, caller.userId);
    if (!totp || totp.confirmed_at) throw new DomainError('SECOND_FACTOR_STATE', 'No authenticator app enrolment is pending; start one first');
    await this.throttle(ctx.em, caller.userId);
    const step = await verifyTotp(this.openSecret(caller.userId, totp.secret_ciphertext), codeString(code, 'code'), null);
    if (step === null) throw new DomainError('INVALID_SECOND_FACTOR', 'The code is not correct; check the time on your device and try the current code');
    return ctx.em.transactional(async (tx) => {
      const hadFactor = await store.hasFactor(tx, caller.userId);
      if (!(await store.confirmTotp(tx, caller.userId, step))) throw new DomainError('SECOND_FACTOR_STATE', 'The enrolment changed meanwhile; start again');
      // The session just proved this factor.
      await store.markSessionSecondFactor(tx, caller.sessionId);
      await recordAudit(tx, ctx, 'second_factor.totp_enabled', { userId: caller.userId, after: { sessionId: caller.sessionId } });
      return { recoveryCodes: hadFactor ? null : await this.issueRecoveryCodes(tx, caller.userId) };
    });
  }

  /** Turns TOTP off (fresh session). The last factor cannot go while the merchant requires one. */
  async disableTotp(ctx: RequestContext): Promise<void> {
    const caller = requireFreshSession(ctx, 'turn off two-factor authentication');
    await ctx.em.transactional(async (tx) => {
      await this.lockUser(tx, caller.userId);
      const totp = await store.totp(tx, caller.userId);
      if (!totp) throw new DomainError('SECOND_FACTOR_STATE', 'No authenticator app is set up');
      await store.deleteTotp(tx, caller.userId);
      await this.afterRemoval(tx, caller.userId, caller.merchantId);
      await recordAudit(tx, ctx, 'second_factor.totp_disabled', { userId: caller.userId, after: { sessionId: caller.sessionId } });
    });
  }

  /** New recovery codes (fresh session): the old ones stop working. Shown once. */
  async regenerateRecoveryCodes(ctx: RequestContext): Promise<string[]> {
    const caller = requireFreshSession(ctx, 'regenerate recovery codes');
    return ctx.em.transactional(async (tx) => {
      await this.lockUser(tx, caller.userId);
      if (!(await store.hasFactor(tx, caller.userId)))
        throw new DomainError('SECOND_FACTOR_STATE', 'Recovery codes exist only with an authenticator app or a passkey');
      await recordAudit(tx, ctx, 'second_factor.recovery_codes_regenerated', { userId: caller.userId, after: { sessionId: caller.sessionId } });
      return this.issueRecoveryCodes(tx, caller.userId);
    });
  }

  // ---- Passkeys ---------------------------------------------------------------------------------

  /** WebAuthn creation options (`navigator.credentials.create({ publicKey })`), fresh session needed. */
  async passkeyRegistrationOptions(ctx: RequestContext): Promise<Record<string, unknown>> {
    const caller = requireFreshSession(ctx, 'add a passkey');
    const user = await this.user(ctx.em, caller.userId);
    const rp = this.opts.relyingParty();
    const existing = await store.passkeys(ctx.em, user.id);
    const options = await generateRegistrationOptions({
      rpName: rp.name,
      rpID: rp.id,
      userName: user.email,
      userID: new TextEncoder().encode(user.id),
      attestationType: 'none',
      excludeCredentials: existing.map((p) => ({ id: p.credential_id, transports: transportsOf(p) })),
      // A second factor: the password is the first, so the authenticator need not verify the user itself.
      authenticatorSelection: { residentKey: 'discouraged', userVerification: 'discouraged' },
      timeout: this.opts.challengeTtlS * 1000,
    });
    await store.createChallenge(ctx.em, {
      userId: user.id,
      purpose: 'passkey_register',
      sessionId: caller.sessionId,
      webauthnChallenge: options.challenge,
      ttlS: this.opts.challengeTtlS,
    });
    return options as unknown as Record<string, unknown>;
  }

  /** Verifies the attestation of the session's live registration ceremony and stores the passkey. */
  async registerPasskey(ctx: RequestContext, response: unknown, name: unknown): Promise<{ passkey: PasskeyRow; recoveryCodes: string[] | null }> {
    const caller = requireFreshSession(ctx, 'add a passkey');
    const label = typeof name === 'string' && name.trim() ? name.trim().slice(0, 64) : 'Passkey';
    const challenge = await store.sessionChallenge(ctx.em, caller.sessionId, 'passkey_register');
    if (!challenge?.webauthn_challenge)
      throw new DomainError('CHALLENGE_EXPIRED', 'No passkey registration is in progress (or it expired); ask for new options');
    const rp = this.opts.relyingParty();
    let info;
    try {
      const v = await verifyRegistrationResponse({
        response: asObject(response, 'response') as unknown as RegistrationResponseJSON,
        expectedChallenge: challenge.webauthn_challenge,
        expectedOrigin: rp.origin,
        expectedRPID: rp.id,
        requireUserVerification: false,
      });
      if (!v.verified || !v.registrationInfo) throw new Error('not verified');
      info = v.registrationInfo;
    } catch {
      throw new DomainError(
        'INVALID_SECOND_FACTOR',
        'The passkey registration could not be verified (wrong origin, challenge or signature); ask for new options and try again',
      );
    }
    return ctx.em.transactional(async (tx) => {
      if (!(await store.spendChallenge(tx, challenge.id)))
        throw new DomainError('CHALLENGE_EXPIRED', 'This passkey registration was used or expired; ask for new options');
      const hadFactor = await store.hasFactor(tx, caller.userId);
      const passkey = await store.insertPasskey(tx, {
        userId: caller.userId,
        credentialId: info.credential.id,
        publicKey: Buffer.from(info.credential.publicKey).toString('base64url'),
        counter: info.credential.counter,
        transports: info.credential.transports ?? null,
        name: label,
        deviceType: info.credentialDeviceType,
        backedUp: info.credentialBackedUp,
      });
      await store.markSessionSecondFactor(tx, caller.sessionId);
      await recordAudit(tx, ctx, 'second_factor.passkey_registered', { userId: caller.userId, subject: passkey.id, after: { id: passkey.id, name: label } });
      return { passkey, recoveryCodes: hadFactor ? null : await this.issueRecoveryCodes(tx, caller.userId) };
    });
  }

  async listPasskeys(ctx: RequestContext): Promise<PasskeyRow[]> {
    return store.passkeys(ctx.em, requireDashboardSession(ctx).userId);
  }

  /** Removes one of the user's passkeys (fresh session). The last factor cannot go while the merchant requires one. */
  async removePasskey(ctx: RequestContext, id: unknown): Promise<void> {
    const caller = requireFreshSession(ctx, 'remove a passkey');
    if (typeof id !== 'string' || !/^[0-9a-f-]{36}$/i.test(id)) throw new DomainError('PASSKEY_NOT_FOUND', 'No such passkey');
    await ctx.em.transactional(async (tx) => {
      await this.lockUser(tx, caller.userId);
      if (!(await store.deletePasskey(tx, caller.userId, id))) throw new DomainError('PASSKEY_NOT_FOUND', 'No such passkey');
      await this.afterRemoval(tx, caller.userId, caller.merchantId);
      await recordAudit(tx, ctx, 'second_factor.passkey_removed', { userId: caller.userId, subject: id, after: { id } });
    });
  }

  // ---- Login second step and re-authentication ---------------------------------------------------

  /** After a right password: the challenge the client answers with a second factor (AuthService.login). */
  async loginChallenge(em: EntityManager, userId: string): Promise<LoginChallenge> {
    const token = randomToken(32);
    const row = await store.createChallenge(em, { userId, purpose: 'login', tokenHash: sha256Hex(token), ttlS: this.opts.challengeTtlS });
    await store.prune(em);
    return { token, expiresAt: new Date(row.expires_at), methods: await this.methods(em, userId) };
  }

  /** WebAuthn request options for a login challenge (the passkey answer to the second step). */
  async loginPasskeyOptions(ctx: RequestContext, challengeToken: unknown): Promise<Record<string, unknown>> {
    const challenge = await this.liveLoginChallenge(ctx.em, challengeToken);
    const options = await this.assertionOptions(ctx.em, challenge.user_id);
    await store.setWebauthnChallenge(ctx.em, challenge.id, options.challenge);
    return options as unknown as Record<string, unknown>;
  }

  /**
   * Answers a login challenge. Returns the user id to open a session for; a wrong answer counts
   * against the challenge (`maxAttempts`) and the account's login budget.
   */
  async completeLogin(ctx: RequestContext, challengeToken: unknown, proof: SecondFactorProof): Promise<{ userId: string; method: SecondFactorMethod }> {
    const challenge = await this.liveLoginChallenge(ctx.em, challengeToken);
    await this.throttle(ctx.em, challenge.user_id);
    let method: SecondFactorMethod;
    try {
      method = await this.verify(ctx.em, challenge.user_id, proof, challenge.webauthn_challenge);
    } catch (e) {
      if (e instanceof DomainError && (e.code === 'INVALID_SECOND_FACTOR' || e.code === 'SECOND_FACTOR_REUSED')) await store.countAttempt(ctx.em, challenge.id);
      throw e;
    }
    if (!(await store.spendChallenge(ctx.em, challenge.id))) throw new DomainError('CHALLENGE_EXPIRED', 'This sign-in step was used or expired; log in again');
    return { userId: challenge.user_id, method };
  }

  /** WebAuthn request options for re-authenticating this session with a passkey. */
  async reauthPasskeyOptions(ctx: RequestContext): Promise<Record<string, unknown>> {
    const caller = requireDashboardSession(ctx);
    const options = await this.assertionOptions(ctx.em, caller.userId);
    await store.createChallenge(ctx.em, {
      userId: caller.userId,
      purpose: 'passkey_reauth',
      sessionId: caller.sessionId,
      webauthnChallenge: options.challenge,
      ttlS: this.opts.challengeTtlS,
    });
    return options as unknown as Record<string, unknown>;
  }

  /** The second half of `reauthenticate` (AuthService): the proof, on this session. Spends a passkey ceremony. */
  async verifyForReauth(ctx: RequestContext, userId: string, sessionId: string, proof: SecondFactorProof): Promise<SecondFactorMethod> {
    await this.throttle(ctx.em, userId);
    let expected: ChallengeRow | null = null;
    if (proof.passkey) {
      expected = await store.sessionChallenge(ctx.em, sessionId, 'passkey_reauth');
      if (!expected?.webauthn_challenge)
        throw new DomainError('CHALLENGE_EXPIRED', 'No passkey check is in progress on this session (or it expired); ask for new options');
    }
    const method = await this.verify(ctx.em, userId, proof, expected?.webauthn_challenge ?? null);
    if (expected && !(await store.spendChallenge(ctx.em, expected.id)))
      throw new DomainError('CHALLENGE_EXPIRED', 'This passkey check was used or expired; ask for new options');
    return method;
  }

  // ---- Merchant policy --------------------------------------------------------------------------

  /**
   * Owner/admin, fresh session: every dashboard user of the merchant must have a second factor; one
   * without is asked to enrol before anything else. Turning it on needs one of your own.
   */
  async setPolicy(ctx: RequestContext, required: unknown): Promise<boolean> {
    const caller = requireFreshAuth(ctx, 'security.manage', 'change the two-factor policy');
    if (typeof required !== 'boolean')
      throw new DomainError('VALIDATION_FAILED', 'Invalid request: required: must be a boolean', { fields: { required: 'must be a boolean' } });
    if (required && !(await store.hasFactor(ctx.em, caller.userId))) {
      throw new DomainError('SECOND_FACTOR_STATE', 'Set up a second factor for yourself before requiring one from everybody');
    }
    await ctx.em.transactional(async (tx) => {
      await store.setMerchantRequiresFactor(tx, caller.merchantId, required);
      await recordAudit(tx, ctx, 'merchant.second_factor_policy_changed', { after: { required } });
    });
    return required;
  }

  // ---- internals --------------------------------------------------------------------------------

  /** Checks one proof for the user; throws INVALID_SECOND_FACTOR or SECOND_FACTOR_REUSED. */
  private async verify(em: EntityManager, userId: string, proof: SecondFactorProof, webauthnChallenge: string | null): Promise<SecondFactorMethod> {
    const given = [proof.totpCode, proof.recoveryCode, proof.passkey].filter((v) => v !== undefined && v !== null);
    if (given.length !== 1) {
      throw new DomainError('VALIDATION_FAILED', 'Invalid request: give exactly one of totpCode, recoveryCode or passkey', {
        fields: { secondFactor: 'exactly one of totpCode, recoveryCode, passkey' },
      });
    }
    if (proof.totpCode !== undefined && proof.totpCode !== null) {
      const totp = await store.totp(em, userId);
      if (!totp?.confirmed_at) throw new DomainError('INVALID_SECOND_FACTOR', 'The code is not correct');
      const secret = this.openSecret(userId, totp.secret_ciphertext);
      const code = codeString(proof.totpCode, 'totpCode');
      const last = totp.last_step === null ? null : Number(totp.last_step);
      const step = await verifyTotp(secret, code, last);
      if (step === null) {
        // Right code, but its time step was spent already (by this request's twin or a thief who saw it).
        if (last !== null && (await verifyTotp(secret, code, null)) !== null)
          throw new DomainError('SECOND_FACTOR_REUSED', 'This code was used already; wait for the next one');
        throw new DomainError('INVALID_SECOND_FACTOR', 'The code is not correct');
      }
      if (!(await store.spendTotpStep(em, userId, step))) throw new DomainError('SECOND_FACTOR_REUSED', 'This code was used already; wait for the next one');
      return 'totp';
    }
    if (proof.recoveryCode !== undefined && proof.recoveryCode !== null) {
      const code = normaliseRecoveryCode(codeString(proof.recoveryCode, 'recoveryCode'));
      const outcome = code ? await store.spendRecoveryCode(em, userId, sha256Hex(code)) : 'unknown';
      if (outcome === 'used') throw new DomainError('SECOND_FACTOR_REUSED', 'This recovery code was used already; each works once');
      if (outcome === 'unknown') throw new DomainError('INVALID_SECOND_FACTOR', 'The recovery code is not correct');
      return 'recovery_code';
    }
    const response = asObject(proof.passkey, 'passkey') as unknown as AuthenticationResponseJSON;
    if (!webauthnChallenge) throw new DomainError('CHALLENGE_EXPIRED', 'Ask for passkey options first; the answer must sign their challenge');
    const passkeys = await store.passkeys(em, userId);
    const key = passkeys.find((p) => p.credential_id === response.id);
    if (!key) throw new DomainError('INVALID_SECOND_FACTOR', 'This passkey is not registered for the account');
    const rp = this.opts.relyingParty();
    let newCounter: number;
    try {
      const v = await verifyAuthenticationResponse({
        response,
        expectedChallenge: webauthnChallenge,
        expectedOrigin: rp.origin,
        expectedRPID: rp.id,
        requireUserVerification: false,
        credential: { id: key.credential_id, publicKey: Buffer.from(key.public_key, 'base64url'), counter: Number(key.counter), transports: transportsOf(key) },
      });
      if (!v.verified) throw new Error('not verified');
      newCounter = v.authenticationInfo.newCounter;
    } catch {
      throw new DomainError('INVALID_SECOND_FACTOR', 'The passkey answer could not be verified (wrong origin, challenge, signature or counter)');
    }
    await store.touchPasskey(em, key.id, newCounter);
    return 'passkey';
  }

  private async assertionOptions(em: EntityManager, userId: string) {
    const passkeys = await store.passkeys(em, userId);
    if (passkeys.length === 0) throw new DomainError('SECOND_FACTOR_STATE', 'This account has no passkey');
    return generateAuthenticationOptions({
      rpID: this.opts.relyingParty().id,
      allowCredentials: passkeys.map((p) => ({ id: p.credential_id, transports: transportsOf(p) })),
      userVerification: 'discouraged',
      timeout: this.opts.challengeTtlS * 1000,
    });
  }

  private async liveLoginChallenge(em: EntityManager, token: unknown): Promise<ChallengeRow> {
    if (typeof token !== 'string' || token.length === 0 || token.length > 128)
      throw new DomainError('CHALLENGE_EXPIRED', 'Unknown or expired sign-in step; log in again');
    const row = await store.loginChallenge(em, sha256Hex(token));
    if (!row || row.used_at || new Date(row.expires_at).getTime() <= Date.now() || row.attempts >= this.opts.maxAttempts) {
      throw new DomainError(
        'CHALLENGE_EXPIRED',
        row && row.attempts >= this.opts.maxAttempts
          ? 'Too many wrong answers for this sign-in step; log in again'
          : 'Unknown or expired sign-in step; log in again',
      );
    }
    return row;
  }

  private async methods(em: EntityManager, userId: string): Promise<SecondFactorMethod[]> {
    const [totp, passkeys, left] = await Promise.all([store.totp(em, userId), store.passkeys(em, userId), store.recoveryCodesLeft(em, userId)]);
    const m: SecondFactorMethod[] = [];
    if (totp?.confirmed_at) m.push('totp');
    if (passkeys.length) m.push('passkey');
    if (left > 0) m.push('recovery_code');
    return m;
  }

  private async issueRecoveryCodes(em: EntityManager, userId: string): Promise<string[]> {
    const codes = generateRecoveryCodes();
    await store.replaceRecoveryCodes(
      em,
      userId,
      codes.map((c) => sha256Hex(normaliseRecoveryCode(c)!)),
    );
    return codes;
  }

  /** After a factor is removed: with none left the recovery codes go too; the merchant's policy may forbid the last one going. */
  private async afterRemoval(em: EntityManager, userId: string, merchantId: string): Promise<void> {
    if (await store.hasFactor(em, userId)) return;
    if (await store.merchantRequiresFactor(em, merchantId)) {
      throw new DomainError('SECOND_FACTOR_REQUIRED_BY_POLICY', 'Your merchant requires a second factor: add another one before removing the last');
    }
    await store.deleteRecoveryCodes(em, userId);
    // A pending (unconfirmed) TOTP enrolment is no factor either; nothing else to clear.
  }

  /** Serialises factor changes of one user (two removals at once must not both pass the "last factor" check). */
  private async lockUser(em: EntityManager, userId: string): Promise<void> {
    await em.execute(`select pg_advisory_xact_lock(hashtextextended(?, 0))`, [`second_factor:${userId}`]);
  }

  private async user(em: EntityManager, userId: string): Promise<DashboardUser> {
    const user = await em.findOne(DashboardUser, { id: userId });
    if (!user) throw new DomainError('SESSION_REVOKED', 'Session revoked; log in again');
    return user;
  }

  private async throttle(em: EntityManager, userId: string): Promise<void> {
    if (!this.opts.throttleAccount) return;
    const user = await em.findOne(DashboardUser, { id: userId });
    await this.opts.throttleAccount(sha256Hex(user?.email ?? userId));
  }

  private openSecret(userId: string, ciphertext: string): string {
    return this.opts.box.open(ciphertext, TOTP_AAD(userId)).toString('utf8');
  }
}

function transportsOf(p: PasskeyRow): AuthenticatorTransport[] | undefined {
  return (p.transports ?? undefined) as AuthenticatorTransport[] | undefined;
}

function codeString(v: unknown, field: string): string {
  if (typeof v !== 'string' || v.length === 0 || v.length > 64)
    throw new DomainError('VALIDATION_FAILED', `Invalid request: ${field}: required`, { fields: { [field]: 'required' } });
  return v;
}

function asObject(v: unknown, field: string): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new DomainError('VALIDATION_FAILED', `Invalid request: ${field}: must be the credential's JSON object`, { fields: { [field]: 'must be an object' } });
  return v as Record<string, unknown>;
}
