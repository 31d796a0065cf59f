import { Migration } from '@mikro-orm/migrations';

/**
 * `order_stats_daily`: the order statistics rollup per local calendar day of the default reporting
 * zone (Asia/Jakarta, no DST), beside the hourly one. `orderStats` by DAY over a year read ≈ 88,000
 * hourly rows (24 × 365 × statuses × tokens) and re-aggregated them per local day; whole Jakarta days
 * now come from ≈ 3,700 rows, the range's partial days at both ends from the hourly rollup and the
 * orders table as before. Kept by the same writers in the same statement as the hourly rows
 * (order-stats.sql.ts `rollupDelta`); back-filled here from the orders (the writers wait on the lock).
 */
export class Migration20261127000800_order_stats_daily extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table "order_stats_daily" (
        "merchant_id" uuid not null,
        "environment" text not null,
        "tz" text not null,
        "day" date not null,
        "status" text not null,
        "paid_token_id" uuid not null,
        "paid_network" text null,
        "paid_decimals" int null,
        "orders" bigint not null,
        "amount" numeric(78,0) not null,
        "fee" numeric(78,0) not null,
        "net" numeric(78,0) not null,
        "paid_units" numeric(78,0) not null,
        constraint "order_stats_daily_pkey" primary key ("merchant_id", "environment", "tz", "day", "status", "paid_token_id")
      );`);
    this.addSql(`lock table "orders" in share row exclusive mode;`);
    this.addSql(`
      insert into "order_stats_daily"
      select merchant_id, environment, 'Asia/Jakarta', (created_at at time zone 'Asia/Jakarta')::date, status,
             coalesce(paid_token_id, '00000000-0000-0000-0000-000000000000'), max(paid_network), max(paid_decimals),
             count(*), sum(amount), coalesce(sum(fee_idr), 0), coalesce(sum(net_idr), 0), coalesce(sum(paid_amount), 0)
      from "orders" where status not in ('Created','Processing')
      group by 1, 2, 3, 4, 5, 6
      order by 1, 2, 3, 4, 5, 6;`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "order_stats_daily";`);
  }
}
