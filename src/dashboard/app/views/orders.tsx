import { useEffect, useState } from 'preact/hooks';
import { gql, onSocket, subscribe } from '../api';
import { downloadOrdersCsv } from '../csv';
import { MerchantEventsDocument, OrdersDocument, TokensDocument, type DashOrdersQuery, type Network, type OrderStatus } from '../documents';
import { idr, when } from '../i18n';
import { Empty, ErrorLine, NETWORKS, STATUSES, Show, useAction, useApp, useLoad } from '../ui';

interface Filter {
  status: string;
  network: string;
  tokenAddress: string;
  from: string;
  to: string;
  search: string;
  overpaid: boolean;
}
const NONE: Filter = { status: '', network: '', tokenAddress: '', from: '', to: '', search: '', overpaid: false };

/** A date input's day as the start (or the end) of that day in the browser's time zone, ISO. */
const dayEdge = (day: string, end: boolean) => (day ? new Date(`${day}T${end ? '23:59:59.999' : '00:00:00'}`).toISOString() : undefined);

function variables(f: Filter) {
  return {
    statuses: f.status ? [f.status as OrderStatus] : undefined,
    network: (f.network || undefined) as Network | undefined,
    tokenAddress: f.tokenAddress || undefined,
    createdFrom: dayEdge(f.from, false),
    createdTo: dayEdge(f.to, true),
    search: f.search.trim() || undefined,
    overpaid: f.overpaid || undefined,
  };
}

type Page = DashOrdersQuery['orders'];

/**
 * The orders of the environment with the filters `orders` has, its totalCount, and live: every
 * `merchantEvents` event about an order reloads the first page (so a new order appears and a paid one
 * turns Success without a reload). Export downloads the CSV of the same filter.
 */
export function Orders() {
  const { t, env, lang, go } = useApp();
  const [filter, setFilter] = useState<Filter>(NONE);
  const [live, setLive] = useState(false);
  const [tick, setTick] = useState(0);
  const [more, setMore] = useState<Page['edges']>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const tokens = useLoad(() => gql(TokensDocument, { environment: env }), [env])[0];
  const [orders, reload] = useLoad(async () => {
    const r = await gql(OrdersDocument, { environment: env, first: 25, ...variables(filter) });
    setMore([]);
    setCursor(r.orders.pageInfo.hasNextPage ? (r.orders.pageInfo.endCursor ?? null) : null);
    return r.orders;
  }, [env, filter, tick]);
  const csv = useAction();

  useEffect(() => {
    setLive(false);
    const unhear = onSocket(setLive);
    const stop = subscribe(
      MerchantEventsDocument,
      { environment: env },
      () => setTick((n) => n + 1),
      () => setLive(false),
    );
    return () => {
      unhear();
      stop();
    };
  }, [env]);

  const set = (k: keyof Filter) => (e: Event) => {
    const el = e.currentTarget as HTMLInputElement;
    setFilter({ ...filter, [k]: el.type === 'checkbox' ? el.checked : el.value });
  };
  const loadMore = async () => {
    if (!cursor) return;
    const r = await gql(OrdersDocument, { environment: env, first: 25, after: cursor, ...variables(filter) });
    setMore([...more, ...r.orders.edges]);
    setCursor(r.orders.pageInfo.hasNextPage ? (r.orders.pageInfo.endCursor ?? null) : null);
  };
  const exportCsv = () => {
    const v = variables(filter);
    void csv.run(() =>
      downloadOrdersCsv(env, {
        statuses: v.statuses?.join(','),
        network: v.network,
        tokenAddress: v.tokenAddress,
        createdFrom: v.createdFrom,
        createdTo: v.createdTo,
        search: v.search,
        overpaid: v.overpaid ? 'true' : undefined,
      }),
    );
  };

  return (
    <section>
      <div class="row between">
        <h1>{t.orders}</h1>
        <span id="live" class={live ? 'badge ok' : 'badge'} title="merchantEvents">
          {live ? `● ${t.live}` : '○'}
        </span>
      </div>
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <select id="f-status" aria-label={t.status} value={filter.status} onChange={set('status')}>
          <option value="">
            {t.status}: {t.all}
          </option>
          {STATUSES.map((s) => (
            <option value={s}>{s}</option>
          ))}
        </select>
        <select id="f-network" aria-label={t.network} value={filter.network} onChange={set('network')}>
          <option value="">
            {t.network}: {t.all}
          </option>
          {NETWORKS.map((n) => (
            <option value={n}>{n}</option>
          ))}
        </select>
        <select id="f-token" aria-label={t.token} value={filter.tokenAddress} onChange={set('tokenAddress')}>
          <option value="">
            {t.token}: {t.all}
          </option>
          {tokens.state === 'ok' &&
            tokens.data.tokens
              .filter((x) => !filter.network || x.network === filter.network)
              .map((x) => (
                <option value={x.address}>
                  {x.symbol} · {x.network}
                </option>
              ))}
        </select>
        <label class="inline">
          {t.from} <input id="f-from" type="date" value={filter.from} onChange={set('from')} />
        </label>
        <label class="inline">
          {t.to} <input id="f-to" type="date" value={filter.to} onChange={set('to')} />
        </label>
        <input id="f-search" type="search" placeholder={t.search} aria-label={t.search} value={filter.search} onChange={set('search')} />
        <label class="inline">
          <input id="f-overpaid" type="checkbox" checked={filter.overpaid} onChange={set('overpaid')} /> {t.overpaid}
        </label>
        <button type="button" id="export-csv" class="secondary" disabled={csv.busy} onClick={exportCsv}>
          {t.exportCsv}
        </button>
      </form>
      <ErrorLine error={csv.error} />
      <Show value={orders} retry={reload}>
        {(page) => (
          <>
            <p class="muted" id="total-count">
              {t.total(page.totalCount)}
            </p>
            {page.edges.length === 0 ? (
              <Empty text={t.noOrders} />
            ) : (
              <table class="list" id="orders">
                <thead>
                  <tr>
                    <th>{t.orderNo}</th>
                    <th>{t.status}</th>
                    <th>{t.amount}</th>
                    <th class="wide">{t.network}</th>
                    <th class="wide">{t.created}</th>
                  </tr>
                </thead>
                <tbody>
                  {[...page.edges, ...more].map(({ node: o }) => (
                    <tr data-order={o.orderNo} onClick={() => go(`order/${encodeURIComponent(o.orderNo)}`)}>
                      <td>
                        <a href={`#/order/${encodeURIComponent(o.orderNo)}`}>{o.orderNo}</a>
                      </td>
                      <td>
                        <span class={`status s-${o.status}`}>{o.status}</span>
                        {o.overpaid && <span class="badge warn">+</span>}
                      </td>
                      <td class="num">{idr(o.amount, lang)}</td>
                      <td class="wide">{o.paidNetwork ? `${o.paidTokenSymbol ?? ''} ${o.paidNetwork}` : '—'}</td>
                      <td class="wide">{when(o.createdAt, lang)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
            {cursor && (
              <button type="button" class="secondary" onClick={() => void loadMore()}>
                {t.more}
              </button>
            )}
          </>
        )}
      </Show>
    </section>
  );
}
