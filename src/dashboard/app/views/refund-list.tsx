import { gql } from '../api';
import { ApproveRefundDocument, CancelRefundDocument, type DashRefundFragment } from '../documents';
import { when } from '../i18n';
import { Copy, ErrorLine, useAction, useApp } from '../ui';
import { useReauth } from './reauth';

/** A refund still open to the merchant: cancellable before anything is signed. */
const CANCELLABLE = new Set(['requested', 'claimed', 'approved']);

/**
 * A transaction's explorer page on a network, from a payment's explorer link on the same network
 * (the API gives payments theirs; a refund's is the same page with its own hash). Null where none is known.
 */
export function explorerFor(txHash: string, network: string, payments: { network: string; txHash: string; explorerUrl?: string | null }[]): string | null {
  const p = payments.find((x) => x.network === network && x.explorerUrl && x.explorerUrl.includes(x.txHash));
  return p ? p.explorerUrl!.replace(p.txHash, txHash) : null;
}

/**
 * Refunds as a list: amount, token, network, kind, reason, state; the claim link (when this page made
 * it) while the customer's address is awaited; the transaction once sent; approve (re-authenticated) and cancel.
 */
export function RefundList({
  refunds,
  claimUrls = {},
  payments = [],
  showOrder = false,
  onChange,
}: {
  refunds: DashRefundFragment[];
  claimUrls?: Record<string, string>;
  payments?: { network: string; txHash: string; explorerUrl?: string | null }[];
  showOrder?: boolean;
  onChange: () => void;
}) {
  const { t, env, lang, go } = useApp();
  const action = useAction();
  const reauth = useReauth();
  const approve = (id: string) =>
    void action.run(() =>
      reauth.guarded(async () => {
        await gql(ApproveRefundDocument, { environment: env, id });
        onChange();
      }),
    );
  const cancel = (id: string) =>
    void action.run(async () => {
      await gql(CancelRefundDocument, { environment: env, id });
      onChange();
    });
  return (
    <>
      <ErrorLine error={action.error} />
      {reauth.dialog}
      <ul class="plain refunds">
        {refunds.map((r) => {
          const href = r.txHash ? explorerFor(r.txHash, r.network, payments) : null;
          const claim = claimUrls[r.id];
          return (
            <li data-refund={r.id} data-status={r.status}>
              <div class="row">
                <strong>
                  {r.amount.decimal} {r.tokenSymbol}
                </strong>
                <span>{r.network}</span>
                <span>{t.kinds[r.kind] ?? r.kind}</span>
                <span class={`status r-${r.status}`}>{r.status}</span>
                {showOrder && (
                  <button type="button" class="link" onClick={() => go(`order/${encodeURIComponent(r.orderNo)}`)}>
                    {r.orderNo}
                  </button>
                )}
                <span class="muted">{when(r.createdAt, lang)}</span>
              </div>
              {r.reason && <p class="muted">{r.reason}</p>}
              {r.status === 'requested' &&
                (claim ? (
                  <div class="claim">
                    <p>{t.claimLink}</p>
                    <div class="row">
                      <code class="mono claim-url">{claim}</code> <Copy text={claim} />
                    </div>
                  </div>
                ) : (
                  !r.toAddress && <p class="muted">{t.claimWaiting}</p>
                ))}
              {r.toAddress && (
                <p>
                  {t.refundTo} <code class="mono">{r.toAddress}</code>
                </p>
              )}
              {r.txHash && (
                <p>
                  {t.tx} <code class="mono tx">{r.txHash}</code>{' '}
                  {href && (
                    <a href={href} target="_blank" rel="noreferrer">
                      {t.explorer}
                    </a>
                  )}
                </p>
              )}
              {r.failureReason && <p class="error">{r.failureReason}</p>}
              <div class="row">
                {r.status === 'claimed' && (
                  <button type="button" class="approve" disabled={action.busy} onClick={() => approve(r.id)}>
                    {t.approve}
                  </button>
                )}
                {CANCELLABLE.has(r.status) && (
                  <button type="button" class="secondary cancel-refund" disabled={action.busy} onClick={() => cancel(r.id)}>
                    {t.cancel}
                  </button>
                )}
              </div>
            </li>
          );
        })}
      </ul>
    </>
  );
}
