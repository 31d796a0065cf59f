/**
 * SQL of the order statistics rollups, shared by their writers (OrderStatusService's transition
 * statement, the settlement's revenue and overpayment updates), their compaction and their reader
 * (OrderStatsService): `order_stats_rollup` per UTC hour (migrations 20261123000800, 20261127000300)
 * and `order_stats_daily` per local day of each zone in DAILY_ROLLUP_ZONES (migration 20261127000800),
 * both fed only through the append-only `order_stats_delta` (migration 20261128100100). Orders in an
 * open status (Created, Processing) are in none of them: the reader counts them live. Every other
 * order is counted once per rollup (rollup rows + its deltas not yet folded), in the bucket of its
 * creation time, status and paying token.
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
 * A CTE `name` appending rollup deltas to `order_stats_delta` (migration 20261128100100). `rows` is a
 * SELECT of (sign, merchant_id, environment, created_at, status, amount, received_idr, fee_idr,
 * net_idr, paid_network, paid_token_id, paid_decimals, paid_amount) rows: sign -1 removes an order's
 * old contribution, +1 adds its new one; rows in live statuses are skipped, and a key whose deltas
 * cancel out writes nothing. Insert only: a writer never locks a rollup row, so two transitions of one
 * merchant (or two transactions of many transitions, in any order) never wait on each other here
 * (docs/decisions/0009-rollup-deltas.md). `compactOrderStats` folds the deltas into the hourly and
 * daily rollups; OrderStatsService adds the ones not folded yet on read.
 */
export function rollupDelta(name: string, rows: string): string {
  return `${name} as (
         insert into order_stats_delta (merchant_id, environment, created_at, status, paid_token_id, paid_network, paid_decimals, orders, amount, received, fee, net, paid_units)
         select d.merchant_id, d.environment, d.created_at, d.status, coalesce(d.paid_token_id, '${NIL_UUID}'::uuid), max(d.paid_network), max(d.paid_decimals),
                sum(d.sign), sum(d.sign * d.amount), sum(d.sign * coalesce(d.received_idr, 0)), sum(d.sign * coalesce(d.fee_idr, 0)), sum(d.sign * coalesce(d.net_idr, 0)),
                sum(d.sign * coalesce(d.paid_amount, 0))
         from (${rows}) d
         where d.status not in ${LIVE_STATUSES_SQL}
         group by 1, 2, 3, 4, 5
         having sum(d.sign) <> 0 or sum(d.sign * d.amount) <> 0 or sum(d.sign * coalesce(d.received_idr, 0)) <> 0 or sum(d.sign * coalesce(d.fee_idr, 0)) <> 0
             or sum(d.sign * coalesce(d.net_idr, 0)) <> 0 or sum(d.sign * coalesce(d.paid_amount, 0)) <> 0
         returning 1
       )`;
}

/** Sums of a relation `g` of delta rows (or orders, with `count`): the rollups' value columns. */
const ROLLUP_SUMS = (g: string, orders: string) => `${orders}, sum(${g}.amount), sum(${g}.received), sum(${g}.fee), sum(${g}.net), sum(${g}.paid_units)`;
const ROLLUP_ADD = `orders = r.orders + excluded.orders, amount = r.amount + excluded.amount, received = r.received + excluded.received,
           fee = r.fee + excluded.fee, net = r.net + excluded.net, paid_units = r.paid_units + excluded.paid_units,
           paid_network = coalesce(r.paid_network, excluded.paid_network), paid_decimals = coalesce(r.paid_decimals, excluded.paid_decimals)`;

/** Advisory lock key of the compaction (one compactor at a time; writers never take it). */
export const COMPACTION_LOCK_KEY = 2026112810;

/**
 * One compaction statement: deletes up to `limit` of the oldest deltas and adds them to the hourly and
 * daily rollups, in one statement (a reader's snapshot sees them either as deltas or in the rollups,
 * never both, never neither). Rows are upserted in key order, and only one compactor runs at a time
 * (COMPACTION_LOCK_KEY), so compaction never deadlocks either. Returns the number of deltas folded.
 */
