import { useEffect, useState } from 'preact/hooks';
import { gql } from '../api';
import {
  RefundSetupDocument,
  RefundsDocument,
  SetRefundSettingsDocument,
  type DashRefundFragment,
  type Network,
  type RefundFeeMode,
  type RefundKind,
  type RefundStatus,
} from '../documents';
import { Qr } from '../qr';
import { Copy, Empty, ErrorLine, NETWORKS, Show, useAction, useApp, useLoad } from '../ui';
import { useReauth } from './reauth';
import { RefundList } from './refund-list';

const STATUSES: RefundStatus[] = ['requested', 'claimed', 'approved', 'sending', 'confirmed', 'cancelled', 'failed'];
const KINDS: RefundKind[] = ['merchant', 'overpayment_excess', 'partial_payment', 'late_receipt', 'wrong_token'];

/** Every refund of the environment with the filters `refunds` has; the refund settings; the refund wallets to fund. */
export function Refunds() {
  const { t, env } = useApp();
  const [network, setNetwork] = useState<Network | ''>('');
  const [status, setStatus] = useState<RefundStatus | ''>('');
  const [kind, setKind] = useState<RefundKind | ''>('');
  const vars = {
    environment: env,
    network: network || undefined,
    status: status || undefined,
    kind: kind || undefined,
    first: 20,
  };
  const [page, reload] = useLoad(() => gql(RefundsDocument, vars), [env, network, status, kind]);
  const [more, setMore] = useState<DashRefundFragment[]>([]);
  const [after, setAfter] = useState<string | null>(null);
  const loadMore = useAction();
  const [claimUrls, setClaimUrls] = useState<Record<string, string>>({});
  useEffect(() => {
    setMore([]);
    setAfter(null);
  }, [page]);
  const next = (cursor: string | null | undefined) =>
    void loadMore.run(async () => {
      const r = await gql(RefundsDocument, {
        ...vars,
        after: cursor ?? undefined,
      });
      setMore((m) => [...m, ...r.refunds.edges.map((e) => e.node)]);
      setAfter(r.refunds.pageInfo.hasNextPage ? (r.refunds.pageInfo.endCursor ?? null) : '');
    });

  return (
    <section>
      <h1>{t.refunds}</h1>
      <div class="filters" id="refund-filters">
        <select id="rf-status" aria-label={t.status} value={status} onChange={(e) => setStatus(e.currentTarget.value as RefundStatus | '')}>
          <option value="">
            {t.status}: {t.all}
          </option>
          {STATUSES.map((s) => (
            <option value={s}>{s}</option>
          ))}
        </select>
        <select id="rf-network" aria-label={t.network} value={network} onChange={(e) => setNetwork(e.currentTarget.value as Network | '')}>
          <option value="">
            {t.network}: {t.all}
          </option>
          {NETWORKS.map((n) => (
            <option value={n}>{n}</option>
          ))}
        </select>
        <select id="rf-kind" aria-label={t.refundKind} value={kind} onChange={(e) => setKind(e.currentTarget.value as RefundKind | '')}>
          <option value="">
            {t.refundKind}: {t.all}
          </option>
          {KINDS.map((k) => (
            <option value={k}>{t.kinds[k] ?? k}</option>
          ))}
        </select>
      </div>
      <Show value={page} retry={reload}>
        {({ refunds: r }) => {
          const all = [...r.edges.map((e) => e.node), ...more];
          const cursor = after === null ? (r.pageInfo.hasNextPage ? r.pageInfo.endCursor : '') : after;
          return (
            <div id="refund-list">
              <p class="muted" id="refund-count">
                {t.refundCount(r.totalCount)}
              </p>
              {all.length === 0 ? (
                <Empty text={t.noRefunds} />
              ) : (
                <RefundList
                  refunds={all}
                  claimUrls={claimUrls}
                  onClaimUrl={(id, url) => setClaimUrls((c) => ({ ...c, [id]: url }))}
                  showOrder
                  onChange={reload}
                />
              )}
              <ErrorLine error={loadMore.error} />
              {cursor && (
                <button type="button" class="secondary" disabled={loadMore.busy} onClick={() => next(cursor)}>
                  {t.more}
                </button>
              )}
            </div>
          );
        }}
      </Show>
      <RefundSetup />
    </section>
  );
}

/** The auto-approve limit and fee mode (changed re-authenticated), and each network's refund wallet with its balances, address and QR. */
function RefundSetup() {
  const { t, env } = useApp();
  const [setup, reload] = useLoad(() => gql(RefundSetupDocument, { environment: env }), [env]);
  const [limit, setLimit] = useState('');
  const [feeMode, setFeeMode] = useState<RefundFeeMode>('tank');
  const [saved, setSaved] = useState(false);
  const [qr, setQr] = useState<string | null>(null);
  const action = useAction();
  const reauth = useReauth();
  useEffect(() => {
    if (setup.state !== 'ok') return;
    setLimit(setup.data.refundSettings.autoApproveLimit ?? '');
    setFeeMode(setup.data.refundSettings.feeMode);
  }, [setup]);
  const save = (e: Event) => {
    e.preventDefault();
    setSaved(false);
    void action.run(() =>
      reauth.guarded(async () => {
        await gql(SetRefundSettingsDocument, {
          environment: env,
          input: { autoApproveLimit: limit.trim(), feeMode },
        });
        setSaved(true);
      }),
    );
  };
  return (
    <Show value={setup} retry={reload}>
      {(d) => (
        <>
          <h2>{t.refundSettings}</h2>
          <form class="card grid" id="refund-settings" onSubmit={save}>
            <label>
              {t.autoApproveLimit}
              <input id="rs-limit" inputMode="decimal" value={limit} onInput={(e) => setLimit(e.currentTarget.value)} />
            </label>
            <label>
              {t.feeMode}
              <select id="rs-fee-mode" value={feeMode} onChange={(e) => setFeeMode(e.currentTarget.value as RefundFeeMode)}>
                {(['tank', 'deduct'] as const).map((m) => (
                  <option value={m}>{t.feeModes[m]}</option>
                ))}
              </select>
            </label>
            <p class="muted">{t.feeRule(feeMode)}</p>
            <ErrorLine error={action.error} />
            <div class="row">
              <button type="submit" id="rs-save" disabled={action.busy}>
                {t.save}
              </button>
              {saved && <span class="muted saved">{t.saved}</span>}
            </div>
          </form>
          {reauth.dialog}
          <h2>{t.refundWallets}</h2>
          <p class="muted">{t.refundWalletsIntro}</p>
          {d.refundWallets.length === 0 ? (
            <Empty />
          ) : (
            <ul class="plain" id="refund-wallets">
              {d.refundWallets.map((w) => (
                <li data-network={w.network}>
                  <div class="row">
                    <strong>{w.network}</strong>
                    <code class="mono wallet-address">{w.address}</code>
                    <Copy text={w.address} />
                    <button
                      type="button"
                      class="secondary small qr-toggle"
                      aria-expanded={qr === w.network}
                      onClick={() => setQr(qr === w.network ? null : w.network)}
                    >
                      {t.qr}
                    </button>
                  </div>
                  <p class="balances">
                    {w.balances === null || w.balances === undefined
                      ? t.balanceUnknown
                      : w.balances.length === 0
                        ? '0'
                        : w.balances.map((b) => `${b.amount.decimal} ${b.tokenSymbol}`).join(' · ')}
                  </p>
                  {qr === w.network && <Qr text={w.address} label={`QR: ${w.address}`} />}
                </li>
              ))}
            </ul>
          )}
        </>
      )}
    </Show>
  );
}
