import 'reflect-metadata';
import { internalContext, type RequestContext } from '../src/common/context.js';
import type { Orm } from '../src/db/orm.js';
import { OrderStatsService } from '../src/modules/orders/order-stats.service.js';
import { OrderStatusService } from '../src/modules/orders/order-status.service.js';
import { BenchCleanup, benchDatabase, benchOrm, percentile, runBench } from './support.js';

/**
 * `npm run bench:transitions`: order status transitions per second for ONE merchant with 50 callers in
 * parallel, and the deadlocks among them (goal: none; docs/decisions/0009-rollup-deltas.md).
 *
 * - BENCH_ORDERS (20,000) Created orders of one merchant, created within the last hour (so every
 *   transition lands in the same hourly and daily rollup buckets: the hot row the writer used to
 *   upsert). 50 callers (BENCH_PARALLEL) each take the next order and move it to Success in its own
 *   transaction through the real OrderStatusService (one settlement, as a block's payments arrive),
 *   while an expiry caller moves batches of 20 others to Expired / Underpaid in one transaction each,
 *   newest first (the opposite order), and the compaction job's work runs every second.
 * - Runs for BENCH_SECONDS (20) after a 3 s warm-up; then checks that `orderStats` equals the orders
 *   table (with the deltas pending, and after a final compaction).
 * Talks only to 127.0.0.1 (an embedded PostgreSQL unless DATABASE_URL is a loopback server).
 * Last line: {"transitions_per_s":…, "deadlocks":…, "errors":…, "p99_ms":…, "sums_exact":true|false}.
 */

const num = (name: string, dflt: number) => (process.env[name] ? Number(process.env[name]) : dflt);
const ORDERS = num('BENCH_ORDERS', 20_000);
const PARALLEL = num('BENCH_PARALLEL', 50);
const SECONDS = num('BENCH_SECONDS', 20);
const WARMUP_S = 3;
const DEADLINE_S = num('BENCH_DEADLINE_S', 300);
const MERCHANT = '00000000-0000-4000-8000-0000000b7a01';

