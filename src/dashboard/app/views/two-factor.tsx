import { useState } from 'preact/hooks';
import { gql } from '../api';
import {
  BeginTotpEnrolmentDocument,
  ConfirmTotpEnrolmentDocument,
  DisableTotpDocument,
  PasskeyRegistrationOptionsDocument,
  RegenerateRecoveryCodesDocument,
  RegisterPasskeyDocument,
  RemovePasskeyDocument,
  SecondFactorStatusDocument,
  SetSecondFactorPolicyDocument,
} from '../documents';
import { when } from '../i18n';
import { Copy, ErrorLine, Show, useAction, useApp, useLoad } from '../ui';
import { createPasskey, passkeysSupported } from '../webauthn';
import { useReauth } from './reauth';
import { SettingsTabs } from './settings-tabs';

/** Recovery codes, shown once (after enrolment or regeneration) until the screen is left. */
function RecoveryCodes({ codes }: { codes: string[] }) {
  const { t } = useApp();
  return (
    <div class="card" id="recovery-codes">
      <p>{t.recoveryCodes}</p>
      <ul class="plain codes">
        {codes.map((c) => (
          <li>{c}</li>
        ))}
      </ul>
      <Copy text={codes.join('\n')} />
    </div>
  );
}

/** Confirms a started enrolment with the app's current code. */
function Enrol({ secret, qr, onDone }: { secret: string; qr: string; onDone: (codes: string[] | null) => void }) {
  const { t } = useApp();
  const [code, setCode] = useState('');
  const action = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(async () => onDone((await gql(ConfirmTotpEnrolmentDocument, { code: code.trim() })).confirmTotpEnrolment.recoveryCodes ?? null));
  };
  return (
    <form class="card dialog" id="totp-enrol" onSubmit={submit}>
      <p>{t.scanQr}</p>
      <img class="qr" id="totp-qr" src={qr} width={180} height={180} alt="otpauth QR" />
      <code class="mono" id="totp-secret">
        {secret}
      </code>
      <label>
        {t.totpCode}
        <input id="totp-code" autocomplete="one-time-code" inputMode="numeric" required value={code} onInput={(e) => setCode(e.currentTarget.value)} />
      </label>
      <ErrorLine error={action.error} />
      <button type="submit" id="totp-confirm" disabled={action.busy}>
        {t.confirmCode}
      </button>
    </form>
  );
}

/**
 * Two-factor sign-in: the authenticator app (enrol with its QR and a code, recovery codes shown once,
 * regenerate, turn off), the merchant's policy requiring it, and the account's passkeys (add one with
 * the browser's WebAuthn, remove one). Changes ask
 * for the password (and the current code) again when the re-authentication has lapsed.
 */
