import { requireEnvironment, requireMerchantWide } from '../../common/access.js';
import type { RequestContext } from '../../common/context.js';
import { DomainError } from '../../common/errors.js';
import { formatDecimal } from '../../common/money.js';
import { parseInput } from '../../common/validation.js';
import type { Network } from '../../common/environment.js';
import type { OrderStatus } from './order.transitions.js';
import type { EntityManager } from '@mikro-orm/postgresql';
import { BUCKET_INTERVAL, bucketOf, COMPACTION_LOCK_KEY, DAILY_ROLLUP_ZONES, LIVE_STATUSES_SQL, NIL_UUID, rollupCompaction } from './order-stats.sql.js';
import { orderStatsCommand, STATS_MAX_DAYS, STATS_MAX_HOUR_DAYS, type OrderStatsCommand, type StatsGroup } from './order.commands.js';

/** One bucket of `orderStats`: the group's keys (null when not grouped by them) and its sums. */
export interface OrderStatsBucket {
  /** Local calendar day in the asked time zone (`YYYY-MM-DD`), when grouped by DAY. */
  day: string | null;
  /** Start of the local hour, when grouped by HOUR. */
  hour: Date | null;
  status: OrderStatus | null;
  /** Paying network (null for unpaid orders). */
  network: Network | null;
  tokenAddress: string | null;
  tokenSymbol: string | null;
  count: number;
  /** IDR, every order of the bucket. */
  amount: string;
  paidCount: number;
  /** IDR of the paid (Success) orders. */
  paidAmount: string;
  /** IDR actually received (confirmed payments at the locked quotes), any status. */
  receivedAmount: string;
  /** Platform fee on the money received. */
  fee: string;
  netAmount: string;
  /** Token units received per paying token (decimal strings). */
  tokenAmounts: { network: Network; tokenAddress: string; tokenSymbol: string; amount: string }[];
}

/** Local day and local hour (in the asked zone, `w.tz`) of a timestamptz expression. */
const TIME_KEY = {
  DAY: (x: string) => `((${x}) at time zone w.tz)::date`,
  HOUR: (x: string) => `date_trunc('hour', (${x}) at time zone w.tz)`,
};

/** Per group: the key of a source row `o` (the time key is precomputed as `o.k`) and its text form in the answer. */
const GROUP_SQL: Record<StatsGroup, { expr: string; alias: string; out?: string }> = {
  DAY: { expr: 'o.k', alias: 'day', out: `to_char(b.day, 'YYYY-MM-DD')` },
  HOUR: { expr: 'o.k', alias: 'hour', out: `to_char(b.hour at time zone w.tz at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')` },
  STATUS: { expr: 'o.status', alias: 'status' },
  NETWORK: { expr: 'o.paid_network', alias: 'network' },
  TOKEN: { expr: 'o.paid_token_id', alias: 'token_id' },
};

/**
 * The orders of a range as (k, status, n, sums…) rows, `k` being the local day or hour (when grouped
 * by time), without reading every order:
 * - `daily` (a zone of DAILY_ROLLUP_ZONES, or null): the local days of that zone lying wholly inside
 *   the range are read from `order_stats_daily`, one index range (a year = ≈ 365 × statuses × tokens
 *   rows); used when grouping by DAY in that zone, or by no time at all (then any zone's days do);
 * - the rest of the range (all of it without `daily`, else its partial days at both ends) is cut into
 *   UTC hours (the hourly rollup's buckets): an hour inside the range and inside one local day/hour of
 *   the asked zone (every hour, in whole-hour zones) is read from `order_stats_rollup` (consecutive
 *   whole hours of one key as one index range); the others (partial hours at the ends, and in :30/:45
 *   zones the hours that straddle a local boundary) from the orders table through its (merchant,
 *   environment, created_at) index;
 * - the deltas not yet folded into the rollups (order_stats_delta), for the same whole days and hours
 *   the rollups are read for (the partial hours read the orders themselves, which already include them);
 * - open orders (in no rollup) live, through their partial index.
 */
