import { Migration } from '@mikro-orm/migrations';

/**
 * `order_stats_rollup` in hourly UTC buckets (were 15 minutes): 4× fewer rows for `orderStats` to sum.
 * A UTC hour lies inside one local hour (so one local day) in every zone whose offset is a whole
 * number of hours (Asia/Jakarta, UTC, …); for the few others (+05:30, +05:45) the reader takes the
 * hours that straddle a local boundary from the orders table (OrderStatsService), so the totals stay
 * exact in every zone. Rebuilt from the orders in this transaction (the status writer waits on the
 * table lock; it then updates the hourly rows, as it did the 15-minute ones).
 */
export class Migration20261127000300_order_stats_hourly extends Migration {
  override async up(): Promise<void> {
    this.addSql(`lock table "order_stats_rollup" in access exclusive mode;`);
    this.addSql(`delete from "order_stats_rollup";`);
    this.addSql(`
      insert into "order_stats_rollup"
      select merchant_id, environment, date_bin('1 hour', created_at, timestamptz '2000-01-01 00:00:00+00'), status,
             coalesce(paid_token_id, '00000000-0000-0000-0000-000000000000'), max(paid_network), max(paid_decimals),
             count(*), sum(amount), coalesce(sum(fee_idr), 0), coalesce(sum(net_idr), 0), coalesce(sum(paid_amount), 0)
      from "orders" where status not in ('Created','Processing')
      group by 1, 2, 3, 4, 5
      order by 1, 2, 3, 4, 5;`);
  }

  override async down(): Promise<void> {
    this.addSql(`lock table "order_stats_rollup" in access exclusive mode;`);
    this.addSql(`delete from "order_stats_rollup";`);
    this.addSql(`
      insert into "order_stats_rollup"
      select merchant_id, environment, date_bin('15 minutes', created_at, timestamptz '2000-01-01 00:00:00+00'), status,
             coalesce(paid_token_id, '00000000-0000-0000-0000-000000000000'), max(paid_network), max(paid_decimals),
             count(*), sum(amount), coalesce(sum(fee_idr), 0), coalesce(sum(net_idr), 0), coalesce(sum(paid_amount), 0)
      from "orders" where status not in ('Created','Processing')
      group by 1, 2, 3, 4, 5
      order by 1, 2, 3, 4, 5;`);
  }
}
