import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';

/**
 * The second factor's raw-SQL tables (migration `second_factor`): `user_totp`, `user_recovery_codes`,
 * `user_passkeys`, `auth_challenges`, and the merchant's `require_second_factor`. Every "use once"
 * rule is a compare-and-set here (a TOTP time step above the last one, a recovery code or a challenge
 * not used yet), so two concurrent requests cannot both spend the same proof.
 */

export interface TotpRow {
  secret_ciphertext: string;
  confirmed_at: Date | null;
  last_step: string | null;
}

export interface PasskeyRow {
  id: string;
  credential_id: string;
  public_key: string;
  counter: string;
  transports: string[] | null;
  name: string;
  device_type: string | null;
  backed_up: boolean;
  created_at: Date;
  last_used_at: Date | null;
}

export type ChallengePurpose = 'login' | 'passkey_register' | 'passkey_login' | 'passkey_reauth';

export interface ChallengeRow {
  id: string;
  user_id: string;
  purpose: ChallengePurpose;
  session_id: string | null;
  webauthn_challenge: string | null;
  attempts: number;
  expires_at: Date;
  used_at: Date | null;
}

export const secondFactorStore = {
  /** Whether the user has a confirmed TOTP or at least one passkey. */
  async hasFactor(em: EntityManager, userId: string): Promise<boolean> {
    const [r] = await em.execute<{ has: boolean }[]>(
      `select exists(select 1 from user_totp where user_id = ? and confirmed_at is not null)
           or exists(select 1 from user_passkeys where user_id = ?) as has`,
      [userId, userId],
    );
    return r?.has === true;
  },

  async totp(em: EntityManager, userId: string): Promise<TotpRow | null> {
    const [r] = await em.execute<TotpRow[]>(`select secret_ciphertext, confirmed_at, last_step::text as last_step from user_totp where user_id = ?`, [userId]);
    return r ?? null;
  },

  /** A new pending secret replaces a pending one; a confirmed one is left alone (returns false). */
  async putPendingTotp(em: EntityManager, userId: string, ciphertext: string): Promise<boolean> {
    const rows = await em.execute<{ user_id: string }[]>(
      `insert into user_totp (user_id, secret_ciphertext) values (?, ?)
       on conflict (user_id) do update set secret_ciphertext = excluded.secret_ciphertext, created_at = now(), last_step = null
         where user_totp.confirmed_at is null
       returning user_id`,
      [userId, ciphertext],
    );
    return rows.length === 1;
  },

  async confirmTotp(em: EntityManager, userId: string, step: number): Promise<boolean> {
    const rows = await em.execute(`update user_totp set confirmed_at = now(), last_step = ? where user_id = ? and confirmed_at is null returning user_id`, [
      step,
      userId,
    ]);
    return rows.length === 1;
  },

  /** Spends a time step: only a step above the last one used succeeds (a code works once). */
  async spendTotpStep(em: EntityManager, userId: string, step: number): Promise<boolean> {
    const rows = await em.execute(
      `update user_totp set last_step = ? where user_id = ? and confirmed_at is not null and (last_step is null or last_step < ?) returning user_id`,
      [step, userId, step],
    );
    return rows.length === 1;
  },

  async deleteTotp(em: EntityManager, userId: string): Promise<boolean> {
    const rows = await em.execute(`delete from user_totp where user_id = ? returning user_id`, [userId]);
    return rows.length === 1;
  },

  /** Replaces every recovery code of the user (old ones stop working). */
  async replaceRecoveryCodes(em: EntityManager, userId: string, hashes: string[]): Promise<void> {
    await em.execute(`delete from user_recovery_codes where user_id = ?`, [userId]);
    for (const h of hashes) await em.execute(`insert into user_recovery_codes (id, user_id, code_hash) values (?, ?, ?)`, [randomUUID(), userId, h]);
  },

  async deleteRecoveryCodes(em: EntityManager, userId: string): Promise<void> {
    await em.execute(`delete from user_recovery_codes where user_id = ?`, [userId]);
  },

  async recoveryCodesLeft(em: EntityManager, userId: string): Promise<number> {
    const [r] = await em.execute<{ n: string }[]>(`select count(*) as n from user_recovery_codes where user_id = ? and used_at is null`, [userId]);
    return Number(r?.n ?? 0);
  },

  /** 'spent' when this call used the code; 'used' when it had been used before; 'unknown' otherwise. */
  async spendRecoveryCode(em: EntityManager, userId: string, hash: string): Promise<'spent' | 'used' | 'unknown'> {
    const spent = await em.execute(`update user_recovery_codes set used_at = now() where user_id = ? and code_hash = ? and used_at is null returning id`, [
      userId,
      hash,
    ]);
    if (spent.length === 1) return 'spent';
    const [seen] = await em.execute(`select 1 from user_recovery_codes where user_id = ? and code_hash = ?`, [userId, hash]);
    return seen ? 'used' : 'unknown';
  },

  async passkeys(em: EntityManager, userId: string): Promise<PasskeyRow[]> {
    return em.execute<PasskeyRow[]>(
      `select id, credential_id, public_key, counter::text as counter, transports, name, device_type, backed_up, created_at, last_used_at
         from user_passkeys where user_id = ? order by created_at, id`,
      [userId],
    );
  },

  async insertPasskey(
    em: EntityManager,
    p: {
      userId: string;
      credentialId: string;
      publicKey: string;
      counter: number;
      transports: string[] | null;
      name: string;
      deviceType: string;
      backedUp: boolean;
    },
  ): Promise<PasskeyRow> {
    const [row] = await em.execute<PasskeyRow[]>(
      `insert into user_passkeys (id, user_id, credential_id, public_key, counter, transports, name, device_type, backed_up)
       values (?, ?, ?, ?, ?, string_to_array(?, ','), ?, ?, ?)
       returning id, credential_id, public_key, counter::text as counter, transports, name, device_type, backed_up, created_at, last_used_at`,
      // Transports as one comma-joined text (names like "internal", "hybrid"): an array binding would be expanded into a list.
      [randomUUID(), p.userId, p.credentialId, p.publicKey, p.counter, p.transports?.length ? p.transports.join(',') : null, p.name, p.deviceType, p.backedUp],
    );
    return row!;
  },

  /** Records a verified assertion; the signature counter only moves forward (a cloned authenticator shows as a step back). */
  async touchPasskey(em: EntityManager, id: string, counter: number): Promise<void> {
    await em.execute(`update user_passkeys set counter = greatest(counter, ?), last_used_at = now() where id = ?`, [counter, id]);
  },

  async deletePasskey(em: EntityManager, userId: string, id: string): Promise<boolean> {
    const rows = await em.execute(`delete from user_passkeys where user_id = ? and id = ? returning id`, [userId, id]);
    return rows.length === 1;
  },

  async createChallenge(
    em: EntityManager,
    c: { userId: string; purpose: ChallengePurpose; tokenHash?: string | null; sessionId?: string | null; webauthnChallenge?: string | null; ttlS: number },
  ): Promise<{ id: string; expires_at: Date }> {
    // A user's older unused challenges of the same purpose (and session) end here: one live ceremony at a time.
    if (c.purpose !== 'login') {
      await em.execute(
        `update auth_challenges set used_at = now() where user_id = ? and purpose = ? and session_id is not distinct from ? and used_at is null`,
        [c.userId, c.purpose, c.sessionId ?? null],
      );
    }
    const [row] = await em.execute<{ id: string; expires_at: Date }[]>(
      `insert into auth_challenges (id, user_id, purpose, token_hash, session_id, webauthn_challenge, expires_at)
       values (?, ?, ?, ?, ?, ?, now() + make_interval(secs => ?)) returning id, expires_at`,
      [randomUUID(), c.userId, c.purpose, c.tokenHash ?? null, c.sessionId ?? null, c.webauthnChallenge ?? null, c.ttlS],
    );
    return row!;
  },

  async loginChallenge(em: EntityManager, tokenHash: string): Promise<ChallengeRow | null> {
    const [r] = await em.execute<ChallengeRow[]>(`select * from auth_challenges where token_hash = ? and purpose = 'login'`, [tokenHash]);
    return r ?? null;
  },

  /** The session's live ceremony of that purpose. */
  async sessionChallenge(em: EntityManager, sessionId: string, purpose: ChallengePurpose): Promise<ChallengeRow | null> {
    const [r] = await em.execute<ChallengeRow[]>(
      `select * from auth_challenges where session_id = ? and purpose = ? and used_at is null and expires_at > now() order by created_at desc limit 1`,
      [sessionId, purpose],
    );
    return r ?? null;
  },

  async setWebauthnChallenge(em: EntityManager, id: string, challenge: string): Promise<void> {
    await em.execute(`update auth_challenges set webauthn_challenge = ? where id = ?`, [challenge, id]);
  },

  /** Counts a failed proof; returns the attempts so far. */
  async countAttempt(em: EntityManager, id: string): Promise<number> {
    const [r] = await em.execute<{ attempts: number }[]>(`update auth_challenges set attempts = attempts + 1 where id = ? returning attempts`, [id]);
    return r?.attempts ?? 0;
  },

  /** Spends a challenge; false when another request spent it first or it expired meanwhile. */
  async spendChallenge(em: EntityManager, id: string): Promise<boolean> {
    const rows = await em.execute(`update auth_challenges set used_at = now() where id = ? and used_at is null and expires_at > now() returning id`, [id]);
    return rows.length === 1;
  },

  /** Drops challenges that ended over a day ago (called on the way, not on a schedule: the table stays small). */
  async prune(em: EntityManager): Promise<void> {
    await em.execute(`delete from auth_challenges where expires_at < now() - interval '1 day'`);
  },

  async merchantRequiresFactor(em: EntityManager, merchantId: string): Promise<boolean> {
    const [r] = await em.execute<{ r: boolean }[]>(`select require_second_factor as r from merchants where id = ?`, [merchantId]);
    return r?.r === true;
  },

  async setMerchantRequiresFactor(em: EntityManager, merchantId: string, required: boolean): Promise<void> {
    await em.execute(`update merchants set require_second_factor = ? where id = ?`, [required, merchantId]);
  },

  async markSessionSecondFactor(em: EntityManager, sessionId: string): Promise<void> {
    await em.execute(`update sessions set reauth_second_factor_at = now() where id = ?`, [sessionId]);
  },
};