function statsSource(time: ((x: string) => string) | null, daily: string | null): string {
  const key = (x: string) => (time ? time(x) : 'null::date');
  const oneGroup = time ? `and ${time('hr.h')} = ${time(`hr.h + ${BUCKET_INTERVAL} - interval '1 microsecond'`)}` : '';
  const days = daily
    ? `
  d as (
    select ds, de, ds::timestamp at time zone '${daily}' as s, de::timestamp at time zone '${daily}' as e
    from (select (w.f at time zone '${daily}')::date + case when ((w.f at time zone '${daily}')::date)::timestamp at time zone '${daily}' = w.f then 0 else 1 end as ds,
                 (w.t at time zone '${daily}')::date as de from w) x
    where ds < de
  ),
  spans as (
    select w.f as lo, coalesce(d.s, w.t) as hi from w left join d on true
    union all
    select d.e, w.t from w, d
  ),`
    : `
  spans as (select w.f as lo, w.t as hi from w),`;
  return `${days}
  hours as (
    select hr.h, sp.lo, sp.hi, ${key('hr.h')} as k, (hr.h >= sp.lo and hr.h + ${BUCKET_INTERVAL} <= sp.hi ${oneGroup}) as whole
    from w, spans sp, generate_series(${bucketOf('sp.lo')}, sp.hi - interval '1 microsecond', ${BUCKET_INTERVAL}) as hr(h)
    where sp.lo < sp.hi
  ),
  runs as (
    select k, min(h) as s, max(h) + ${BUCKET_INTERVAL} as e
    from (select k, h, h - row_number() over (partition by k order by h) * ${BUCKET_INTERVAL} as run from hours where whole) x
    group by k, run
  ),
  o as (${
    daily
      ? `
    select ${time ? 'r.day' : 'null::date'} as k, r.status, r.orders as n, r.amount, r.received as received_idr, r.fee as fee_idr, r.net as net_idr, r.paid_network,
           nullif(r.paid_token_id, '${NIL_UUID}'::uuid) as paid_token_id, r.paid_units as paid_amount
    from w, d, order_stats_daily r
    where r.merchant_id = w.m and r.environment = w.env and r.tz = '${daily}' and r.day >= d.ds and r.day < d.de and r.orders <> 0
    union all
    select ${key('x.created_at')}, x.status, x.orders, x.amount, x.received, x.fee, x.net, x.paid_network, nullif(x.paid_token_id, '${NIL_UUID}'::uuid), x.paid_units
    from w, d, order_stats_delta x
    where x.merchant_id = w.m and x.environment = w.env and x.created_at >= d.s and x.created_at < d.e
    union all`
      : ''
  }
    select x.k, r.status, r.orders as n, r.amount, r.received as received_idr, r.fee as fee_idr, r.net as net_idr, r.paid_network,
           nullif(r.paid_token_id, '${NIL_UUID}'::uuid) as paid_token_id, r.paid_units as paid_amount
    from w, runs x, order_stats_rollup r
    where r.merchant_id = w.m and r.environment = w.env and r.bucket >= x.s and r.bucket < x.e and r.orders <> 0
    union all
    select x.k, dl.status, dl.orders, dl.amount, dl.received, dl.fee, dl.net, dl.paid_network, nullif(dl.paid_token_id, '${NIL_UUID}'::uuid), dl.paid_units
    from w, runs x, order_stats_delta dl
    where dl.merchant_id = w.m and dl.environment = w.env and dl.created_at >= x.s and dl.created_at < x.e
    union all
    select ${key('o.created_at')}, o.status, 1, o.amount, o.received_idr, o.fee_idr, o.net_idr, o.paid_network, o.paid_token_id, o.paid_amount
    from w, hours hr, orders o
    where not hr.whole and o.merchant_id = w.m and o.environment = w.env
      and o.created_at >= greatest(hr.h, hr.lo) and o.created_at < least(hr.h + ${BUCKET_INTERVAL}, hr.hi) and o.status not in ${LIVE_STATUSES_SQL}
    union all
    select ${key('o.created_at')}, o.status, 1, o.amount, o.received_idr, o.fee_idr, o.net_idr, o.paid_network, o.paid_token_id, o.paid_amount
    from w, orders o
    where o.merchant_id = w.m and o.environment = w.env and o.created_at >= w.f and o.created_at < w.t and o.status in ${LIVE_STATUSES_SQL}
  )`;
}

