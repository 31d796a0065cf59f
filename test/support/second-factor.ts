import { generate } from 'otplib';
import type { App } from '../../src/app';
import { BeginTotpEnrolmentDocument, ConfirmTotpEnrolmentDocument, LoginDocument, ReauthenticateDocument } from '../generated/graphql';
import { bearer, gql } from './graphql';

/** The code an authenticator app shows now for `secret` (the app's side: otplib, as the apps compute it). */
export function totpNow(secret: string, offsetSteps = 0): Promise<string> {
  return generate({ secret, epoch: Math.floor(Date.now() / 1000) + offsetSteps * 30 });
}

/**
 * A real user waits for the next 30-second code before using one again; a test moves the spent time
 * step back in the database instead of waiting (the replay rule itself is tested without this).
 */
export async function forgetSpentStep(app: App, email: string): Promise<void> {
  await app.orm.em
    .fork()
    .getConnection()
    .execute(`update user_totp set last_step = null where user_id = (select id from dashboard_users where email = ?)`, [email]);
}

/** Logs in (password only: the account has no second factor yet), re-authenticates, enrols TOTP. */
export async function enrolTotp(
  base: string,
  account: { email: string; password: string },
): Promise<{ token: string; secret: string; recoveryCodes: string[] }> {
  const token = (await gql(base, LoginDocument, { email: account.email, password: account.password })).data!.login.token;
  const re = await gql(base, ReauthenticateDocument, { password: account.password }, bearer(token));
  if (re.errors) throw new Error(`reauthenticate: ${JSON.stringify(re.errors)}`);
  const begun = await gql(base, BeginTotpEnrolmentDocument, {}, bearer(token));
  if (begun.errors) throw new Error(`beginTotpEnrolment: ${JSON.stringify(begun.errors)}`);
  const secret = begun.data!.beginTotpEnrolment.secret;
  const confirmed = await gql(base, ConfirmTotpEnrolmentDocument, { code: await totpNow(secret) }, bearer(token));
  if (confirmed.errors) throw new Error(`confirmTotpEnrolment: ${JSON.stringify(confirmed.errors)}`);
  return { token, secret, recoveryCodes: confirmed.data!.confirmTotpEnrolment.recoveryCodes! };
}
