import { useState } from 'preact/hooks';
import { gql } from '../api';
import { SetSweepSettingsDocument, SweepSettingsDocument } from '../documents';
import { ErrorLine, Show, useAction, useApp, useLoad } from '../ui';
import { useReauth } from './reauth';

/** The sweep schedule of the environment: on or off, and how often (setSweepSettings, after re-authentication). */
export function SweepSchedule() {
  const { t, env } = useApp();
  const [settings, reload, set] = useLoad(() => gql(SweepSettingsDocument, { environment: env }), [env]);
  const [saved, setSaved] = useState(false);
  const action = useAction();
  const { guarded, dialog } = useReauth();
  return (
    <>
      <h2>{t.schedule}</h2>
      <Show value={settings} retry={reload}>
        {({ sweepSettings: s }) => {
          const submit = (e: Event) => {
            e.preventDefault();
            const f = new FormData(e.currentTarget as HTMLFormElement);
            const input = { enabled: f.get('enabled') === 'on', intervalSeconds: Number(f.get('interval')) };
            void action.run(() =>
              guarded(async () => {
                set(await gql(SetSweepSettingsDocument, { environment: env, input }).then((r) => ({ sweepSettings: r.setSweepSettings })));
                setSaved(true);
              }),
            );
          };
          return (
            <form class="card grid" id="sweep-schedule" onSubmit={submit} onInput={() => setSaved(false)}>
              <label class="inline">
                <input name="enabled" type="checkbox" defaultChecked={s.enabled} /> {t.automatic}
              </label>
              <label>
                {t.everySeconds}
                <input name="interval" type="number" min="1" required defaultValue={String(s.intervalSeconds)} />
              </label>
              <button type="submit" disabled={action.busy}>
                {t.save}
              </button>
              {saved && <span class="muted">{t.saved}</span>}
            </form>
          );
        }}
      </Show>
      {dialog}
      <ErrorLine error={action.error} />
    </>
  );
}