export function TwoFactor() {
  const { t, lang } = useApp();
  const [status, reload] = useLoad(() => gql(SecondFactorStatusDocument), []);
  const [enrolment, setEnrolment] = useState<{ secret: string; qr: string } | null>(null);
  const [codes, setCodes] = useState<string[] | null>(null);
  const [passkeyName, setPasskeyName] = useState('');
  const [added, setAdded] = useState<string | null>(null);
  const action = useAction();
  const { guarded, dialog } = useReauth();
  const act = (fn: () => Promise<unknown>) => void action.run(() => guarded(fn));

  const begin = () =>
    act(async () => {
      setCodes(null);
      const e = (await gql(BeginTotpEnrolmentDocument)).beginTotpEnrolment;
      setEnrolment({ secret: e.secret, qr: e.qrCodeDataUrl });
    });
  const enrolled = (recovery: string[] | null) => {
    setEnrolment(null);
    setCodes(recovery);
    reload();
  };
  const regenerate = () =>
    act(async () => {
      setCodes((await gql(RegenerateRecoveryCodesDocument)).regenerateRecoveryCodes);
      reload();
    });
  const disable = () =>
    act(async () => {
      await gql(DisableTotpDocument);
      setCodes(null);
      reload();
    });
  // The options need a fresh re-authentication: asked first, so a lapsed one brings the dialog before the browser's prompt.
  const addPasskey = (e: Event) => {
    e.preventDefault();
    act(async () => {
      setAdded(null);
      const options = (await gql(PasskeyRegistrationOptionsDocument)).passkeyRegistrationOptions;
      const r = (await gql(RegisterPasskeyDocument, { name: passkeyName.trim() || null, response: await createPasskey(options) })).registerPasskey;
      setAdded(r.passkey.name);
      setPasskeyName('');
      if (r.recoveryCodes) setCodes(r.recoveryCodes);
      reload();
    });
  };
  const removePasskey = (id: string) =>
    act(async () => {
      await gql(RemovePasskeyDocument, { id });
      setAdded(null);
      reload();
    });
  const policy = (required: boolean) =>
    act(async () => {
      await gql(SetSecondFactorPolicyDocument, { required });
      reload();
    });

  return (
    <section>
      <h1>{t.settings}</h1>
      <SettingsTabs current="settings/two-factor" />
      {dialog}
      <ErrorLine error={action.error} />
      {codes && <RecoveryCodes codes={codes} />}
      {enrolment && <Enrol secret={enrolment.secret} qr={enrolment.qr} onDone={enrolled} />}
      <Show value={status} retry={reload}>
        {({ secondFactorStatus: s }) => (
          <>
            {s.enrolmentRequired && (
              <p class="error" id="enrolment-required">
                {t.enrolmentRequired}
              </p>
            )}
            <div class="card" id="totp-status">
              <p>
                <span class={`badge ${s.totpEnabled ? 'ok' : 'warn'}`}>{s.totpEnabled ? t.totpOn : t.totpOff}</span>{' '}
                {(s.totpEnabled || s.passkeys.length > 0) && <span class="muted">{t.recoveryLeft(s.recoveryCodesRemaining)}</span>}
              </p>
              <div class="row">
                {!s.totpEnabled && !enrolment && (
                  <button type="button" id="totp-begin" disabled={action.busy} onClick={begin}>
                    {t.enrolTotp}
                  </button>
                )}
                {(s.totpEnabled || s.passkeys.length > 0) && (
                  <button type="button" id="regenerate-codes" class="secondary" disabled={action.busy} onClick={regenerate}>
                    {t.regenerateCodes}
                  </button>
                )}
                {s.totpEnabled && (
                  <button type="button" id="totp-disable" class="secondary" disabled={action.busy} onClick={disable}>
                    {t.disableTotp}
                  </button>
                )}
              </div>
            </div>
            <label class="inline card">
              <input type="checkbox" id="require-2fa" checked={s.requiredByMerchant} disabled={action.busy} onChange={(e) => policy(e.currentTarget.checked)} />{' '}
              {t.requirePolicy}
            </label>
            <h2>{t.passkeys}</h2>
            <div class="card" id="passkey-section">
              {s.passkeys.length > 0 && (
                <ul class="plain" id="passkeys">
                  {s.passkeys.map((p) => (
                    <li data-passkey={p.name}>
                      {p.name} <span class="muted">{when(p.createdAt, lang)}</span>{' '}
                      <button type="button" class="secondary small remove-passkey" disabled={action.busy} onClick={() => removePasskey(p.id)}>
                        {t.removePasskey}
                      </button>
                    </li>
                  ))}
                </ul>
              )}
              {added && (
                <p class="ok" id="passkey-added" role="status">
                  {t.passkeyAdded(added)}
                </p>
              )}
              {passkeysSupported() ? (
                <form class="row" id="passkey-add" onSubmit={addPasskey}>
                  <input
                    id="passkey-name"
                    maxLength={64}
                    aria-label={t.passkeyName}
                    placeholder={t.passkeyName}
                    value={passkeyName}
                    onInput={(e) => setPasskeyName(e.currentTarget.value)}
                  />
                  <button type="submit" id="passkey-add-submit" disabled={action.busy}>
                    {t.addPasskey}
                  </button>
                </form>
              ) : (
                <p class="muted">{t.passkeyUnsupported}</p>
              )}
            </div>
          </>
        )}
      </Show>
    </section>
  );
}
