/**
 * SQL of the order statistics rollup (`order_stats_rollup`, migration 000800), shared by its writers
 * (OrderStatusService's transition statement, the settlement's overpayment update) and its reader
 * (OrderStatsService). Orders in an open status (Created, Processing) are not in the rollup: the
 * reader counts them live. Every other order is counted once, in the bucket of its creation time,
 * status and paying token.
 */

/** Statuses counted live, never in the rollup. */
export const LIVE_STATUSES_SQL = `('Created','Processing')`;
/** The UTC hour of a timestamptz expression: the rollup's bucket (migration 20261127000300). */
export const bucketOf = (expr: string): string => `date_bin('1 hour', ${expr}, timestamptz '2000-01-01 00:00:00+00')`;
export const BUCKET_INTERVAL = `interval '1 hour'`;
export const NIL_UUID = '00000000-0000-0000-0000-000000000000';

/**
 * A CTE `name` applying rollup deltas. `rows` is a SELECT of (sign, merchant_id, environment,
 * created_at, status, amount, fee_idr, net_idr, paid_network, paid_token_id, paid_decimals,
 * paid_amount) rows: sign -1 removes an order's old contribution, +1 adds its new one; rows in live
 * statuses are skipped. Rows are applied in key order, so two transactions lock rollup rows in the
 * same order (no deadlock).
 */
export function rollupDelta(name: string, rows: string): string {
  return `${name} as (
         insert into order_stats_rollup as r (merchant_id, environment, bucket, status, paid_token_id, paid_network, paid_decimals, orders, amount, fee, net, paid_units)
         select d.merchant_id, d.environment, ${bucketOf('d.created_at')}, d.status, coalesce(d.paid_token_id, '${NIL_UUID}'::uuid), max(d.paid_network), max(d.paid_decimals),
                sum(d.sign), sum(d.sign * d.amount), sum(d.sign * coalesce(d.fee_idr, 0)), sum(d.sign * coalesce(d.net_idr, 0)), sum(d.sign * coalesce(d.paid_amount, 0))
         from (${rows}) d
         where d.status not in ${LIVE_STATUSES_SQL}
         group by 1, 2, 3, 4, 5
         order by 1, 2, 3, 4, 5
         on conflict (merchant_id, environment, bucket, status, paid_token_id) do update set
           orders = r.orders + excluded.orders, amount = r.amount + excluded.amount, fee = r.fee + excluded.fee, net = r.net + excluded.net,
           paid_units = r.paid_units + excluded.paid_units,
           paid_network = coalesce(r.paid_network, excluded.paid_network), paid_decimals = coalesce(r.paid_decimals, excluded.paid_decimals)
         returning 1
       )`;
}

/** The rollup row columns of an order relation `alias`, with a sign. */
export const rollupColumns = (sign: number, alias: string): string =>
  `select ${sign}::int as sign, ${alias}.merchant_id, ${alias}.environment, ${alias}.created_at, ${alias}.status, ${alias}.amount, ${alias}.fee_idr, ${alias}.net_idr, ${alias}.paid_network, ${alias}.paid_token_id, ${alias}.paid_decimals, ${alias}.paid_amount from ${alias}`;
