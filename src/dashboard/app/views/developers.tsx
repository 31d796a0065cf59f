import { useState } from 'preact/hooks';
import { gql } from '../api';
import {
  ApiKeysDocument,
  MeDocument,
  RedeliverWebhookDocument,
  RotateApiKeyDocument,
  SendTestWebhookDocument,
  SetNotificationUrlDocument,
  WebhookDeliveriesDocument,
} from '../documents';
import { when } from '../i18n';
import { Copy, Empty, ErrorLine, Show, useAction, useApp, useLoad } from '../ui';
import { useReauth } from './reauth';

/** API keys (a new one shown once, after re-authentication), the notification URL, a test webhook and the delivery log. */
export function Developers() {
  const { t, env, lang } = useApp();
  const [keys, reloadKeys] = useLoad(() => gql(ApiKeysDocument), []);
  const [me] = useLoad(() => gql(MeDocument), []);
  const [deliveries, reloadDeliveries] = useLoad(() => gql(WebhookDeliveriesDocument, { environment: env, first: 25 }), [env]);
  const [issued, setIssued] = useState<string | null>(null);
  const [url, setUrl] = useState<string | null>(null);
  const [saved, setSaved] = useState(false);
  const action = useAction();
  const { guarded, dialog } = useReauth();

  const rotate = () =>
    void action.run(() =>
      guarded(async () => {
        setIssued((await gql(RotateApiKeyDocument, { environment: env })).rotateApiKey.apiKey);
        reloadKeys();
      }),
    );
  const current = me.state === 'ok' ? (env === 'SANDBOX' ? me.data.me.merchant.notificationUrlSandbox : me.data.me.merchant.notificationUrlProduction) : null;
  const saveUrl = (e: Event) => {
    e.preventDefault();
    void action.run(() =>
      guarded(async () => {
        await gql(SetNotificationUrlDocument, { environment: env, url: (url ?? current ?? '').trim() || null });
        setSaved(true);
      }),
    );
  };

  return (
    <section>
      <h1>{t.developers}</h1>
      <h2>{t.apiKeys}</h2>
      <Show value={keys} retry={reloadKeys}>
        {({ apiKeys }) => (
          <ul class="plain" id="api-keys">
            {apiKeys
              .filter((k) => k.environment === env)
              .map((k) => (
                <li>
                  <code class="mono">…{k.hint}</code> · {when(k.createdAt, lang)} · {when(k.lastUsedAt, lang)}
                </li>
              ))}
          </ul>
        )}
      </Show>
      {issued && (
        <div class="card ok" id="issued">
          <p>{t.shownOnce}</p>
          <code class="mono" id="new-api-key">
            {issued}
          </code>{' '}
          <Copy text={issued} />
        </div>
      )}
      <button type="button" id="rotate-key" disabled={action.busy} onClick={rotate}>
        {t.rotate}
      </button>
      {dialog}
      <ErrorLine error={action.error} />
      <h2>{t.notificationUrl}</h2>
      <form class="row" onSubmit={saveUrl}>
        <input
          id="notification-url"
          type="url"
          placeholder="https://"
          value={url ?? current ?? ''}
          onInput={(e) => (setUrl(e.currentTarget.value), setSaved(false))}
        />
        <button type="submit">{t.save}</button>
        {saved && <span class="muted">{t.saved}</span>}
      </form>
      <h2>{t.deliveries}</h2>
      <button
        type="button"
        id="test-webhook"
        class="secondary"
        onClick={() =>
          void action.run(async () => {
            await gql(SendTestWebhookDocument, { environment: env });
            reloadDeliveries();
          })
        }
      >
        {t.testWebhook}
      </button>
      <Show value={deliveries} retry={reloadDeliveries}>
        {({ webhookDeliveries: w }) =>
          w.edges.length === 0 ? (
            <Empty />
          ) : (
            <table class="list" id="deliveries">
              <tbody>
                {w.edges.map(({ node: d }) => (
                  <tr>
                    <td>{d.event}</td>
                    <td>{d.orderNo ?? '—'}</td>
                    <td>
                      {d.state} {d.lastStatus ?? ''}
                    </td>
                    <td class="wide">{when(d.createdAt, lang)}</td>
                    <td>
                      <button
                        type="button"
                        class="secondary small"
                        onClick={() => void action.run(async () => (await gql(RedeliverWebhookDocument, { id: d.id }), reloadDeliveries()))}
                      >
                        {t.redeliver}
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Show>
    </section>
  );
}