export function rollupCompaction(limit: number): string {
  return `with gone as (
         delete from order_stats_delta where id in (select id from order_stats_delta order by id limit ${Math.max(1, Math.floor(limit))})
         returning merchant_id, environment, created_at, status, paid_token_id, paid_network, paid_decimals, orders, amount, received, fee, net, paid_units
       ), hourly as (
         insert into order_stats_rollup as r (merchant_id, environment, bucket, status, paid_token_id, paid_network, paid_decimals, orders, amount, received, fee, net, paid_units)
         select g.merchant_id, g.environment, ${bucketOf('g.created_at')}, g.status, g.paid_token_id, max(g.paid_network), max(g.paid_decimals), ${ROLLUP_SUMS('g', 'sum(g.orders)')}
         from gone g group by 1, 2, 3, 4, 5 order by 1, 2, 3, 4, 5
         on conflict (merchant_id, environment, bucket, status, paid_token_id) do update set ${ROLLUP_ADD}
         returning 1
       ), daily as (
         insert into order_stats_daily as r (merchant_id, environment, tz, day, status, paid_token_id, paid_network, paid_decimals, orders, amount, received, fee, net, paid_units)
         select g.merchant_id, g.environment, z.tz, (g.created_at at time zone z.tz)::date, g.status, g.paid_token_id, max(g.paid_network), max(g.paid_decimals), ${ROLLUP_SUMS('g', 'sum(g.orders)')}
         from gone g cross join ${ZONES_SQL} group by 1, 2, 3, 4, 5, 6 order by 1, 2, 3, 4, 5, 6
         on conflict (merchant_id, environment, tz, day, status, paid_token_id) do update set ${ROLLUP_ADD}
         returning 1
       )
       select (select count(*) from gone)::int as folded, (select count(*) from hourly)::int as hourly, (select count(*) from daily)::int as daily`;
}

/** The rollup row columns of an order relation `alias`, with a sign. */
export const rollupColumns = (sign: number, alias: string): string =>
  `select ${sign}::int as sign, ${alias}.merchant_id, ${alias}.environment, ${alias}.created_at, ${alias}.status, ${alias}.amount, ${alias}.received_idr, ${alias}.fee_idr, ${alias}.net_idr, ${alias}.paid_network, ${alias}.paid_token_id, ${alias}.paid_decimals, ${alias}.paid_amount from ${alias}`;

/**
 * Rebuilds both rollups of the orders matching `where` (a condition on `orders`) from scratch, as the
 * writers and the compaction would have left them: for benchmark fixtures. The caller deletes the
 * rows it replaces first (and the deltas of those orders).
 */
export function rollupRebuild(where = 'true'): string[] {
  return [
    `insert into order_stats_rollup
     select merchant_id, environment, ${bucketOf('created_at')}, status, coalesce(paid_token_id, '${NIL_UUID}'::uuid), max(paid_network), max(paid_decimals),
            count(*), sum(amount), coalesce(sum(fee_idr), 0), coalesce(sum(net_idr), 0), coalesce(sum(paid_amount), 0), coalesce(sum(received_idr), 0)
     from orders where status not in ${LIVE_STATUSES_SQL} and (${where}) group by 1, 2, 3, 4, 5 order by 1, 2, 3, 4, 5`,
    `insert into order_stats_daily
     select merchant_id, environment, z.tz, (created_at at time zone z.tz)::date, status, coalesce(paid_token_id, '${NIL_UUID}'::uuid), max(paid_network), max(paid_decimals),
            count(*), sum(amount), coalesce(sum(fee_idr), 0), coalesce(sum(net_idr), 0), coalesce(sum(paid_amount), 0), coalesce(sum(received_idr), 0)
     from orders cross join ${ZONES_SQL} where status not in ${LIVE_STATUSES_SQL} and (${where}) group by 1, 2, 3, 4, 5, 6 order by 1, 2, 3, 4, 5, 6`,
  ];
}
