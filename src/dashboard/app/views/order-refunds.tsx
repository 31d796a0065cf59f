import { useEffect, useState } from 'preact/hooks';
import { GqlError, gql } from '../api';
import { CreateRefundDocument, OrderRefundsDocument, type RefundKind } from '../documents';
import { decimalsOf, fromUnits, toUnits } from '../money';
import { Empty, ErrorLine, Show, useAction, useApp, useLoad } from '../ui';
import { RefundList } from './refund-list';

const CLOSED = new Set(['cancelled', 'failed']);
const FINAL = new Set(['confirmed', 'cancelled', 'failed']);
const POLL_MS = 4000;

/** The kinds of refund an order's payments offer, by the order's status (docs/refunds.md "What can be refunded"). */
function kindsFor(status: string, overpaid: boolean): RefundKind[] {
  if (status === 'Success') return overpaid ? ['merchant', 'overpayment_excess'] : ['merchant'];
  if (status === 'Underpaid' || status === 'Expired') return ['partial_payment'];
  return [];
}

/**
 * An order's refunds and the "Refund" form: full or partial, a reason; before confirming, the most that
 * can be refunded (what the deposit received less the refunds of it not cancelled or failed) and the fee rule.
 */
export function OrderRefunds({ orderNo, version, claims }: { orderNo: string; version: string; claims: [Record<string, string>, (f: (c: Record<string, string>) => Record<string, string>) => void] }) {
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
  return (
    <section id="order-refunds">
      <h2>{t.refunds}</h2>
      <Show value={data} retry={reload}>
        {({ order: o, refundSettings }) => {
          if (o.refunds === null || o.refunds === undefined) return <Empty text={t.noRefundAccess} />;
          const d = o.deposits.find((x) => Number(x.amountReceived) > 0);
          const decimals = d ? decimalsOf(d.totalAmount, d.totalAmountBaseUnits) : null;
          const kinds = kindsFor(o.status, o.overpaid);
          const ofDeposit = d ? o.refunds.filter((r) => r.receiptId === null && r.network === d.network && !CLOSED.has(r.status)) : [];
          const received = d && decimals !== null ? (toUnits(d.amountReceived, decimals) ?? 0n) : 0n;
          const used = ofDeposit.reduce((s, r) => s + BigInt(r.amount.units), 0n);
          const usedExcess = ofDeposit.filter((r) => r.kind === 'overpayment_excess').reduce((s, r) => s + BigInt(r.amount.units), 0n);
          const maxOf = (kind: RefundKind): bigint => {
            const left = received - used;
            if (kind !== 'overpayment_excess' || !d) return left > 0n ? left : 0n;
            const excess = received - BigInt(d.totalAmountBaseUnits) - usedExcess;
            const m = excess < left ? excess : left;
            return m > 0n ? m : 0n;
          };
          return (
            <>
              {o.refunds.length === 0 ? <Empty text={t.noRefunds} /> : <RefundList refunds={o.refunds} claimUrls={claimUrls} onClaimUrl={(id, url) => setClaimUrls((c) => ({ ...c, [id]: url }))} onChange={reload} />}
              {d && decimals !== null && kinds.length > 0 && (
                <>
                  {!open && (
                    <button type="button" id="refund-open" onClick={() => setOpen(true)}>
                      {t.refund}
                    </button>
                  )}
                  {open && (
                    <RefundForm
                      orderId={o.id}
                      kinds={kinds}
                      symbol={d.tokenName}
                      network={d.network}
                      decimals={decimals}
                      maxOf={maxOf}
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

function RefundForm(p: {
  orderId: string;
  kinds: RefundKind[];
  symbol: string;
  network: string;
  decimals: number;
  maxOf: (k: RefundKind) => bigint;
  feeMode: string;
  onCancel: () => void;
  onCreated: (id: string, claimUrl: string | null) => void;
}) {
  const { t, env } = useApp();
  const [kind, setKind] = useState<RefundKind>(p.kinds[0]!);
  const [full, setFull] = useState(true);
  const [amount, setAmount] = useState('');
  const [reason, setReason] = useState('');
  const [review, setReview] = useState(false);
  const action = useAction();
  const max = p.maxOf(kind);
  const maxText = fromUnits(max, p.decimals);
  const units = full ? max : toUnits(amount, p.decimals);

  const check = (e: Event) => {
    e.preventDefault();
    action.setError(null);
    if (max === 0n) return action.setError(t.refundNothing);
    if (units === null || units <= 0n) return action.setError(t.refundBadAmount);
    if (units > max) return action.setError(t.refundTooMuch(maxText, p.symbol));
    setReview(true);
  };
  const confirm = () =>
    void action.run(async () => {
      try {
        const r = await gql(CreateRefundDocument, {
          environment: env,
          input: {
            orderId: p.orderId,
            kind,
            amount: full ? undefined : units!.toString(),
            reason: reason.trim() || undefined,
          },
        });
        p.onCreated(r.createRefund.refund.id, r.createRefund.claimUrl ?? null);
      } catch (e) {
        setReview(false);
        // The gateway's own limit (it counts what this page may not see yet): said the same way.
        if (e instanceof GqlError && e.code === 'REFUND_EXCEEDS_RECEIVED') throw new Error(`${t.refundTooMuch(maxText, p.symbol)} (${e.code})`);
        throw e;
      }
    });

  return (
    <form class="card stack" id="refund-form" onSubmit={check}>
      <p id="refund-max">{max === 0n ? t.refundNothing : t.refundMax(maxText, p.symbol)}</p>
      <label>
        {t.refundKind}
        <select id="refund-kind" value={kind} disabled={review} onChange={(e) => setKind(e.currentTarget.value as RefundKind)}>
          {p.kinds.map((k) => (
            <option value={k}>{t.kinds[k] ?? k}</option>
          ))}
        </select>
      </label>
      <label class="check">
        <input type="checkbox" id="refund-full" checked={full} disabled={review} onChange={(e) => setFull(e.currentTarget.checked)} /> {t.refundFull}
      </label>
      {!full && (
        <label>
          {t.refundAmount(p.symbol)}
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
            {fromUnits(units, p.decimals)} {p.symbol}
          </strong>{' '}
          · {p.network} · {t.kinds[kind] ?? kind}
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
