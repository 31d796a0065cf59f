import { useEffect, useState } from 'preact/hooks';
import { GqlError, gql } from '../api';
import { CreateRefundDocument, OrderRefundsDocument, type OrderRefundsQuery, type RefundKind } from '../documents';
import { fromUnits, toUnits } from '../money';
import { Empty, ErrorLine, Show, useAction, useApp, useLoad } from '../ui';
import { RefundList } from './refund-list';

const FINAL = new Set(['confirmed', 'cancelled', 'failed']);
const POLL_MS = 4000;

type Refundable = NonNullable<OrderRefundsQuery['order']['deposits'][number]['refundable']>;

/** Something the order can still refund: one of its deposits' payments, or one of its late or wrong-token receipts. */
interface Source {
  key: string;
  depositId?: string;
  receiptId?: string;
  label: string;
  symbol: string;
  network: string;
  decimals: number;
  kinds: RefundKind[];
  /** The gateway's own figure for each kind (what create would allow now). */
  max: Partial<Record<RefundKind, bigint>>;
}

/** The kinds a source offers: the gateway's offer, and the merchant's own refund of a paid order's payments. */
function sourceOf(r: Refundable, base: Omit<Source, 'kinds' | 'max' | 'decimals'>, merchantAllowed: boolean): Source | null {
  const kinds: RefundKind[] = [];
  const max: Partial<Record<RefundKind, bigint>> = {};
  if (merchantAllowed && BigInt(r.amount.units) > 0n) {
    kinds.push('merchant');
    max.merchant = BigInt(r.amount.units);
  }
  if (r.offer) {
    kinds.push(r.offer.kind);
    max[r.offer.kind] = BigInt(r.offer.amount.units);
  }
  return kinds.length ? { ...base, kinds, max, decimals: r.decimals } : null;
}

/**
 * An order's refunds and the "Refund" form: full or partial, a reason; which deposit (when several
 * received money) or which late or wrong-token receipt; before confirming, the most that can be
 * refunded as the gateway computes it (Deposit.refundable, UnattributedReceipt.refundable) and the fee rule.
 */
export function OrderRefunds({
  orderNo,
  version,
  claims,
}: {
  orderNo: string;
  version: string;
  claims: [Record<string, string>, (f: (c: Record<string, string>) => Record<string, string>) => void];
}) {
  const { t, env } = useApp();
  const [data, reload, set] = useLoad(() => gql(OrderRefundsDocument, { environment: env, orderNo }), [env, orderNo, version]);
  // The merchant feed carries order and payment events only: while a refund is open, its state is re-read
  // every few seconds, in place (no loading state, the form stays as it is).
  const waiting = data.state === 'ok' && (data.data.order.refunds ?? []).some((r) => !FINAL.has(r.status));
  useEffect(() => {
    if (!waiting) return;
    const i = setInterval(() => void gql(OrderRefundsDocument, { environment: env, orderNo }).then(set, () => {}), POLL_MS);
    return () => clearInterval(i);
  }, [waiting, env, orderNo]);
  const [claimUrls, setClaimUrls] = claims;
  const [open, setOpen] = useState(false);
  const [picked, setPicked] = useState<string | null>(null);
  return (
    <section id="order-refunds">
      <h2>{t.refunds}</h2>
      <Show value={data} retry={reload}>
        {({ order: o, refundSettings }) => {
          if (o.refunds === null || o.refunds === undefined) return <Empty text={t.noRefundAccess} />;
          const sources: Source[] = [
            ...o.deposits.flatMap((d) =>
              d.refundable
                ? [
                    sourceOf(
                      d.refundable,
                      {
                        key: `d:${d.id}`,
                        depositId: d.id,
                        label: `${d.amountReceived} ${d.tokenName} · ${d.network}`,
                        symbol: d.tokenName,
                        network: d.network,
                      },
                      o.status === 'Success',
                    ),
                  ]
                : [],
            ),
            ...o.unattributedReceipts.flatMap((u) =>
              u.refundable
                ? [
                    sourceOf(
                      u.refundable,
                      {
                        key: `r:${u.id}`,
                        receiptId: u.id,
                        label: `${u.amount} ${u.tokenSymbol} · ${u.network} · ${t.kinds[u.refundable.offer?.kind ?? ''] ?? u.reason}`,
                        symbol: u.tokenSymbol,
                        network: u.network,
                      },
                      false,
                    ),
                  ]
                : [],
            ),
          ].filter((x): x is Source => x !== null);
          const src = sources.find((x) => x.key === picked) ?? sources[0];
          return (
            <>
              {o.refunds.length === 0 ? (
                <Empty text={t.noRefunds} />
              ) : (
                <RefundList refunds={o.refunds} claimUrls={claimUrls} onClaimUrl={(id, url) => setClaimUrls((c) => ({ ...c, [id]: url }))} onChange={reload} />
              )}
              {src && (
                <>
                  {!open && (
                    <button type="button" id="refund-open" onClick={() => setOpen(true)}>
                      {t.refund}
                    </button>
                  )}
                  {open && sources.length > 1 && (
                    <label>
                      {t.refundSource}
                      <select id="refund-source" value={src.key} onChange={(e) => setPicked(e.currentTarget.value)}>
                        {sources.map((x) => (
                          <option value={x.key}>{x.label}</option>
                        ))}
                      </select>
                    </label>
                  )}
                  {open && (
                    <RefundForm
                      key={src.key}
                      orderId={o.id}
                      source={src}
                      feeMode={refundSettings.feeMode}
                      onCancel={() => setOpen(false)}
                      onCreated={(id, url) => {
                        if (url) setClaimUrls((c) => ({ ...c, [id]: url }));
                        setOpen(false);
                        reload();
                      }}
                    />
                  )}
                </>
              )}
            </>
          );
        }}
      </Show>
    </section>
  );
}

