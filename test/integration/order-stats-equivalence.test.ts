/**
 * orderStats read from the hourly rollup equals the raw computation over the orders table, exactly,
 * on random data: orders created at random instants (some on hour boundaries) over three weeks, moved
 * through random transitions by the one status writer (which keeps the rollup in its statement),
 * and random ranges (not aligned to hours) grouped by DAY, HOUR, STATUS, NETWORK, TOKEN in whole-hour
 * zones (Asia/Jakarta, UTC, America/New_York across its DST change) and :30/:45 zones (Asia/Kolkata,
 * Asia/Kathmandu), whose local days straddle UTC hours. Whole Asia/Jakarta days come from the daily
 * rollup (by DAY in Jakarta, and for every grouping without a time key, whatever the zone): ranges on
 * and one millisecond around Jakarta midnights, and changes to old orders after they were rolled up
 * (late payments, reversals, paid units changed as the settlement's overpayment update does) are
 * compared too.
 */
import { internalContext, type RequestContext } from '../../src/common/context';
import { connectOrm, type Orm } from '../../src/db/orm';
import { OrderStatsService, type OrderStatsBucket } from '../../src/modules/orders/order-stats.service';
import { OrderStatusService } from '../../src/modules/orders/order-status.service';
import { rollupColumns, rollupDelta } from '../../src/modules/orders/order-stats.sql';
import { ORDER_TRANSITIONS, type OrderStatus } from '../../src/modules/orders/order.transitions';
import { createTestDatabase, type TestDatabase } from '../support/db';

const MERCHANT = '00000000-0000-4000-8000-00000000e901';
const OTHER = '00000000-0000-4000-8000-00000000e902';
const ORDERS = 600;
const START = Date.parse('2026-10-25T00:00:00Z'); // New York leaves DST on 2026-11-01

let db: TestDatabase;
let orm: Orm;
const stats = new OrderStatsService();

/** mulberry32: reproducible randomness (the seed is in the test name). */
function rng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const SEED = 20261127;

beforeAll(async () => {
  db = await createTestDatabase();
  orm = await connectOrm(db.url, 4);
  const em = orm.em.fork();
  for (const m of [MERCHANT, OTHER]) await em.execute(`insert into merchants (id, name) values (?, 'Stats equivalence')`, [m]);
  const tokens = await em.execute<{ id: string; network: string; decimals: number }[]>(
    `select id, network, decimals from tokens where environment = 'sandbox' order by id`,
  );
  const rand = rng(SEED);
  const rows: unknown[][] = [];
  for (let i = 0; i < ORDERS; i++) {
    // A third exactly on an hour (or half hour) boundary: the buckets' edges.
    const at = START + Math.floor(rand() * 21 * 24) * 3_600_000 + (i % 3 === 0 ? (i % 2) * 1_800_000 : Math.floor(rand() * 3_600_000));
    const token = rand() < 0.7 ? tokens[Math.floor(rand() * tokens.length)]! : null;
    rows.push([
      i % 17 === 0 ? OTHER : MERCHANT,
      `EQ-${i}`,
      String(1000 + Math.floor(rand() * 1_000_000)),
      new Date(at).toISOString(),
      token?.network ?? null,
      token?.id ?? null,
      token?.decimals ?? null,
      token ? String(Math.floor(rand() * 1e9)) : null,
      token ? String(Math.floor(rand() * 5000)) : null,
      token ? String(Math.floor(rand() * 900_000)) : null,
      token ? String(Math.floor(rand() * 1_000_000)) : null,
    ]);
  }
  for (const r of rows)
    await em.execute(
      `insert into orders (id, merchant_id, environment, order_no, amount, status, expires_at, created_at, paid_network, paid_token_id, paid_decimals, paid_amount, fee_idr, net_idr, received_idr)
       values (gen_random_uuid(), ?, 'sandbox', ?, ?, 'Created', now() + interval '1 day', ?, ?, ?, ?, ?, ?, ?, ?)`,
      r,
    );
  // Random walks through the transition table, by the one writer (it moves the rollup rows).
  const writer = new OrderStatusService();
  const ids = await em.execute<{ id: string }[]>(`select id from orders order by order_no`);
  for (const { id } of ids) {
    let status: OrderStatus = 'Created';
    const steps = Math.floor(rand() * 4);
    for (let s = 0; s < steps; s++) {
      const next: readonly OrderStatus[] = ORDER_TRANSITIONS[status];
      const to: OrderStatus = next[Math.floor(rand() * next.length)]!;
      await orm.em.fork().transactional((tx) => writer.transition(tx, id, to, { kind: 'test' }));
      status = to;
    }
  }
}, 300_000);

