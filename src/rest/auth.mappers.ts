import { z } from 'zod';
import { parseInput } from '../common/validation.js';
import { loginEmail, loginPassword, refreshTokenField, type LoginCommand, type RefreshCommand } from '../modules/merchants/merchant.commands.js';

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
