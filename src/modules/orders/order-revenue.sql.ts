/**
 * Revenue: money actually received, and the platform fee on that money only (docs/analytics.md
 * "Revenue"). One definition, used by every figure — the order's columns (written by the settlement,
 * summed by `orderStats` through the rollups), the `analytics` views and the CSV exports:
 *
 * - Only confirmed payments count (final at the network's depth); pending ones do not yet, orphaned
 *   ones (reorganised away) never.
 * - A deposit that received R confirmed base units of its due D (the amount asked, unique code
 *   included) at its locked quote (IDR total T = what the order asked in IDR, fee F):
 *     received = ⌊T × R / D⌋,  fee = ⌊F × R / D⌋,  net = received − fee.
 *   Paid exactly (R = D): received T, fee F, net = the quote's "merchant receives" in both fee modes.
 *   Half paid: half of each. Overpaid: the excess counts too, and carries its share of the fee. The
 *   unique code only identifies the payment: it is part of D, never revenue of its own.
 * - An order's figures are the sums over its deposits. Per payment (analytics.payments, the payments
 *   CSV) the deposit's figure is split in chain order: a payment's share is the deposit's figure at
 *   the running sum after it minus the one before it, so per-payment figures add up to the order's
 *   exactly, with no rounding drift.
 * - A confirmed refund of the order's payments (not of an unattributed receipt, which never counted)
 *   takes its units back out of the deposit's R before the formula: received = ⌊T × (R − refunded) / D⌋,
 *   and the fee and net likewise, so every figure of an order nets refunds out. The refund's `amount`
 *   counts (what the merchant gave back), whoever paid its network fee.
 */

/** `⌊value × units / due⌋` in SQL: exact integer division of numerics (no rounding of a quotient). */
export const shareOf = (value: string, units: string, due: string): string => `div((${value}) * (${units}), (${due}))`;

/**
 * Per order of a JSON array of order ids (`?`, bound once): `order_id`, `received`, `fee` (IDR) and
 * `any` (whether any confirmed units arrived), from its deposits' confirmed receipts
 * (deposits.amount_received, which the settlement keeps equal to the sum of their confirmed payments
 * in the same transaction) and their quotes. An order without deposits has a row too (0, false).
 */
export const ORDERS_REVENUE_SQL = `select x.order_id,
         coalesce(sum(${shareOf('q.total_idr', 'greatest(d.amount_received - rf.refunded, 0)', 'd.total_amount')}), 0) as received,
         coalesce(sum(${shareOf('q.fee_amount_idr', 'greatest(d.amount_received - rf.refunded, 0)', 'd.total_amount')}), 0) as fee,
         coalesce(bool_or(d.amount_received > 0), false) as any
  from (select value::uuid as order_id from jsonb_array_elements_text(?::jsonb)) x
  left join (deposits d join quotes q on q.id = d.quote_id
             cross join lateral (select coalesce(sum(r.amount), 0) as refunded from refunds r where r.deposit_id = d.id and r.receipt_id is null and r.status = 'confirmed') rf)
    on d.order_id = x.order_id
  group by x.order_id`;

/**
 * A LATERAL subquery giving payment `p` (of deposit `d`, quote `q`) its `received_idr`, `fee_idr` and
 * `net_idr` (0 unless confirmed): the deposit's figures at the running sum of its confirmed payments in
 * chain order, after this one minus before it.
 */
export const PAYMENT_REVENUE_LATERAL = `lateral (
    select c.received_idr, c.fee_idr, c.received_idr - c.fee_idr as net_idr
    from (select coalesce(sum(e.amount), 0) as before from payments e
          where e.deposit_id = p.deposit_id and e.status = 'confirmed' and (e.block_number, e.log_index, e.id) < (p.block_number, p.log_index, p.id)) b,
    lateral (select case when p.status = 'confirmed' and d.total_amount > 0
                         then ${shareOf('q.total_idr', 'b.before + p.amount', 'd.total_amount')} - ${shareOf('q.total_idr', 'b.before', 'd.total_amount')} else 0 end as received_idr,
                    case when p.status = 'confirmed' and d.total_amount > 0
                         then ${shareOf('q.fee_amount_idr', 'b.before + p.amount', 'd.total_amount')} - ${shareOf('q.fee_amount_idr', 'b.before', 'd.total_amount')} else 0 end as fee_idr) c
  )`;