function RefundForm(p: { orderId: string; source: Source; feeMode: string; onCancel: () => void; onCreated: (id: string, claimUrl: string | null) => void }) {
  const { t, env } = useApp();
  const { kinds, symbol, network, decimals } = p.source;
  const [kind, setKind] = useState<RefundKind>(kinds[0]!);
  const [full, setFull] = useState(true);
  const [amount, setAmount] = useState('');
  const [reason, setReason] = useState('');
  const [review, setReview] = useState(false);
  const action = useAction();
  const max = p.source.max[kind] ?? 0n;
  const maxText = fromUnits(max, decimals);
  const units = full ? max : toUnits(amount, decimals);

  const check = (e: Event) => {
    e.preventDefault();
    action.setError(null);
    if (max === 0n) return action.setError(t.refundNothing);
    if (units === null || units <= 0n) return action.setError(t.refundBadAmount);
    if (units > max) return action.setError(t.refundTooMuch(maxText, symbol));
    setReview(true);
  };
  const confirm = () =>
    void action.run(async () => {
      try {
        const r = await gql(CreateRefundDocument, {
          environment: env,
          input: {
            orderId: p.orderId,
            depositId: p.source.depositId,
            receiptId: p.source.receiptId,
            kind,
            amount: full ? undefined : units!.toString(),
            reason: reason.trim() || undefined,
          },
        });
        p.onCreated(r.createRefund.refund.id, r.createRefund.claimUrl ?? null);
      } catch (e) {
        setReview(false);
        // The gateway's own limit (it counts what this page may not see yet): said the same way.
        if (e instanceof GqlError && e.code === 'REFUND_EXCEEDS_RECEIVED') throw new Error(`${t.refundTooMuch(maxText, symbol)} (${e.code})`);
        throw e;
      }
    });

  return (
    <form class="card stack" id="refund-form" onSubmit={check}>
      <p id="refund-max">{max === 0n ? t.refundNothing : t.refundMax(maxText, symbol)}</p>
      <label>
        {t.refundKind}
        <select id="refund-kind" value={kind} disabled={review} onChange={(e) => setKind(e.currentTarget.value as RefundKind)}>
          {kinds.map((k) => (
            <option value={k}>{t.kinds[k] ?? k}</option>
          ))}
        </select>
      </label>
      <label class="check">
        <input type="checkbox" id="refund-full" checked={full} disabled={review} onChange={(e) => setFull(e.currentTarget.checked)} /> {t.refundFull}
      </label>
      {!full && (
        <label>
          {t.refundAmount(symbol)}
          <input id="refund-amount" inputMode="decimal" required disabled={review} value={amount} onInput={(e) => setAmount(e.currentTarget.value)} />
        </label>
      )}
      <label>
        {t.refundReason}
        <input id="refund-reason" maxLength={500} disabled={review} value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
      </label>
      <p class="muted" id="refund-fee-rule">
        {t.feeMode}: {t.feeRule(p.feeMode)}
      </p>
      {review && units !== null && (
        <p id="refund-summary">
          <strong>
            {fromUnits(units, decimals)} {symbol}
          </strong>{' '}
          · {network} · {t.kinds[kind] ?? kind}
        </p>
      )}
      <ErrorLine error={action.error} />
      <div class="row">
        {review ? (
          <button type="button" id="refund-confirm" disabled={action.busy} onClick={confirm}>
            {t.refundConfirm}
          </button>
        ) : (
          <button type="submit" id="refund-review">
            {t.refundReview}
          </button>
        )}
        <button type="button" class="secondary" onClick={() => (review ? setReview(false) : p.onCancel())}>
          {t.cancel}
        </button>
      </div>
    </form>
  );
}
