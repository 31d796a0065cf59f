import { gql } from '../api';
import { ApproveRefundDocument, CancelRefundDocument, RenewRefundClaimLinkDocument, type DashRefundFragment } from '../documents';
import { when } from '../i18n';
import { Copy, ErrorLine, useAction, useApp } from '../ui';
import { useReauth } from './reauth';

/** A refund still open to the merchant: cancellable before anything is signed. */
const CANCELLABLE = new Set(['requested', 'claimed', 'approved']);

/**
 * Refunds as a list: amount, token, network, kind, reason, state; the claim link (when this page made
 * it) while the customer's address is awaited, and a new one on request (the old one stops working); the
 * transaction and its explorer page once sent; approve (re-authenticated) and cancel.
 */
export function RefundList({
  refunds,
  claimUrls = {},
  onClaimUrl,
  showOrder = false,
  onChange,
}: {
  refunds: DashRefundFragment[];
  claimUrls?: Record<string, string>;
  /** A new claim link was issued for a refund (the page keeps it to show). */
  onClaimUrl?: (id: string, url: string) => void;
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
  const renew = (id: string) =>
    void action.run(async () => {
      const r = await gql(RenewRefundClaimLinkDocument, { environment: env, id });
      onClaimUrl?.(id, r.renewRefundClaimLink.claimUrl!);
      onChange();
    });
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
          const href = r.explorerUrl ?? null;
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
                {r.status === 'requested' && !r.toAddress && onClaimUrl && (
                  <button type="button" class="secondary renew-claim" disabled={action.busy} onClick={() => renew(r.id)}>
                    {t.newClaimLink}
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