interface StatsRow {
  day?: string;
  hour?: string;
  status?: OrderStatus;
  network?: Network | null;
  token_id?: string | null;
  n: string;
  amount: string;
  paid_n: string;
  paid_amount: string;
  received: string;
  fee: string;
  net: string;
  tokens: { network: Network; address: string; symbol: string; decimals: number; units: string }[] | null;
}

/**
 * Order aggregates for dashboards (GraphQL `orderStats`), computed by PostgreSQL without joining
 * deposits or payments: the paying network, token, units, fee and net are columns of the order
 * (copied by the status writer and the settlement), summed per UTC hour in `order_stats_rollup` and per
 * Asia/Jakarta day in `order_stats_daily` (fed by the writers' append-only deltas, folded in by
 * `compactOrderStats`; deltas not folded yet are added on read); open orders and the range's partial
 * hours are read live. Received, fee and net count only money actually received (order-revenue.sql.ts). Buckets are by creation
 * time in the asked IANA time zone (default Asia/Jakarta). Ranges are bounded: STATS_MAX_DAYS, or
 * STATS_MAX_HOUR_DAYS when grouped by HOUR.
 */
export class OrderStatsService {
  private zones: Promise<Set<string>> | null = null;

  async stats(ctx: RequestContext, cmd: OrderStatsCommand): Promise<OrderStatsBucket[]> {
    const c = parseInput(orderStatsCommand, cmd);
    const caller = requireMerchantWide(ctx, 'Order statistics', 'orders.read');
    const env = requireEnvironment(ctx);
    const days = (c.to.getTime() - c.from.getTime()) / 86_400_000;
    const maxDays = c.groupBy.includes('HOUR') ? STATS_MAX_HOUR_DAYS : STATS_MAX_DAYS;
    if (days > maxDays)
      throw new DomainError('BAD_USER_INPUT', `The range may span at most ${maxDays} days${c.groupBy.includes('HOUR') ? ' when grouped by HOUR' : ''}`);
    if (!(await this.timeZones(ctx)).has(c.timeZone))
      throw new DomainError('BAD_USER_INPUT', `Unknown time zone ${JSON.stringify(c.timeZone)}: use an IANA name such as Asia/Jakarta`);

    const kinds = [...new Set(c.groupBy)];
    const groups = kinds.map((g) => GROUP_SQL[g]);
    const time = kinds.includes('DAY') ? TIME_KEY.DAY : kinds.includes('HOUR') ? TIME_KEY.HOUR : null;
    // Whole days from the daily rollup: by DAY in a zone it keeps, or without a time key (any zone's days).
    const daily = time === TIME_KEY.DAY ? (DAILY_ROLLUP_ZONES.includes(c.timeZone) ? c.timeZone : null) : time ? null : (DAILY_ROLLUP_ZONES[0] ?? null);
    const keys = groups.map((g) => g.alias);
    const positions = groups.map((_, i) => i + 1);
    // Inner: per group and paying token (token sums need their decimals); outer: per group, the
    // token sums as a JSON list. Both levels in SQL; nothing is summed in JavaScript.
    // JIT off for this statement: its cost estimates (generate_series, ranges bound by other rows)
    // are far above its real size, and PostgreSQL's JIT compilation alone took 0.7–1.5 s of a
    // query that runs in milliseconds (EXPLAIN ANALYZE in docs/benchmarks/dashboards.md).
    const sql = `with w as not materialized (select ?::uuid as m, ?::text as env, ?::timestamptz as f, ?::timestamptz as t, ?::text as tz),
       ${statsSource(time, daily)},
       b as (
         select ${[...groups.map((g) => `${g.expr} as ${g.alias}`), 'o.paid_token_id as t_id', 'o.paid_network as t_net'].join(', ')},
                sum(o.n) as n, sum(o.amount) as amount,
                coalesce(sum(o.n) filter (where o.status = 'Success'), 0) as paid_n,
                coalesce(sum(o.amount) filter (where o.status = 'Success'), 0) as paid_amount,
                coalesce(sum(o.received_idr), 0) as received, coalesce(sum(o.fee_idr), 0) as fee, coalesce(sum(o.net_idr), 0) as net, sum(o.paid_amount) as units
         from o
         group by ${[...positions, groups.length + 1, groups.length + 2].join(', ')}
       )
       select ${[...groups.map((g) => `${g.out ?? `b.${g.alias}`} as ${g.alias}`), ''].join(', ')}
              sum(b.n)::text as n, sum(b.amount)::text as amount, sum(b.paid_n)::text as paid_n, sum(b.paid_amount)::text as paid_amount,
              sum(b.received)::text as received, sum(b.fee)::text as fee, sum(b.net)::text as net,
              json_agg(json_build_object('network', b.t_net, 'address', t.address, 'symbol', t.symbol, 'decimals', t.decimals, 'units', b.units::text)
                       order by b.t_net, t.symbol) filter (where b.t_id is not null) as tokens
       from w, b left join tokens t on t.id = b.t_id
       ${keys.length ? `group by ${keys.map((k) => `b.${k}`).join(', ')}, w.tz order by ${positions.join(', ')}` : ''}`;
    const rows = await ctx.em.transactional(async (tx) => {
      await tx.execute('set local jit = off');
      return tx.execute<StatsRow[]>(sql, [caller.merchantId, env, c.from, c.to, c.timeZone]);
    });
    const tokenInfo = new Map<string, { address: string; symbol: string }>();
    for (const r of rows) for (const t of r.tokens ?? []) if (r.token_id) tokenInfo.set(r.token_id, t);
    return rows
      .filter((r) => Number(r.n) > 0)
      .map((r) => ({
        day: r.day ?? null,
        hour: r.hour ? new Date(r.hour) : null,
        status: r.status ?? null,
        network: r.network ?? (r.token_id ? (r.tokens?.[0]?.network ?? null) : null),
        tokenAddress: r.token_id ? (tokenInfo.get(r.token_id)?.address ?? null) : null,
        tokenSymbol: r.token_id ? (tokenInfo.get(r.token_id)?.symbol ?? null) : null,
        count: Number(r.n),
        amount: r.amount,
        paidCount: Number(r.paid_n),
        paidAmount: r.paid_amount,
        receivedAmount: r.received,
        fee: r.fee,
        netAmount: r.net,
        tokenAmounts: (r.tokens ?? []).map((t) => ({
          network: t.network,
          tokenAddress: t.address,
          tokenSymbol: t.symbol,
          amount: formatDecimal(BigInt(t.units ?? '0'), t.decimals),
        })),
      }));
  }

