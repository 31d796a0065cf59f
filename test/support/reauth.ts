import { LoginDocument, ReauthenticateDocument } from '../generated/graphql';
import { bearer, gql } from './graphql';

/**
 * A dashboard access token whose session has just given the password again (`reauthenticate`), as
 * the dashboard does before a sensitive operation (rotating an API key, the notification URL, the
 * sweep schedule): fresh for REAUTH_WINDOW_S.
 */
export async function freshLogin(base: string, account: { email: string; password: string }): Promise<string> {
  const token = (await gql(base, LoginDocument, { email: account.email, password: account.password })).data!.login.token;
  const r = await gql(base, ReauthenticateDocument, { password: account.password }, bearer(token));
  if (r.errors) throw new Error(`reauthenticate failed: ${JSON.stringify(r.errors)}`);
  return token;
}