afterAll(async () => {
  await orm?.close();
  await db?.drop();
});

type Group = 'DAY' | 'HOUR' | 'STATUS' | 'NETWORK' | 'TOKEN';

/** The same figures straight from the orders table (no rollup), keyed like the service's buckets. */
async function raw(tz: string, from: Date, to: Date, groupBy: Group[]): Promise<Map<string, string>> {
  const keys: Record<Group, string> = {
    DAY: `to_char(created_at at time zone ?, 'YYYY-MM-DD')`,
    HOUR: `to_char(date_trunc('hour', created_at at time zone ?) at time zone ? at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')`,
    STATUS: 'status',
    NETWORK: 'paid_network',
    TOKEN: 'paid_token_id::text',
  };
  const tzParams = groupBy.flatMap((g) => (g === 'DAY' ? [tz] : g === 'HOUR' ? [tz, tz] : []));
  const select = groupBy.map((g, i) => `${keys[g]} as k${i}`);
  const rows = await orm.em.fork().execute<Record<string, string | null>[]>(
    `select ${[...select, ''].join(', ')} count(*)::text as n, sum(amount)::text as amount,
            (count(*) filter (where status = 'Success'))::text as paid_n, coalesce(sum(amount) filter (where status = 'Success'), 0)::text as paid_amount,
            coalesce(sum(received_idr), 0)::text as received, coalesce(sum(fee_idr), 0)::text as fee, coalesce(sum(net_idr), 0)::text as net,
            coalesce(sum(paid_amount), 0)::text as units
     from orders where merchant_id = ? and environment = 'sandbox' and created_at >= ? and created_at < ?
     ${groupBy.length ? `group by ${groupBy.map((_, i) => i + 1).join(', ')}` : ''}`,
    [...tzParams, MERCHANT, from, to],
  );
  return new Map(
    rows
      .filter((r) => r.n !== '0')
      .map((r) => [
        groupBy.map((_, i) => r[`k${i}`] ?? '-').join('|'),
        `${r.n} ${r.amount} ${r.paid_n} ${r.paid_amount} ${r.received} ${r.fee} ${r.net} ${r.units}`,
      ]),
  );
}

/** The service's buckets in the raw form (token units summed back to base units per bucket). */
async function fromService(tz: string, from: Date, to: Date, groupBy: Group[]): Promise<Map<string, string>> {
  const ctx: RequestContext = {
    ...internalContext(orm.em.fork()),
    caller: { kind: 'apiKey', merchantId: MERCHANT, environment: 'sandbox', apiKeyId: 'test' },
    environment: 'sandbox',
  };
  const buckets = await stats.stats(ctx, { from, to, groupBy, timeZone: tz });
  const tokenIds = new Map(
    (
      await orm.em.fork().execute<{ id: string; address: string; network: string; decimals: number }[]>(`select id, address, network, decimals from tokens`)
    ).map((t) => [`${t.network}:${t.address}`, t]),
  );
  const key = (b: OrderStatsBucket) =>
    groupBy
      .map((g) => {
        if (g === 'DAY') return b.day;
        if (g === 'HOUR') return b.hour!.toISOString().replace('.000Z', 'Z');
        if (g === 'STATUS') return b.status;
        if (g === 'NETWORK') return b.network ?? '-';
        return b.tokenAddress ? tokenIds.get(`${b.network}:${b.tokenAddress}`)!.id : '-';
      })
      .join('|');
  const units = (b: OrderStatsBucket) =>
    b.tokenAmounts.reduce((sum, t) => {
      const [whole, frac = ''] = t.amount.split('.');
      const d = tokenIds.get(`${t.network}:${t.tokenAddress}`)!.decimals;
      return sum + BigInt(whole! + frac.padEnd(d, '0'));
    }, 0n);
  return new Map(buckets.map((b) => [key(b), `${b.count} ${b.amount} ${b.paidCount} ${b.paidAmount} ${b.receivedAmount} ${b.fee} ${b.netAmount} ${units(b)}`]));
}