  /**
   * Folds the writers' deltas into the hourly and daily rollups (the compact-order-stats job), `batch`
   * deltas per transaction, until none are left or `maxBatches` ran. One compactor at a time (an
   * advisory lock; another caller returns 0 at once); writers never wait for it. Idempotent: each
   * delta is deleted in the statement that adds it. Returns how many deltas were folded.
   */
  async compact(em: EntityManager, batch = 5000, maxBatches = 20): Promise<number> {
    let folded = 0;
    for (let i = 0; i < maxBatches; i++) {
      const n = await em.fork().transactional(async (tx) => {
        const [lock] = await tx.execute<{ ok: boolean }[]>('select pg_try_advisory_xact_lock(?) as ok', [COMPACTION_LOCK_KEY]);
        if (!lock?.ok) return -1;
        const [r] = await tx.execute<{ folded: number }[]>(rollupCompaction(batch));
        return r?.folded ?? 0;
      });
      if (n < 0) break;
      folded += n;
      if (n < batch) break;
    }
    return folded;
  }

  /** PostgreSQL's time zone names, read once per process (the list is static while it runs). */
  private timeZones(ctx: RequestContext): Promise<Set<string>> {
    this.zones ??= ctx.em
      .execute<{ name: string }[]>('select name from pg_timezone_names')
      .then((rows) => new Set(rows.map((r) => r.name)))
      .catch((e: unknown) => {
        this.zones = null;
        throw e;
      });
    return this.zones;
  }
}
