/**
 * SQL of the order statistics rollups, shared by their writers (OrderStatusService's transition
 * statement, the settlement's overpayment update) and their reader (OrderStatsService):
 * `order_stats_rollup` per UTC hour (migrations 20261123000800, 20261127000300) and
 * `order_stats_daily` per local day of each zone in DAILY_ROLLUP_ZONES (migration 20261127000800).
 * Orders in an open status (Created, Processing) are in neither: the reader counts them live. Every
 * other order is counted once per rollup, in the bucket of its creation time, status and paying token.
 */

/** Statuses counted live, never in the rollup. */
export const LIVE_STATUSES_SQL = `('Created','Processing')`;
/** The UTC hour of a timestamptz expression: the rollup's bucket (migration 20261127000300). */
export const bucketOf = (expr: string): string => `date_bin('1 hour', ${expr}, timestamptz '2000-01-01 00:00:00+00')`;
export const BUCKET_INTERVAL = `interval '1 hour'`;
export const NIL_UUID = '00000000-0000-0000-0000-000000000000';
/**
 * Zones whose local days have their own rollup rows (`order_stats_daily`): the default reporting zone.
 * A zone listed here must have no DST (every local midnight exists once); adding one needs a
 * migration that back-fills its rows.
 */
export const DAILY_ROLLUP_ZONES: readonly string[] = ['Asia/Jakarta'];
const ZONES_SQL = `(values ${DAILY_ROLLUP_ZONES.map((z) => `('${z}')`).join(', ')}) z(tz)`;

/**
 * CTEs `name` and `name_day` applying rollup deltas (the hourly and the daily rollup). `rows` is a SELECT of (sign, merchant_id, environment,
 * created_at, status, amount, fee_idr, net_idr, paid_network, paid_token_id, paid_decimals,
 * paid_amount) rows: sign -1 removes an order's old contribution, +1 adds its new one; rows in live
 * statuses are skipped. Rows are applied in key order, so two transactions lock rollup rows in the
 * same order (no deadlock).
 */
export function rollupDelta(name: string, rows: string): string {
  return `${name}_day as (
         insert into order_stats_daily as r (merchant_id, environment, tz, day, status, paid_token_id, paid_network, paid_decimals, orders, amount, fee, net, paid_units)
         select d.merchant_id, d.environment, z.tz, (d.created_at at time zone z.tz)::date, d.status, coalesce(d.paid_token_id, '${NIL_UUID}'::uuid), max(d.paid_network), max(d.paid_decimals),
                sum(d.sign), sum(d.sign * d.amount), sum(d.sign * coalesce(d.fee_idr, 0)), sum(d.sign * coalesce(d.net_idr, 0)), sum(d.sign * coalesce(d.paid_amount, 0))
         from (${rows}) d cross join ${ZONES_SQL}
         where d.status not in ${LIVE_STATUSES_SQL}
         group by 1, 2, 3, 4, 5, 6
         order by 1, 2, 3, 4, 5, 6
         on conflict (merchant_id, environment, tz, day, status, paid_token_id) do update set
           orders = r.orders + excluded.orders, amount = r.amount + excluded.amount, fee = r.fee + excluded.fee, net = r.net + excluded.net,
           paid_units = r.paid_units + excluded.paid_units,
           paid_network = coalesce(r.paid_network, excluded.paid_network), paid_decimals = coalesce(r.paid_decimals, excluded.paid_decimals)
         returning 1
       ), ${name} as (
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

/**
 * Rebuilds both rollups of the orders matching `where` (a condition on `orders`) from scratch, as the
 * writers would have left them: for migrations' back-fills and benchmark fixtures. The caller deletes
 * the rows it replaces first.
 */
export function rollupRebuild(where = 'true'): string[] {
  return [
    `insert into order_stats_rollup
     select merchant_id, environment, ${bucketOf('created_at')}, status, coalesce(paid_token_id, '${NIL_UUID}'::uuid), max(paid_network), max(paid_decimals),
            count(*), sum(amount), coalesce(sum(fee_idr), 0), coalesce(sum(net_idr), 0), coalesce(sum(paid_amount), 0)
     from orders where status not in ${LIVE_STATUSES_SQL} and (${where}) group by 1, 2, 3, 4, 5 order by 1, 2, 3, 4, 5`,
    `insert into order_stats_daily
     select merchant_id, environment, z.tz, (created_at at time zone z.tz)::date, status, coalesce(paid_token_id, '${NIL_UUID}'::uuid), max(paid_network), max(paid_decimals),
            count(*), sum(amount), coalesce(sum(fee_idr), 0), coalesce(sum(net_idr), 0), coalesce(sum(paid_amount), 0)
     from orders cross join ${ZONES_SQL} where status not in ${LIVE_STATUSES_SQL} and (${where}) group by 1, 2, 3, 4, 5, 6 order by 1, 2, 3, 4, 5, 6`,
  ];
}
