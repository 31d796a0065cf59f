import { Migration } from '@mikro-orm/migrations';

/** `⌊value × units / due⌋` in SQL (order-revenue.sql.ts `shareOf`, inlined: a migration stays as written). */
const share = (value: string, units: string, due: string) => `div((${value}) * (${units}), (${due}))`;

/**
 * Revenue net of refunds in the analytics views (docs/analytics.md "Revenue"):
 *
 * - `analytics.refunds` gains `received_idr`, `fee_idr`, `net_idr`: what a confirmed refund of the
 *   order's payments took out of its deposit's figures (0 otherwise). Refunds of a deposit are taken in
 *   the order they confirmed; a refund's share is the deposit's figure at what was left before it minus
 *   the one at what was left after it, ⌊T × max(R − before, 0) / D⌋ − ⌊T × max(R − before − amount, 0) / D⌋,
 *   so the payments' figures less the refunds' add up to the order's exactly (no rounding drift).
 * - `analytics.daily_revenue` nets the refunds out on the WIB day they confirmed: `revenue_idr`,
 *   `fee_idr` and `net_idr` are the payments' less the refunds'; `gross_idr`, `refunded_idr`,
 *   `refunds` and `refunded_amount` show the two sides.
 */
export class Migration20261129070100_refund_revenue_views extends Migration {
  override async up(): Promise<void> {
    const part = (value: string) =>
      `case when r.status = 'confirmed' and r.receipt_id is null and d.total_amount > 0
            then ${share(value, 'greatest(d.amount_received - b.before, 0)', 'd.total_amount')} - ${share(value, 'greatest(d.amount_received - b.before - r.amount, 0)', 'd.total_amount')} else 0 end`;
    this.addSql(`drop view if exists "analytics"."daily_revenue";`);
    this.addSql(`
      create or replace view "analytics"."refunds" as
      select r.id as refund_id, r.merchant_id, r.environment, r.network, r.order_id, o.order_no, r.receipt_id, r.deposit_id, r.kind, r.reason, r.status, r.failure_reason,
             t.symbol as token_symbol, t.address as token_address, t.decimals,
             analytics.token_units(r.amount, t.decimals) as amount, r.amount as amount_base,
             analytics.token_units(r.sent_amount, t.decimals) as sent_amount, r.sent_amount as sent_amount_base,
             case when t.id = d.token_id then round(analytics.token_units(r.amount, t.decimals) * q.crypto_rate::numeric) end as amount_idr,
             r.fee_mode, analytics.token_units(r.fee_deducted, t.decimals) as fee_deducted,
             analytics.token_units(r.fee_paid, analytics.native_decimals(r.network)) as network_fee,
             r.source, r.from_address, r.to_address, r.address_source, r.tx_hash, r.block_number,
             r.created_at, r.approved_at, r.sent_at, r.confirmed_at, (r.confirmed_at at time zone 'Asia/Jakarta') as confirmed_at_wib, r.cancelled_at,
             c.received_idr, c.fee_idr, c.received_idr - c.fee_idr as net_idr
      from public.refunds r
      join public.orders o on o.id = r.order_id
      join public.deposits d on d.id = r.deposit_id
      join public.tokens t on t.id = r.token_id
      join public.quotes q on q.id = d.quote_id
      cross join lateral (
        select coalesce(sum(e.amount), 0) as before from public.refunds e
        where e.deposit_id = r.deposit_id and e.receipt_id is null and e.status = 'confirmed' and (e.confirmed_at, e.id) < (r.confirmed_at, r.id)
      ) b
      cross join lateral (select ${part('q.total_idr')} as received_idr, ${part('q.fee_amount_idr')} as fee_idr) c;`);
    this.addSql(`
      create view "analytics"."daily_revenue" as
      with flows as (
        select (p.confirmed_at at time zone 'Asia/Jakarta')::date as day_wib, p.merchant_id, p.environment, p.network, p.token_symbol, p.order_id, true as payment,
               p.received_idr, p.fee_idr, p.amount, 0::numeric as refunded_idr, 0::numeric as refunded_fee_idr, 0::numeric as refunded_amount
        from analytics.payments p where p.status = 'confirmed'
        union all
        select (r.confirmed_at at time zone 'Asia/Jakarta')::date, r.merchant_id, r.environment, r.network, r.token_symbol, r.order_id, false,
               0, 0, 0, r.received_idr, r.fee_idr, r.amount
        from analytics.refunds r where r.status = 'confirmed' and r.receipt_id is null
      )
      select f.day_wib, f.merchant_id, f.environment, f.network, f.token_symbol,
             count(distinct f.order_id) filter (where f.payment and o.status = 'Success') as orders_paid,
             sum(f.received_idr) - sum(f.refunded_idr) as revenue_idr, sum(f.fee_idr) - sum(f.refunded_fee_idr) as fee_idr,
             (sum(f.received_idr) - sum(f.refunded_idr)) - (sum(f.fee_idr) - sum(f.refunded_fee_idr)) as net_idr,
             sum(f.amount) as token_amount, count(distinct f.order_id) filter (where f.payment and o.overpaid) as orders_overpaid,
             sum(f.received_idr) as gross_idr, sum(f.refunded_idr) as refunded_idr, count(*) filter (where not f.payment) as refunds, sum(f.refunded_amount) as refunded_amount
      from flows f join public.orders o on o.id = f.order_id
      group by 1, 2, 3, 4, 5;`);
    const comments: Record<string, string> = {
      refunds:
        'Refunds: token units, base units, IDR worth at the deposit’s locked rate; received_idr, fee_idr, net_idr: what a confirmed refund of the order’s payments took out of the order’s revenue (0 otherwise)',
      daily_revenue:
        'Money received per day of confirmation in Asia/Jakarta (WIB), merchant, environment, network and token, net of refunds confirmed that day: revenue_idr, fee_idr, net_idr = confirmed payments less confirmed refunds; gross_idr and refunded_idr the two sides',
    };
    for (const [view, text] of Object.entries(comments)) this.addSql(`comment on view "analytics"."${view}" is '${text.replace(/'/g, "''")}';`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop view if exists "analytics"."daily_revenue";`);
  }
}
