import { useState } from 'preact/hooks';
import { gql } from '../api';
import { AcceptTeamInviteDocument } from '../documents';
import { ErrorLine, useAction, useApp } from '../ui';
import { SignIn } from './sign-in';

/** The invite's token from the mailed link (`…/dashboard/invite#token=…`): in the fragment, so it never reaches a server log. */
export const inviteToken = (): string | null => new URLSearchParams(location.hash.replace(/^#/, '')).get('token');

/**
 * A teammate opening an invite link: a password (a new account's, or the existing account's own) accepts
 * it (`acceptTeamInvite`); accepting does not sign in, so the sign-in form follows with the email filled in.
 */
export function Invite() {
  const { t } = useApp();
  const [token] = useState(inviteToken);
  const [password, setPassword] = useState('');
  const [accepted, setAccepted] = useState<{ email: string; merchantName: string; role: string } | null>(null);
  const { busy, error, run } = useAction();

  if (!token)
    return (
      <div class="card narrow" id="invite">
        <h1>{t.inviteTitle}</h1>
        <p class="error" role="alert">
          {t.inviteNoToken}
        </p>
      </div>
    );
  if (accepted)
    return (
      <>
        <p class="card narrow ok" id="invite-accepted" role="status">
          {t.inviteAccepted(accepted.merchantName, t.roles[accepted.role] ?? accepted.role)}
        </p>
        <SignIn initialEmail={accepted.email} />
      </>
    );
  const submit = (e: Event) => {
    e.preventDefault();
    void run(async () => setAccepted((await gql(AcceptTeamInviteDocument, { token, password })).acceptTeamInvite));
  };
  return (
    <form class="card narrow" id="invite" onSubmit={submit}>
      <h1>{t.inviteTitle}</h1>
      <p class="muted">{t.inviteIntro}</p>
      <label>
        {t.password}
        <input id="invite-password" type="password" autocomplete="new-password" required value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
      </label>
      <ErrorLine error={error} />
      <button type="submit" id="invite-accept" disabled={busy}>
        {t.inviteAccept}
      </button>
    </form>
  );
}
