import { useState } from 'preact/hooks';
import { gql } from '../api';
import { MeDocument, UpdateSettingsDocument } from '../documents';
import { ErrorLine, Show, useAction, useApp, useLoad } from '../ui';
import { SettingsTabs } from './settings-tabs';

/** Fee mode, order lifetime, payment tolerance and logo (updateMerchantSettings). */
export function Settings() {
  const { t } = useApp();
  const [me, reload] = useLoad(() => gql(MeDocument), []);
  const [saved, setSaved] = useState(false);
  const action = useAction();
  return (
    <section>
      <h1>{t.settings}</h1>
      <SettingsTabs current="settings" />
      <Show value={me} retry={reload}>
        {({ me: { merchant: m, email } }) => {
          const submit = (e: Event) => {
            e.preventDefault();
            const f = new FormData(e.currentTarget as HTMLFormElement);
            const num = (k: string) => (f.get(k) ? Number(f.get(k)) : undefined);
            void action.run(async () => {
              await gql(UpdateSettingsDocument, {
                input: {
                  feeIncluded: f.get('feeIncluded') === 'on',
                  orderTtlSeconds: num('ttl'),
                  paymentToleranceBps: num('tolerance'),
                  logoUrl: String(f.get('logo') ?? '') || undefined,
                },
              });
              setSaved(true);
            });
          };
          return (
            <form class="card grid" id="settings" onSubmit={submit} onInput={() => setSaved(false)}>
              <p class="muted">
                {m.name} · {email}
              </p>
              <label class="inline">
                <input name="feeIncluded" type="checkbox" defaultChecked={m.feeIncluded} /> {t.feeIncluded} ({m.platformFeePercent}%)
              </label>
              <label>
                {t.orderTtl}
                <input name="ttl" type="number" min="60" defaultValue={m.orderTtlSeconds != null ? String(m.orderTtlSeconds) : ''} />
              </label>
              <label>
                {t.tolerance}
                <input name="tolerance" type="number" min="0" defaultValue={String(m.paymentToleranceBps)} />
              </label>
              <label>
                {t.logo}
                <input name="logo" type="url" defaultValue={m.logoUrl ?? ''} />
              </label>
              <ErrorLine error={action.error} />
              <button type="submit" disabled={action.busy}>
                {t.save}
              </button>
              {saved && <span class="muted">{t.saved}</span>}
            </form>
          );
        }}
      </Show>
    </section>
  );
}
