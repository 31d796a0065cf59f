import { useEffect, useState } from 'preact/hooks';
import { gql, subscribe } from '../api';
import { MerchantEventsDocument, OrderDocument, WebhookDeliveriesDocument } from '../documents';
import { idr, when } from '../i18n';
import { Empty, Show, useApp, useLoad } from '../ui';
import { OrderRefunds } from './order-refunds';

/** One order: its figures, quotes, deposits, payments (explorer links where one exists), refunds and webhooks sent; live. */
export function OrderPage({ orderNo }: { orderNo: string }) {
  const { t, env, lang, go } = useApp();
  const [events, setEvents] = useState(0);
  // Claim links are shown once by the API: kept here, above the parts that reload.
  const claims = useState<Record<string, string>>({});
  const [order, reload] = useLoad(() => gql(OrderDocument, { environment: env, orderNo }), [env, orderNo]);
  const [hooks] = useLoad(
    () => gql(WebhookDeliveriesDocument, { environment: env, orderNo, first: 50 }),
    [env, orderNo, order.state === 'ok' ? order.data.order.status : '', events],
  );
  // Every event of this order reloads the page's parts.
  useEffect(
    () =>
      subscribe(MerchantEventsDocument, { environment: env }, (e) => {
        if (e.merchantEvents.orderNo !== orderNo) return;
        setEvents((n) => n + 1);
        reload();
      }),
    [env, orderNo],
  );

  return (
    <section>
      <button type="button" class="link" onClick={() => go('orders')}>
        ← {t.back}
      </button>
      <Show value={order} retry={reload}>
        {({ order: o }) => (
          <>
            <h1>
              {o.orderNo}{' '}
              <span class={`status s-${o.status}`} id="order-status">
                {o.status}
              </span>
            </h1>
            <dl class="facts">
              <dt>{t.amount}</dt>
              <dd>{idr(o.amount, lang)}</dd>
              <dt>{t.received}</dt>
              <dd>{idr(o.receivedAmount, lang)}</dd>
              <dt>{t.fee}</dt>
              <dd>{idr(o.fee, lang)}</dd>
              <dt>{t.net}</dt>
              <dd>{idr(o.netAmount, lang)}</dd>
              <dt>{t.created}</dt>
              <dd>{when(o.createdAt, lang)}</dd>
              <dt>{t.paid}</dt>
              <dd>{when(o.paidAt, lang)}</dd>
              {o.customerName && (
                <>
                  <dt>👤</dt>
                  <dd>
                    {o.customerName} {o.customerEmail ?? ''}
                  </dd>
                </>
              )}
            </dl>
            <h2>{t.quote}</h2>
            {o.quotes.length === 0 ? (
              <Empty />
            ) : (
              <ul class="plain">
                {o.quotes.map((q) => (
                  <li>
                    {q.totalAmountCrypto} {q.tokenSymbol} · {q.network} · {idr(q.totalAmount, lang)} · 1 {q.tokenSymbol} = {idr(q.cryptoRate, lang)} ·{' '}
                    {when(q.lockedAt, lang)}
                  </li>
                ))}
              </ul>
            )}
            <h2>{t.deposits}</h2>
            {o.deposits.length === 0 ? (
              <Empty />
            ) : (
              <ul class="plain">
                {o.deposits.map((d) => (
                  <li>
                    {d.totalAmount} {d.tokenName} · {d.network} · <code class="mono">{d.destinationAddress}</code> · {d.status}
                  </li>
                ))}
              </ul>
            )}
            <h2>{t.payments}</h2>
            {o.payments.length === 0 ? (
              <Empty />
            ) : (
              <ul class="plain" id="payments">
                {o.payments.map((p) => {
                  const href = p.explorerUrl;
                  return (
                    <li>
                      {p.amount} {p.tokenSymbol} · {p.network} · {p.status} · <code class="mono">{p.txHash}</code>{' '}
                      {href && (
                        <a href={href} target="_blank" rel="noreferrer">
                          {t.explorer}
                        </a>
                      )}
                    </li>
                  );
                })}
              </ul>
            )}
            <OrderRefunds orderNo={o.orderNo} version={`${o.status}:${events}`} claims={claims} />
            <h2>{t.webhooks}</h2>
            <Show value={hooks}>
              {({ webhookDeliveries: w }) =>
                w.edges.length === 0 ? (
                  <Empty />
                ) : (
                  <ul class="plain">
                    {w.edges.map(({ node: d }) => (
                      <li>
                        {d.event} · {d.state} · {d.lastStatus ?? '—'} · {when(d.createdAt, lang)}
                      </li>
                    ))}
                  </ul>
                )
              }
            </Show>
          </>
        )}
      </Show>
    </section>
  );
}