const ZONES = ['Asia/Jakarta', 'UTC', 'America/New_York', 'Asia/Kolkata', 'Asia/Kathmandu'];
const GROUPINGS: Group[][] = [['DAY'], ['HOUR'], ['DAY', 'STATUS'], ['STATUS', 'TOKEN'], ['NETWORK'], [], ['HOUR', 'NETWORK', 'TOKEN']];

describe(`orderStats equals the raw computation (seed ${SEED})`, () => {
  it('the writer appended deltas only (no rollup row written): they add up to the closed orders', async () => {
    const [r] = await orm.em.fork().execute<{ rolled: string; daily: string; deltas: string; direct: string }[]>(
      `select (select count(*) from order_stats_rollup)::text as rolled, (select count(*) from order_stats_daily)::text as daily,
              (select coalesce(sum(orders), 0) from order_stats_delta)::text as deltas,
              (select count(*) from orders where status not in ('Created','Processing'))::text as direct`,
    );
    expect([r!.rolled, r!.daily]).toEqual(['0', '0']);
    expect(r!.deltas).toBe(r!.direct);
    expect(Number(r!.direct)).toBeGreaterThan(ORDERS / 3);
  });

  it.each(ZONES)(
    '%s: random ranges, every grouping',
    async (tz) => {
      const rand = rng(SEED + tz.length);
      for (let i = 0; i < 6; i++) {
        // Random ends (to the millisecond), inside and around the data; one range is the whole data set.
        const from = i === 0 ? new Date(START - 86_400_000) : new Date(START + Math.floor(rand() * 10 * 86_400_000));
        const to = i === 0 ? new Date(START + 23 * 86_400_000) : new Date(from.getTime() + Math.floor(rand() * 11 * 86_400_000) + 1);
        for (const groupBy of GROUPINGS) {
          const expected = await raw(tz, from, to, groupBy);
          const actual = await fromService(tz, from, to, groupBy);
          expect([tz, groupBy.join(','), from.toISOString(), to.toISOString(), Object.fromEntries(actual)]).toEqual([
            tz,
            groupBy.join(','),
            from.toISOString(),
            to.toISOString(),
            Object.fromEntries(expected),
          ]);
        }
      }
    },
    120_000,
  );

  /** Every grouping, in the given zones, over the given ranges: the service equals the raw count. */
  async function compare(zones: string[], ranges: [Date, Date][]): Promise<void> {
    for (const tz of zones)
      for (const [from, to] of ranges)
        for (const groupBy of GROUPINGS) {
          const expected = await raw(tz, from, to, groupBy);
          const actual = await fromService(tz, from, to, groupBy);
          expect([tz, groupBy.join(','), from.toISOString(), to.toISOString(), Object.fromEntries(actual)]).toEqual([
            tz,
            groupBy.join(','),
            from.toISOString(),
            to.toISOString(),
            Object.fromEntries(expected),
          ]);
        }
  }

  /** Ranges starting and ending on Jakarta midnights (17:00 UTC), one millisecond before and after, and within one day. */
  function midnightRanges(): [Date, Date][] {
    const midnight = (day: number) => START - 7 * 3_600_000 + day * 86_400_000;
    const ranges: [Date, Date][] = [];
    for (const [a, b] of [
      [2, 9],
      [0, 21],
      [5, 6],
      [3, 4],
    ] as const)
      for (const da of [-1, 0, 1]) for (const db of [-1, 0, 1]) ranges.push([new Date(midnight(a) + da), new Date(midnight(b) + db)]);
    ranges.push([new Date(midnight(4) + 3_600_000), new Date(midnight(4) + 5 * 3_600_000 + 17)]);
    return ranges;
  }

  it("ranges on Jakarta midnights (the daily rollup's edges), in Jakarta and other zones", async () => {
    await compare(['Asia/Jakarta', 'UTC', 'Asia/Kolkata'], midnightRanges());
  }, 400_000);

  it('after late changes to rolled-up orders: late payments, reversals, paid units changed', async () => {
    const em = orm.em.fork();
    const writer = new OrderStatusService();
    const old = await em.execute<{ id: string; status: OrderStatus }[]>(
      `select id, status from orders where merchant_id = ? and status in ('Expired', 'Success') order by created_at limit 30`,
      [MERCHANT],
    );
    expect(old.length).toBe(30);
    for (const o of old) {
      const to: OrderStatus = o.status === 'Expired' ? 'Success' : 'Underpaid'; // a late payment, a reorged payment
      await orm.em.fork().transactional((tx) => writer.transition(tx, o.id, to, { kind: 'test' }));
    }
    // The settlement's overpayment update: the paying deposit received more, the order's units follow (same rollup CTEs).
    const paid = await em.execute<{ id: string }[]>(
      `select id from orders where merchant_id = ? and status = 'Success' and paid_token_id is not null order by created_at desc limit 10`,
      [MERCHANT],
    );
    expect(paid.length).toBe(10);
    for (const o of paid) {
      await orm.em.fork().execute(
        `with prev as (select * from orders where id = ?),
         o as (update orders set overpaid = true, paid_amount = coalesce(paid_amount, 0) + 123456789 where id = ? returning *),
         ${rollupDelta('r', `${rollupColumns(-1, 'prev')} union all ${rollupColumns(1, 'o')}`)}
         select 1 from o`,
        [o.id, o.id],
      );
    }
    await compare(['Asia/Jakarta', 'UTC'], [[new Date(START - 86_400_000), new Date(START + 23 * 86_400_000)], ...midnightRanges().slice(0, 9)]);
  }, 120_000);

  it('compaction folds every delta into both rollups, which then add up to the closed orders alone; the answers do not change', async () => {
    const em = orm.em.fork();
    // Two compactors at once: one takes the lock, the other returns at once (no double fold).
    const [a, b] = await Promise.all([stats.compact(em, 100, 1000), stats.compact(em, 100, 1000)]);
    const [deltas] = await em.execute<{ n: string }[]>(`select count(*)::text as n from order_stats_delta`);
    if (deltas!.n !== '0') await stats.compact(em, 100, 1000); // the loser may have run before the winner started
    expect(a + b).toBeGreaterThan(0);
    const [r] = await em.execute<{ rolled: string; deltas: string; direct: string }[]>(
      `select (select coalesce(sum(orders), 0) from order_stats_rollup)::text as rolled, (select count(*) from order_stats_delta)::text as deltas,
              (select count(*) from orders where status not in ('Created','Processing'))::text as direct`,
    );
    expect(r!.deltas).toBe('0');
    expect(r!.rolled).toBe(r!.direct);
    const rows = await em.execute<{ tz: string; rolled: string; days: string }[]>(
      `select tz, sum(orders)::text as rolled, count(distinct day)::text as days from order_stats_daily group by tz`,
    );
    expect(rows.map((x) => [x.tz, x.rolled])).toEqual([['Asia/Jakarta', r!.direct]]);
    expect(Number(rows[0]!.days)).toBeGreaterThanOrEqual(21);
    await compare(['Asia/Jakarta', 'Asia/Kolkata'], [[new Date(START - 86_400_000), new Date(START + 23 * 86_400_000)], ...midnightRanges().slice(0, 6)]);
  }, 120_000);
});
