import { useState } from 'preact/hooks';
import { GqlError, gql } from '../api';
import { ReauthenticateDocument, ReauthPasskeyOptionsDocument } from '../documents';
import { ErrorLine, useAction, useApp } from '../ui';
import { answerWithPasskey, passkeysSupported } from '../webauthn';

/**
 * Runs a sensitive action; when the gateway answers REAUTHENTICATION_REQUIRED it asks for the password
 * (`reauthenticate`, plus a TOTP code or a passkey where the account has one) and runs it again.
 */
export function useReauth() {
  const [pending, setPending] = useState<null | (() => Promise<unknown>)>(null);
  const guarded = async (fn: () => Promise<unknown>) => {
    try {
      await fn();
    } catch (e) {
      if (e instanceof GqlError && e.code === 'REAUTHENTICATION_REQUIRED') setPending(() => fn);
      else throw e;
    }
  };
  const dialog = pending ? (
    <ReauthDialog
      onDone={async () => {
        const fn = pending;
        setPending(null);
        await fn();
      }}
      onCancel={() => setPending(null)}
    />
  ) : null;
  return { guarded, dialog };
}

function ReauthDialog({ onDone, onCancel }: { onDone: () => Promise<void>; onCancel: () => void }) {
  const { t } = useApp();
  const [password, setPassword] = useState('');
  const [code, setCode] = useState('');
  const { busy, error, run } = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    void run(async () => {
      await gql(ReauthenticateDocument, { password, secondFactor: code ? { totpCode: code } : undefined });
      await onDone();
    });
  };
  const withPasskey = () =>
    void run(async () => {
      const passkey = await answerWithPasskey((await gql(ReauthPasskeyOptionsDocument)).reauthPasskeyOptions);
      await gql(ReauthenticateDocument, { password, secondFactor: { passkey } });
      await onDone();
    });
  return (
    <form class="card dialog" id="reauth" onSubmit={submit}>
      <p>{t.reauth}</p>
      <label>
        {t.password}
        <input
          id="reauth-password"
          type="password"
          autocomplete="current-password"
          required
          value={password}
          onInput={(e) => setPassword(e.currentTarget.value)}
        />
      </label>
      <label>
        {t.totpCode}
        <input id="reauth-code" autocomplete="one-time-code" value={code} onInput={(e) => setCode(e.currentTarget.value)} />
      </label>
      <ErrorLine error={error} />
      <div class="row">
        <button type="submit" id="reauth-submit" disabled={busy}>
          {t.confirm}
        </button>
        {passkeysSupported() && (
          <button type="button" id="reauth-passkey" class="secondary" disabled={busy || !password} onClick={withPasskey}>
            {t.usePasskey}
          </button>
        )}
        <button type="button" class="secondary" onClick={onCancel}>
          {t.cancel}
        </button>
      </div>
    </form>
  );
}
