import { z } from 'zod';
import { parseInput } from '../common/validation.js';
import { loginEmail, loginPassword, refreshTokenField, type LoginCommand, type RefreshCommand } from '../modules/merchants/merchant.commands.js';
import type { LoginChallenge, SecondFactorProof } from '../modules/merchants/second-factor.service.js';

/* The legacy REST dialect of dashboard sign-in → AuthService's commands. */

export const loginBody = z.object({ email: loginEmail, password: loginPassword, user_type: z.literal('merchant', { message: 'must be "merchant"' }) });
export const refreshBody = z.object({ refresh_token: refreshTokenField });

/** `POST /auth/login`: the spec's body carries `user_type`, always "merchant" here. */
export function toLogin(body: unknown): LoginCommand {
  const b = parseInput(loginBody, body);
  return { email: b.email, password: b.password };
}

/** `POST /auth/refresh`. */
export function toRefresh(body: unknown): RefreshCommand {
  return { refreshToken: parseInput(refreshBody, body).refresh_token };
}

/** The second factor in the REST dialect: `totp_code`, `recovery_code` or `passkey` (the WebAuthn assertion JSON). */
export const secondFactorBody = z.object({
  totp_code: z.string().max(64).optional(),
  recovery_code: z.string().max(64).optional(),
  passkey: z.record(z.string(), z.unknown()).optional(),
});
export const secondStepBody = secondFactorBody.extend({ challenge_token: z.string().min(1).max(128) });

/** `POST /auth/login/second-factor`. */
export function toSecondStep(body: unknown): { challengeToken: string; proof: SecondFactorProof } {
  const b = parseInput(secondStepBody, body);
  return { challengeToken: b.challenge_token, proof: { totpCode: b.totp_code ?? null, recoveryCode: b.recovery_code ?? null, passkey: b.passkey ?? null } };
}

/** `POST /auth/reauthenticate`: the optional second factor beside the password (the password is checked by the service). */
export function toSecondFactorProof(body: unknown): SecondFactorProof | null {
  const b = parseInput(secondFactorBody.passthrough(), body ?? {});
  if (b.totp_code === undefined && b.recovery_code === undefined && b.passkey === undefined) return null;
  return { totpCode: b.totp_code ?? null, recoveryCode: b.recovery_code ?? null, passkey: b.passkey ?? null };
}

/** The `data` of SECOND_FACTOR_REQUIRED on `POST /auth/login`. */
export function loginChallengeView(c: LoginChallenge): Record<string, unknown> {
  return { challenge_token: c.token, challenge_expired_at: Math.floor(c.expiresAt.getTime() / 1000), methods: c.methods };
}
