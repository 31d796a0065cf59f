import { Migration } from '@mikro-orm/migrations';

const NIL = `'00000000-0000-0000-0000-000000000000'::uuid`;
/** ⌊value × units / due⌋ (src/modules/orders/order-revenue.sql.ts `shareOf`, frozen here). */
const share = (value: string, units: string, due: string) => `div((${value}) * (${units}), (${due}))`;

/**
 * Two changes to the order figures, in one migration because both rewrite the rollups:
 *
 * 1. Revenue counts money actually received (src/modules/orders/order-revenue.sql.ts): orders get
 *    `received_idr`, and `fee_idr` / `net_idr` become the fee and net on what was received (a half-paid
 *    order: half; an order whose payment was reorganised away: what is left), written by the
 *    settlement from confirmed receipts. The rollups get a `received` sum. Back-filled from the
 *    confirmed payments; the `analytics` views `orders`, `payments` and `daily_revenue` are redefined
 *    on the same rule (payments carry their share; daily revenue is by the day money was confirmed).
 * 2. `order_stats_delta`: the status writers append signed deltas here instead of upserting rollup
 *    rows (two transitions of one merchant locked those rows in opposite orders: deadlock 40P01), and
 *    a compaction job folds them into `order_stats_rollup` / `order_stats_daily`
 *    (docs/decisions/0009-rollup-deltas.md).
 */