const log = (msg: string) => console.log(`[bench:transitions] ${msg}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const cleanup = new BenchCleanup();

async function main(): Promise<void> {
  const given = process.env.DATABASE_URL;
  if (given && !['127.0.0.1', 'localhost', '[::1]'].includes(new URL(given).hostname)) delete process.env.DATABASE_URL;
  const db = await benchDatabase('cpg_bench_transitions');
  cleanup.add(() => (process.env.BENCH_KEEP_DB ? undefined : db.release()));
  const orm: Orm = await benchOrm(db.url, PARALLEL + 4);
  cleanup.add(() => orm.close(true));
  const writer = new OrderStatusService();
  const stats = new OrderStatsService();
  const conn = orm.em.getConnection();

  await conn.execute(`insert into merchants (id, name) values (?, 'Bench transitions')`, [MERCHANT]);
  const ids = (
    await conn.execute<{ id: string }[]>(
      `insert into orders (id, merchant_id, environment, order_no, amount, expires_at, created_at)
       select gen_random_uuid(), ?, 'sandbox', 'T-' || g, 100000 + g % 1000, now() + interval '1 day', now() - interval '10 minutes' + make_interval(secs => g % 300)
       from generate_series(1, ?) g returning id`,
      [MERCHANT, ORDERS],
    )
  ).map((r) => r.id);
  await conn.execute('vacuum analyze orders');
  const paying = ids.slice(0, Math.floor(ids.length * 0.8));
  const expiring = ids.slice(paying.length).reverse();
  log(
    `${ids.length} Created orders of one merchant on ${new URL(db.url).host}; ${PARALLEL} callers paying, one expiring in batches of 20, compaction every second`,
  );

  let next = 0;
  let nextExpiry = 0;
  let measuring = false;
  let stop = false;
  let done = 0;
  let deadlocks = 0;
  const errors: string[] = [];
  const latencies: number[] = [];
  const failed = (e: unknown) => {
    const code = (e as { code?: string }).code;
    if (code === '40P01' || /deadlock detected/.test(String((e as Error).message))) deadlocks += 1;
    else errors.push(String((e as Error).message));
  };

  const payer = async () => {
    while (!stop && next < paying.length) {
      const id = paying[next++]!;
      const t0 = performance.now();
      try {
        await orm.em.fork().transactional((tx) => writer.transition(tx, id, 'Success', { kind: 'bench' }));
        if (measuring) {
          done += 1;
          latencies.push(performance.now() - t0);
        }
      } catch (e) {
        failed(e);
      }
    }
  };
  const expiry = async () => {
    while (!stop && nextExpiry < expiring.length) {
      const batch = expiring.slice(nextExpiry, nextExpiry + 20);
      nextExpiry += batch.length;
      try {
        await orm.em.fork().transactional(async (tx) => {
          for (const [i, id] of batch.entries()) await writer.transition(tx, id, i % 3 ? 'Expired' : 'Underpaid', { kind: 'bench' });
        });
        if (measuring) done += batch.length;
      } catch (e) {
        failed(e);
      }
      await sleep(50);
    }
  };
  let compactions = 0;
  const compactor = async () => {
    while (!stop) {
      try {
        compactions += await stats.compact(orm.em.fork());
      } catch (e) {
        failed(e);
      }
      await sleep(1000);
    }
  };

  const running = [...Array.from({ length: PARALLEL }, payer), expiry(), compactor()];
  await sleep(WARMUP_S * 1000);
  measuring = true;
  const t0 = performance.now();
  const startDone = done;
  await sleep(SECONDS * 1000);
  measuring = false;
  const seconds = (performance.now() - t0) / 1000;
  const rate = (done - startDone) / seconds;
  stop = true;
  await Promise.all(running);
  if (next >= paying.length) log(`ran out of orders before the end: raise BENCH_ORDERS`);

  // The figures: orderStats (rollups + pending deltas) against the orders table, then after a final compaction.
  const ctx: RequestContext = {
    ...internalContext(orm.em.fork()),
    caller: { kind: 'apiKey', merchantId: MERCHANT, environment: 'sandbox', apiKeyId: 'bench' },
    environment: 'sandbox',
  };
  const figures = async () => {
    const buckets = await stats.stats(ctx, {
      from: new Date(Date.now() - 86_400_000),
      to: new Date(Date.now() + 3_600_000),
      groupBy: ['STATUS'],
      timeZone: 'Asia/Jakarta',
    });
    const service = buckets.map((b) => `${b.status}:${b.count}:${b.amount}`).join(' ');
    const [row] = await conn.execute<{ s: string }[]>(
      `select string_agg(status || ':' || n || ':' || amount, ' ' order by status) as s from (select status, count(*) as n, sum(amount) as amount from orders where merchant_id = ? group by status) x`,
      [MERCHANT],
    );
    return service === row!.s;
  };
  const [pending] = await conn.execute<{ n: string }[]>('select count(*)::text as n from order_stats_delta');
  const before = await figures();
  const folded = await stats.compact(orm.em.fork(), 5000, 1000);
  const after = await figures();
  latencies.sort((a, b) => a - b);
  log(
    `${done - startDone} transitions in ${seconds.toFixed(1)} s → ${Math.round(rate)}/s; p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms per paying transaction`,
  );
  log(
    `deadlocks ${deadlocks}, other errors ${errors.length}${errors.length ? ` (first: ${errors[0]})` : ''}; compaction folded ${compactions} deltas during the run, ${pending!.n} were pending at the end (folded ${folded})`,
  );
  log(`orderStats equals the orders table: with deltas pending ${before}, after compaction ${after}`);
  console.log(
    JSON.stringify({
      transitions_per_s: Math.round(rate),
      deadlocks,
      errors: errors.length,
      p99_ms: Math.round(percentile(latencies, 99) * 10) / 10,
      sums_exact: before && after,
    }),
  );
}

runBench('bench:transitions', DEADLINE_S, cleanup, main);
