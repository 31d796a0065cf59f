import { internalContext, type RequestContext } from '../src/common/context.js';
import { OrderStatsService } from '../src/modules/orders/order-stats.service.js';
import { rollupRebuild } from '../src/modules/orders/order-stats.sql.js';
import { benchDatabase, benchOrm, percentile } from './support.js';

/**
 * `npm run bench:stats`: GraphQL `orderStats` by DAY (Asia/Jakarta) over BENCH_ORDERS (default
 * 1,000,000) orders of one merchant spread over the last 365 days, 60 % of them paid (with their
 * paying network, token, units, fee and net, and the order_stats_rollup / order_stats_daily rows, as
 * the status writer leaves them); the rest Expired, or open (Created, read live) when created in the last hour. The query is the
 * service's own SQL (OrderStatsService), timed BENCH_RUNS times after one warm-up.
 * Last line: `{"orders":…,"p50_ms":…,"p99_ms":…}`.
 */
const ORDERS = Number(process.env.BENCH_ORDERS ?? 1_000_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 30);
const MERCHANT = '00000000-0000-4000-8000-0000000000aa';

async function main() {
  const began = Date.now();
  const db = await benchDatabase('cpg_bench_stats');
  const orm = await benchOrm(db.url, 4);
  try {
    const em = orm.em.fork();
    await em.execute(`insert into merchants (id, name) values (?, 'Bench stats')`, [MERCHANT]);
    const t0 = performance.now();
    // One bulk statement: 1M orders, created over a year; every 5th…: 60 % paid on one of the sandbox tokens.
    await em.execute(
      `with tk as (select id, network, decimals, row_number() over (order by id) - 1 as k, count(*) over () as n from tokens where environment = 'sandbox')
       insert into orders (id, merchant_id, environment, order_no, amount, status, expires_at, created_at, paid_at,
                           paid_network, paid_token_id, paid_decimals, paid_amount, fee_idr, net_idr)
       select gen_random_uuid(), ?, 'sandbox', 'B' || g, 100000 + (g % 900) * 1000,
              case when g % 5 < 3 then 'Success' when c > now() - interval '1 hour' then 'Created' else 'Expired' end,
              c + interval '1 hour', c, case when g % 5 < 3 then c + interval '3 minutes' end,
              case when g % 5 < 3 then tk.network end, case when g % 5 < 3 then tk.id end, case when g % 5 < 3 then tk.decimals end,
              case when g % 5 < 3 then (6 + g % 50) * power(10::numeric, tk.decimals) end,
              case when g % 5 < 3 then 1000 + g % 900 end, case when g % 5 < 3 then 99000 + (g % 900) * 1000 end
       from generate_series(1, ?) g
       cross join lateral (select now() - (g::float / ? * interval '365 days') as c) t
       join tk on tk.k = g % tk.n`,
      [MERCHANT, ORDERS, ORDERS],
    );
    // The rollups (hourly, and daily for Asia/Jakarta) as the status writer leaves them.
    for (const sql of rollupRebuild()) await em.execute(sql);
    await em.execute('vacuum analyze orders');
    await em.execute('vacuum analyze order_stats_rollup');
    await em.execute('vacuum analyze order_stats_daily');
    const loadS = (performance.now() - t0) / 1000;
    console.log(`fixture: ${ORDERS} orders in ${loadS.toFixed(1)} s`);

    const stats = new OrderStatsService();
    const ctx: RequestContext = {
      ...internalContext(orm.em.fork()),
      caller: { kind: 'apiKey', merchantId: MERCHANT, environment: 'sandbox', apiKeyId: 'bench' },
      environment: 'sandbox',
    };
    const to = new Date(Date.now() + 60_000);
    const from = new Date(to.getTime() - 366 * 86_400_000);
    const first = await stats.stats(ctx, { from, to, groupBy: ['DAY'] });
    const counted = first.reduce((n, b) => n + b.count, 0);
    if (counted !== ORDERS) throw new Error(`stats counted ${counted} orders, expected ${ORDERS}`);
    const times: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const s = performance.now();
      await stats.stats({ ...ctx, em: orm.em.fork() }, { from, to, groupBy: ['DAY'] });
      times.push(performance.now() - s);
    }
    times.sort((a, b) => a - b);
    console.log(`orderStats by DAY over ${first.length} days: ${RUNS} runs`);
    console.log(`[bench] duration ${((Date.now() - began) / 1000).toFixed(1)} s (fixture included)`);
    console.log(JSON.stringify({ orders: ORDERS, days: first.length, p50_ms: Math.round(percentile(times, 50)), p99_ms: Math.round(percentile(times, 99)) }));
  } finally {
    await orm.close();
    await db.release();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
