import { useState } from 'preact/hooks';
import { GqlError, gql, setSession } from '../api';
import { CompleteLoginDocument, LoginDocument, LoginPasskeyOptionsDocument } from '../documents';
import { ErrorLine, useAction, useApp } from '../ui';
import { answerWithPasskey, passkeysSupported } from '../webauthn';

/**
 * Email and password; when the account has a second factor the gateway answers SECOND_FACTOR_REQUIRED
 * with a challenge token and the methods the account has, and the second step asks for a TOTP or
 * recovery code, or a passkey (completeLogin). `email`: filled in (an invite just accepted).
 */
export function SignIn({ initialEmail = '' }: { initialEmail?: string }) {
  const { t } = useApp();
  const [email, setEmail] = useState(initialEmail);
  const [password, setPassword] = useState('');
  const [challenge, setChallenge] = useState<string | null>(null);
  const [methods, setMethods] = useState<string[]>([]);
  const [code, setCode] = useState('');
  const { busy, error, run } = useAction();

  const login = (e: Event) => {
    e.preventDefault();
    void run(async () => {
      try {
        setSession((await gql(LoginDocument, { email, password })).login);
      } catch (err) {
        if (!(err instanceof GqlError && err.code === 'SECOND_FACTOR_REQUIRED')) throw err;
        setMethods(Array.isArray(err.extensions.methods) ? (err.extensions.methods as string[]) : []);
        setChallenge(String(err.extensions.challengeToken));
      }
    });
  };
  const complete = (e: Event) => {
    e.preventDefault();
    const secondFactor = /^\d{6}$/.test(code.trim()) ? { totpCode: code.trim() } : { recoveryCode: code.trim() };
    void run(async () => setSession((await gql(CompleteLoginDocument, { challengeToken: challenge!, secondFactor })).completeLogin));
  };
  const withPasskey = () =>
    void run(async () => {
      const passkey = await answerWithPasskey((await gql(LoginPasskeyOptionsDocument, { challengeToken: challenge! })).loginPasskeyOptions);
      setSession((await gql(CompleteLoginDocument, { challengeToken: challenge!, secondFactor: { passkey } })).completeLogin);
    });

  if (challenge)
    return (
      <form class="card narrow" id="second-step" onSubmit={complete}>
        <h1>{t.secondStep}</h1>
        {methods.includes('PASSKEY') && passkeysSupported() && (
          <button type="button" id="second-passkey" disabled={busy} onClick={withPasskey}>
            {t.usePasskey}
          </button>
        )}
        <label>
          {t.totpCode} ({t.recoveryCode})
          <input
            id="second-code"
            autocomplete="one-time-code"
            inputMode="text"
            required={!methods.includes('PASSKEY')}
            value={code}
            onInput={(e) => setCode(e.currentTarget.value)}
          />
        </label>
        <ErrorLine error={error} />
        <button type="submit" disabled={busy}>
          {t.verify}
        </button>
      </form>
    );
  return (
    <form class="card narrow" id="sign-in" onSubmit={login}>
      <h1>{t.title}</h1>
      <label>
        {t.email}
        <input id="email" type="email" autocomplete="username" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
      </label>
      <label>
        {t.password}
        <input id="password" type="password" autocomplete="current-password" required value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
      </label>
      <ErrorLine error={error} />
      <button type="submit" id="sign-in-submit" disabled={busy}>
        {t.signIn}
      </button>
    </form>
  );
}