export class Migration20261128110200_revenue_received_and_rollup_deltas extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "orders" add column if not exists "received_idr" numeric(78,0) null;`);
    this.addSql(`alter table "order_stats_rollup" add column if not exists "received" numeric(78,0) not null default 0;`);
    this.addSql(`alter table "order_stats_daily" add column if not exists "received" numeric(78,0) not null default 0;`);
    this.addSql(`
      create table if not exists "order_stats_delta" (
        "id" bigint generated always as identity primary key,
        "merchant_id" uuid not null,
        "environment" text not null,
        "created_at" timestamptz not null,
        "status" text not null,
        "paid_token_id" uuid not null,
        "paid_network" text null,
        "paid_decimals" int null,
        "orders" bigint not null,
        "amount" numeric(78,0) not null,
        "received" numeric(78,0) not null,
        "fee" numeric(78,0) not null,
        "net" numeric(78,0) not null,
        "paid_units" numeric(78,0) not null
      );`);
    this.addSql(`create index if not exists "order_stats_delta_range_index" on "order_stats_delta" ("merchant_id", "environment", "created_at");`);

    // Back-fill the revenue facts from the confirmed payments (writers wait on the lock).
    this.addSql(`lock table "orders" in share row exclusive mode;`);
    this.addSql(`
      update "deposits" d set "amount_received" = coalesce((select sum(p.amount) from "payments" p where p.deposit_id = d.id and p.status = 'confirmed'), 0)
      where "amount_received" is distinct from coalesce((select sum(p.amount) from "payments" p where p.deposit_id = d.id and p.status = 'confirmed'), 0);`);
    this.addSql(`
      update "orders" o set
        "received_idr" = case when f.any then f.received end,
        "fee_idr" = case when f.any then f.fee end,
        "net_idr" = case when f.any then f.received - f.fee end,
        "paid_amount" = coalesce((select x.amount_received from "deposits" x where x.id = o.paid_deposit_id), o.paid_amount)
      from (
        select d.order_id, sum(${share('q.total_idr', 'd.amount_received', 'd.total_amount')}) as received,
               sum(${share('q.fee_amount_idr', 'd.amount_received', 'd.total_amount')}) as fee, bool_or(d.amount_received > 0) as any
        from "deposits" d join "quotes" q on q.id = d.quote_id group by d.order_id
      ) f
      where f.order_id = o.id;`);
    this.addSql(`update "orders" set "fee_idr" = null, "net_idr" = null where "received_idr" is null and ("fee_idr" is not null or "net_idr" is not null);`);

    // Rebuild both rollups from the orders (the figures changed).
    this.addSql(`lock table "order_stats_rollup" in access exclusive mode;`);
    this.addSql(`lock table "order_stats_daily" in access exclusive mode;`);
    this.addSql(`delete from "order_stats_delta";`);
    this.addSql(`delete from "order_stats_rollup";`);
    this.addSql(`delete from "order_stats_daily";`);
    const sums = `count(*), sum(amount), coalesce(sum(fee_idr), 0), coalesce(sum(net_idr), 0), coalesce(sum(paid_amount), 0), coalesce(sum(received_idr), 0)`;
    const cols = `merchant_id, environment, %KEY%, status, paid_token_id, paid_network, paid_decimals, orders, amount, fee, net, paid_units, received`;
    this.addSql(`
      insert into "order_stats_rollup" (${cols.replace('%KEY%', 'bucket')})
      select merchant_id, environment, date_bin('1 hour', created_at, timestamptz '2000-01-01 00:00:00+00'), status, coalesce(paid_token_id, ${NIL}),
             max(paid_network), max(paid_decimals), ${sums}
      from "orders" where status not in ('Created','Processing') group by 1, 2, 3, 4, 5 order by 1, 2, 3, 4, 5;`);
    this.addSql(`
      insert into "order_stats_daily" (${cols.replace('%KEY%', 'tz, day')})
      select merchant_id, environment, 'Asia/Jakarta', (created_at at time zone 'Asia/Jakarta')::date, status, coalesce(paid_token_id, ${NIL}),
             max(paid_network), max(paid_decimals), ${sums}
      from "orders" where status not in ('Created','Processing') group by 1, 2, 3, 4, 5, 6 order by 1, 2, 3, 4, 5, 6;`);

    // analytics: the same rule in SQL (docs/analytics.md "Revenue").
    this.addSql(`drop view if exists "analytics"."daily_revenue";`);
    this.addSql(`drop view if exists "analytics"."orders";`);
    this.addSql(`drop view if exists "analytics"."payments";`);
    this.addSql(`
      create view "analytics"."orders" as
      select o.id as order_id, o.merchant_id, o.environment, o.order_no, o.status,
             o.amount as amount_idr, o.currency, o.customer_name, o.customer_email, o.source, o.payment_link_id, o.overpaid,
             o.created_at, o.expires_at, o.paid_at,
             (o.created_at at time zone 'Asia/Jakarta') as created_at_wib, (o.paid_at at time zone 'Asia/Jakarta') as paid_at_wib,
             p.deposit_id as paid_deposit_id, p.network as paid_network, p.token_symbol as paid_token_symbol, p.token_address as paid_token_address,
             p.amount_received as paid_amount, p.total_amount as due_amount, p.rate_idr,
             coalesce(o.received_idr, 0) as received_idr, coalesce(o.fee_idr, 0) as fee_idr, coalesce(o.net_idr, 0) as net_idr
      from public.orders o
      left join lateral (
        select d.id as deposit_id, d.network, t.symbol as token_symbol, t.address as token_address,
               analytics.token_units(d.amount_received, t.decimals) as amount_received,
               analytics.token_units(d.total_amount, t.decimals) as total_amount,
               q.crypto_rate::numeric as rate_idr
        from public.deposits d join public.tokens t on t.id = d.token_id join public.quotes q on q.id = d.quote_id
        where d.order_id = o.id and d.amount_received > 0
        order by d.amount_received / d.total_amount desc, d.created_at desc
        limit 1
      ) p on true;`);
    const part = (value: string) =>
      `case when p.status = 'confirmed' and d.total_amount > 0 then ${share(value, 'b.before + p.amount', 'd.total_amount')} - ${share(value, 'b.before', 'd.total_amount')} else 0 end`;
    this.addSql(`
      create view "analytics"."payments" as
      select p.id as payment_id, p.order_id, o.order_no, o.merchant_id, p.environment, p.network,
             t.symbol as token_symbol, t.address as token_address, t.decimals,
             p.tx_hash, p.log_index, p.block_number, p.from_address, p.to_address,
             analytics.token_units(p.amount, t.decimals) as amount, p.amount as amount_base,
             round(analytics.token_units(p.amount, t.decimals) * q.crypto_rate::numeric) as amount_idr,
             q.crypto_rate::numeric as rate_idr,
             p.status, p.late, p.detected_at, p.confirmed_at, p.orphaned_at,
             (p.detected_at at time zone 'Asia/Jakarta') as detected_at_wib,
             c.received_idr, c.fee_idr, c.received_idr - c.fee_idr as net_idr
      from public.payments p
      join public.orders o on o.id = p.order_id
      join public.tokens t on t.id = p.token_id
      join public.deposits d on d.id = p.deposit_id
      join public.quotes q on q.id = d.quote_id
      cross join lateral (
        select coalesce(sum(e.amount), 0) as before from public.payments e
        where e.deposit_id = p.deposit_id and e.status = 'confirmed' and (e.block_number, e.log_index, e.id) < (p.block_number, p.log_index, p.id)
      ) b
      cross join lateral (select ${part('q.total_idr')} as received_idr, ${part('q.fee_amount_idr')} as fee_idr) c;`);
    this.addSql(`
      create view "analytics"."daily_revenue" as
      select (p.confirmed_at at time zone 'Asia/Jakarta')::date as day_wib, p.merchant_id, p.environment, p.network, p.token_symbol,
             count(distinct p.order_id) filter (where o.status = 'Success') as orders_paid,
             sum(p.received_idr) as revenue_idr, sum(p.fee_idr) as fee_idr, sum(p.net_idr) as net_idr,
             sum(p.amount) as token_amount, count(distinct p.order_id) filter (where o.overpaid) as orders_overpaid
      from analytics.payments p join public.orders o on o.id = p.order_id
      where p.status = 'confirmed'
      group by 1, 2, 3, 4, 5;`);
    const comments: Record<string, string> = {
      orders:
        'Orders with their paying deposit; received_idr, fee_idr and net_idr count only money actually received (confirmed payments), the fee only on that',
      payments:
        'Observed transfers into deposit addresses: token units, base units, IDR at the order’s locked rate; received_idr, fee_idr, net_idr: the payment’s share of revenue (0 unless confirmed)',
      daily_revenue:
        'Money received per day of confirmation in Asia/Jakarta (WIB), merchant, environment, network and token: confirmed payments only, fee and net on them',
    };
    for (const [view, text] of Object.entries(comments)) this.addSql(`comment on view "analytics"."${view}" is '${text.replace(/'/g, "''")}';`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "order_stats_delta";`);
    this.addSql(`alter table "order_stats_rollup" drop column if exists "received";`);
    this.addSql(`alter table "order_stats_daily" drop column if exists "received";`);
    this.addSql(`drop view if exists "analytics"."daily_revenue";`);
    this.addSql(`drop view if exists "analytics"."orders";`);
    this.addSql(`alter table "orders" drop column if exists "received_idr";`);
  }
}
