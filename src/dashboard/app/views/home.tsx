import { gql } from '../api';
import { AttentionDocument, NetworkHealthDocument, OrderStatsDocument, type DashNetworkHealthQuery } from '../documents';
import { idr } from '../i18n';
import { Empty, Show, useApp, useLoad, type Loaded } from '../ui';

const sum = (rows: { paidAmount: string; fee: string; paidCount: number }[]) =>
  rows.reduce((a, r) => ({ paid: a.paid + Number(r.paidAmount), fee: a.fee + Number(r.fee), count: a.count + r.paidCount }), { paid: 0, fee: 0, count: 0 });

type Health = DashNetworkHealthQuery['networkHealth'][number];

/**
 * Each network as it affects the merchant: is the gateway following the chain (payments are seen),
 * its providers up and down (no host), and the gas tank paying sweep fees (sweeps waiting for it).
 */
function NetworkHealth({ value, retry }: { value: Loaded<DashNetworkHealthQuery>; retry: () => void }) {
  const { t } = useApp();
  const watcher = (h: Health) =>
    h.watcher === 'FOLLOWING'
      ? t.healthFollowing
      : h.watcher === 'LAGGING'
        ? t.healthLagging(h.blocksBehind ?? null)
        : h.watcher === 'DOWN'
          ? t.healthDown
          : t.healthUnknown;
  const tone = (h: Health) => (h.watcher === 'FOLLOWING' ? 'ok' : h.watcher === 'DOWN' ? 'bad' : 'warn');
  return (
    <div class="card" id="network-health">
      <h2>{t.networkHealth}</h2>
      <Show value={value} retry={retry}>
        {({ networkHealth }) =>
          networkHealth.length === 0 ? (
            <Empty />
          ) : (
            <ul class="plain health">
              {networkHealth.map((h) => (
                <li data-network={h.network} data-watcher={h.watcher} data-gas={h.gasTank ?? ''}>
                  <strong>{h.network}</strong> <span class={`badge ${tone(h)}`}>{watcher(h)}</span>
                  {h.gasTank && (
                    <span class={`badge ${h.gasTank === 'OK' ? 'ok' : h.gasTank === 'LOW' ? 'warn' : 'bad'}`}>
                      {h.gasTank === 'OK' ? t.gasOk : h.gasTank === 'LOW' ? t.gasLow : t.gasUnfunded}
                    </span>
                  )}
                  <br />
                  <span class="muted">
                    {h.lastBlock !== null && `${t.lastBlock(h.lastBlock, h.secondsSincePoll ?? null)} · `}
                    {t.providers(h.providersUp, h.providersDown)}
                    {(h.sweepsWaitingForGas ?? 0) > 0 && ` · ${t.sweepsWaitingGas(h.sweepsWaitingForGas!)}`}
                  </span>
                </li>
              ))}
            </ul>
          )
        }
      </Show>
    </div>
  );
}

/** What needs attention (with a network down or sweeps waiting for gas); the networks' health; today's and this month's paid amount, count and fees (orderStats), by day and by network. */
export function Home() {
  const { t, env, lang } = useApp();
  const now = new Date();
  const month = new Date(now.getFullYear(), now.getMonth(), 1);
  const today = new Date(now.getFullYear(), now.getMonth(), now.getDate());
  const [stats, reload] = useLoad(async () => {
    const to = new Date().toISOString();
    // Days as the merchant's browser counts them, like "today" above.
    const timeZone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    const [byDay, byNetwork] = await Promise.all([
      gql(OrderStatsDocument, { environment: env, from: month.toISOString(), to, groupBy: ['DAY'], timeZone }),
      gql(OrderStatsDocument, { environment: env, from: month.toISOString(), to, groupBy: ['NETWORK'], timeZone }),
    ]);
    return { byDay: byDay.orderStats, byNetwork: byNetwork.orderStats };
  }, [env]);
  const [health, reloadHealth] = useLoad(() => gql(NetworkHealthDocument, { environment: env }), [env]);
  const [attention, reloadAttention] = useLoad(() => gql(AttentionDocument, { environment: env }), [env]);
  const todayKey = today.toLocaleDateString('en-CA');

  return (
    <section>
      <h1>{t.home}</h1>
      <Show value={attention} retry={reloadAttention}>
        {(a) => {
          const items = [
            a.sweepHolds.length > 0 && { text: t.heldSweeps(a.sweepHolds.length), href: '#/settlement' },
            a.webhookDeliveries.totalCount > 0 && { text: t.failingWebhooks(a.webhookDeliveries.totalCount), href: '#/developers' },
            ...a.settlementWallets.filter((w) => w.pending).map((w) => ({ text: t.pendingWallet(w.network), href: '#/settlement' })),
            // From the networks card's answer, once it is in: a network down, sweeps waiting for gas.
            ...(health.state === 'ok' ? health.data.networkHealth : []).flatMap((h) => [
              h.watcher === 'DOWN' && { text: t.networkDown(h.network), href: '#/home' },
              (h.sweepsWaitingForGas ?? 0) > 0 && { text: t.sweepsWaitingGasOn(h.network, h.sweepsWaitingForGas!), href: '#/settlement' },
            ]),
          ].filter((x): x is { text: string; href: string } => Boolean(x));
          return (
            <div class="card" id="attention">
              <h2>{t.attention}</h2>
              {items.length === 0 ? (
                <p class="muted">{t.allClear}</p>
              ) : (
                <ul class="plain">
                  {items.map((i) => (
                    <li>
                      <a href={i.href}>{i.text}</a>
                    </li>
                  ))}
                </ul>
              )}
            </div>
          );
        }}
      </Show>
      <NetworkHealth value={health} retry={reloadHealth} />
      <Show value={stats} retry={reload}>
        {({ byDay, byNetwork }) => {
          const m = sum(byDay);
          const d = sum(byDay.filter((r) => r.day === todayKey));
          const max = Math.max(1, ...byDay.map((r) => Number(r.paidAmount)));
          return (
            <>
              <div class="figures" id="figures">
                {[
                  [t.today, d],
                  [t.month, m],
                ].map(([label, f]) => (
                  <div class="card">
                    <h2>{label as string}</h2>
                    <p class="big">{idr(String((f as typeof d).paid), lang)}</p>
                    <p class="muted">
                      {t.paidCount}: {(f as typeof d).count} · {t.fee}: {idr(String((f as typeof d).fee), lang)}
                    </p>
                  </div>
                ))}
              </div>
              <h2>{t.byDay}</h2>
              {byDay.length === 0 ? (
                <Empty />
              ) : (
                <div class="bars" role="img" aria-label={t.byDay}>
                  {byDay.map((r) => (
                    <div class="bar" title={`${r.day}: ${idr(r.paidAmount, lang)}`} style={{ height: `${(Number(r.paidAmount) / max) * 100}%` }} />
                  ))}
                </div>
              )}
              <h2>{t.byNetwork}</h2>
              {byNetwork.length === 0 ? (
                <Empty />
              ) : (
                <ul class="plain">
                  {byNetwork.map((r) => (
                    <li>
                      {r.network ?? '—'}: {idr(r.paidAmount, lang)} ({r.paidCount})
                    </li>
                  ))}
                </ul>
              )}
            </>
          );
        }}
      </Show>
    </section>
  );
}
