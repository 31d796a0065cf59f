import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { checkpointAfter, CONNECTIONS, cpuLine, cpuMeter, envPairs, orderClient, restPhase, startOrderGateway } from './orders-load.js';
import { benchDatabase, percentile } from './support.js';

/**
 * `npm run bench:orders`: REST order creation (POST /api/v2/testnet/merchant/fiat/order) with 50
 * keep-alive connections for a fixed time against the built gateway in its own process, and in the
 * same run the raw PostgreSQL single-row INSERT rate at the same concurrency (50 pg connections,
 * autocommit, one row per statement) on the same server. Then 5,000,000 orders are bulk-inserted
 * (one `generate_series` statement) and the REST phase runs again on the same server:
 * `ratio_5m` = orders/s with 5M rows / orders/s with the (nearly) empty table. Last line: one JSON object.
 *
 * The load generator is undici's Pool (orders-load.ts; BENCH_CLIENT=node-http for node's own client,
 * which costs this process ≈ 1.5× the CPU per order). Each phase prints the CPU per order of the
 * gateway, its PostgreSQL backends and this process, the group commit's batches, the WAL written per
 * order and the kernel's dirty page cache.
 *
 * BENCH_CPU_PROF=<dir>: the gateway runs with `node --cpu-prof` and writes its profile there on exit
 * (summarise it with `node dist/bench/cpu-profile.js <file>`). BENCH_NODE_ARGS: other node flags for
 * the gateway (e.g. `--trace-gc`). BENCH_GATEWAY_ENV: extra gateway variables as k=v,k=v (e.g.
 * ORDER_GROUP_COMMIT=false for the before figure). BENCH_TRACE=<prefix>: every REST request's
 * connection, start and latency go to `<prefix>.<n>.txt`, one file per REST phase in order, each with
 * its warm-up (where the tail comes from).
 * BENCH_ROWS: fixture size, BENCH_FIXTURE_MAX_S: its time budget (the rows reached are printed and in
 * the last line). BENCH_WARMUP_S (40), BENCH_SETTLE / BENCH_SETTLE_MAX_S: below. Each run has its own
 * database (two runs on one server do not drop each other's). Bounded: 2 × (warm-up + 10 s) + 2 × 10 s
 * + the fixture budget + VACUUM + the settle budget; the total is printed and in the last line.
 */
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
/**
 * Warm-up before each measured phase: the gateway's CPU per order keeps falling for ≈ 30–60 s after
 * start (JIT tiers, heap sizing; seen in bench:orders-ab's rounds, and in a first phase after 20 s
 * reading 0.111 ms per order against 0.090 ms in a later one, 0.083 ms after 60 s), so 2 s, then
 * 20 s, measured a process still warming. A gateway in production runs for days. The measured phase
 * follows the warm-up on the same callers without a pause (restPhase's lead-in), and a CHECKPOINT runs
 * in the warm-up (checkpointAfter): both in orders-load.ts, with what each removed from the tail.
 */
const WARMUP_S = Number(process.env.BENCH_WARMUP_S ?? 40);
/** How long before the end of each warm-up its CHECKPOINT runs (orders-load.ts, checkpointAfter: WAL segments recycled, as on a server that has run a while). */
const CHECKPOINT_BEFORE_S = Math.min(10, WARMUP_S / 2);
/** After the fixture: how long at most to wait for its writes to reach the disk before measuring. */
const SETTLE_MAX_S = Number(process.env.BENCH_SETTLE_MAX_S ?? 120);
const FIXTURE_ROWS = Number(process.env.BENCH_ROWS ?? 5_000_000);
const FIXTURE_CHUNK = 500_000;
/** Time budget of the bulk fixture (insert; VACUUM ANALYZE comes after): ≈ 60 s on a quiet machine for 5M rows. */
const FIXTURE_MAX_S = Number(process.env.BENCH_FIXTURE_MAX_S ?? 900);

/**
 * The table as it looks after a long life: up to FIXTURE_ROWS orders of the bench merchant (the worst
 * case for its per-merchant indexes), created over the last 180 days, nearly all closed (so the
 * open-order expiry index stays as small as it is in production), with time-ordered ids as the API
 * makes them (uuid7.ts: the primary key, made in SQL here from each row's created_at). Inserted in
 * chunks of FIXTURE_CHUNK rows, oldest first, until FIXTURE_ROWS or FIXTURE_MAX_S seconds: the bench
 * stays bounded in time on a loaded machine and says how many rows it reached.
 */
async function bulkFixture(url: string, merchantId: string, rows: number, maxS: number): Promise<{ rows: number; seconds: number }> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  const t0 = performance.now();
  let done = 0;
  try {
    while (done < rows && (performance.now() - t0) / 1000 < maxS) {
      const to = Math.min(rows, done + FIXTURE_CHUNK);
      await c.query(
        `insert into orders (id, merchant_id, environment, order_no, amount, status, source, checkout_key_hash, checkout_key_expires_at, expires_at, created_at, updated_at)
         select encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) placing substring(int8send((extract(epoch from t) * 1000)::int8) from 3) from 1 for 6), 52, 1), 53, 1), 'hex')::uuid,
                $1, 'sandbox', 'FIX-' || i, 150000,
                (array['Success','Expired','Expired','Success','Underpaid'])[1 + i % 5], 'api', md5(i::text) || md5((i + 1)::text),
                t + interval '30 minutes', t + interval '30 minutes', t, t
         from generate_series($3::int + 1, $4::int) as i, lateral (select now() - interval '180 days' + (i::float8 / $2::float8) * interval '180 days' - interval '1 hour' as t) as x`,
        [merchantId, rows, done, to],
      );
      done = to;
      console.log(`  ${done.toLocaleString('en')} rows, ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    }
    await c.query('vacuum analyze orders');
  } finally {
    await c.end();
  }
  return { rows: done, seconds: (performance.now() - t0) / 1000 };
}

async function pgPhase(url: string, seconds: number) {
  const pool = new pg.Pool({ connectionString: url, max: CONNECTIONS });
  await pool.query(`create table if not exists bench_inserts (id uuid primary key, merchant_id uuid not null, order_no text not null, amount numeric(78,0) not null, created_at timestamptz not null default now())`);
  let count = 0;
  const until = Date.now() + seconds * 1000;
  const merchant = randomUUID();
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      const client = await pool.connect();
      try {
        while (Date.now() < until) {
          await client.query('insert into bench_inserts (id, merchant_id, order_no, amount) values ($1, $2, $3, $4)', [randomUUID(), merchant, randomUUID(), '150000']);
          count++;
        }
      } finally {
        client.release();
      }
    }),
  );
  await pool.end();
  return count;
}

/**
 * Context, not the headline: the same INSERT … SELECT the API runs (also a named statement), straight from a pg client, into
 * the real orders table (its five indexes, ON CONFLICT, RETURNING). It shows how much of the gap to
 * the trivial insert is the table itself and how much is the HTTP layer.
 */
async function pgOrderPhase(url: string, merchantId: string, seconds: number) {
  const pool = new pg.Pool({ connectionString: url, max: CONNECTIONS });
  let count = 0;
  const until = Date.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      const client = await pool.connect();
      try {
        while (Date.now() < until) {
          await client.query({
            name: 'bench-order-insert',
            text: `insert into orders (id, merchant_id, environment, order_no, amount, source, checkout_key_hash, checkout_key_expires_at, expires_at)
             select gen_random_uuid(), m.id, 'sandbox', $1, $2, 'api', $3, now() + interval '30 minutes', now() + make_interval(secs => coalesce(m.order_ttl_seconds, 1800))
             from merchants m where m.id = $4
             on conflict (merchant_id, environment, order_no) do nothing returning *`,
            values: [randomUUID(), '150000', randomUUID().replace(/-/g, '') + randomUUID().replace(/-/g, ''), merchantId],
          });
          count++;
        }
      } finally {
        client.release();
      }
    }),
  );
  await pool.end();
  return count;
}

/** Dirty and under-writeback page cache (MB, Linux): what the kernel still has to write to disk. */
function dirtyMb(): number {
  try {
    const m = readFileSync('/proc/meminfo', 'utf8');
    const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(m)?.[1] ?? 0);
    return Math.round((kb('Dirty') + kb('Writeback')) / 1024);
  } catch {
    return 0;
  }
}

/**
 * The fixture leaves gigabytes of freshly written table, index and WAL pages behind: PostgreSQL's
 * next checkpoint and the kernel's writeback would run during the measured phase and take CPU from
 * every process (the load generator's own CPU per order rose by a fifth in runs without this). A
 * table that grew to 5M rows over months carries no such backlog, so the fixture's is written out
 * first: a CHECKPOINT, then a wait until the kernel's dirty pages are back near what they were before
 * the fixture (at most twice that, or 64 MB), bounded by BENCH_SETTLE_MAX_S. BENCH_SETTLE=false skips it.
 */
async function settle(url: string, baselineMb: number): Promise<{ seconds: number; dirtyBeforeMb: number; dirtyAfterMb: number }> {
  const t0 = performance.now();
  const dirtyBeforeMb = dirtyMb();
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query('checkpoint');
  } finally {
    await c.end();
  }
  while (dirtyMb() > Math.max(64, baselineMb * 2) && (performance.now() - t0) / 1000 < SETTLE_MAX_S) await new Promise((r) => setTimeout(r, 500));
  return { seconds: (performance.now() - t0) / 1000, dirtyBeforeMb, dirtyAfterMb: dirtyMb() };
}

async function main() {
  const started = performance.now();
  const db = await benchDatabase(`cpg_bench_orders_${process.pid}`);
  const { gw, merchant } = await startOrderGateway(
    db.url,
    { DATABASE_POOL_MAX: String(Number(process.env.BENCH_POOL ?? 20)), ...envPairs(process.env.BENCH_GATEWAY_ENV) },
    [...(process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []), ...(process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean)],
  );
  const client = orderClient(gw.url, merchant.sandbox_api_key);
  /** WARMUP_S of load, a CHECKPOINT in it, then SECONDS measured on the same loops (restPhase, checkpointAfter). */
  const warmAndMeasure = async () => {
    const checkpoint = checkpointAfter(db.url, WARMUP_S - CHECKPOINT_BEFORE_S);
    const phase = await restPhase(client, merchant.merchant_id, SECONDS, { leadInS: WARMUP_S, onRecord: () => cpuMeter(db.url, gw.proc.pid!, gw.url) });
    await checkpoint;
    return phase;
  };
  try {
    console.log(`REST order creation: ${CONNECTIONS} connections, ${WARMUP_S}s warm-up (a CHECKPOINT ${CHECKPOINT_BEFORE_S}s before its end), then ${SECONDS}s measured …`);
    const rest = await warmAndMeasure();
    const cpu = await rest.meter(rest.count);
    if (rest.errors) throw new Error(`${rest.errors} order requests did not answer 201: the figures would be meaningless`);
    const ordersPerS = rest.count / SECONDS;
    console.log(`  ${rest.count} orders (${rest.errors} non-201), ${ordersPerS.toFixed(0)}/s, p50 ${percentile(rest.latencies, 50).toFixed(2)} ms, p99 ${percentile(rest.latencies, 99).toFixed(2)} ms`);
    console.log(`${cpuLine(cpu)}; dirty page cache ${dirtyMb()} MB`);
    console.log(`raw PostgreSQL single-row INSERT: ${CONNECTIONS} connections × ${SECONDS}s …`);
    const inserts = await pgPhase(db.url, SECONDS);
    const pgPerS = inserts / SECONDS;
    console.log(`  ${inserts} inserts, ${pgPerS.toFixed(0)}/s`);
    console.log(`context — the API's own INSERT … SELECT into orders, straight from pg: ${CONNECTIONS} connections × ${SECONDS}s …`);
    const orderInserts = await pgOrderPhase(db.url, merchant.merchant_id, SECONDS);
    console.log(`  ${orderInserts} inserts, ${(orderInserts / SECONDS).toFixed(0)}/s (REST reaches ${((ordersPerS / (orderInserts / SECONDS)) * 100).toFixed(0)} % of it)`);
    console.log(`bulk fixture: ${FIXTURE_ROWS.toLocaleString('en')} orders …`);
    const dirtyBaselineMb = dirtyMb();
    const fixture = await bulkFixture(db.url, merchant.merchant_id, FIXTURE_ROWS, FIXTURE_MAX_S);
    console.log(`  ${fixture.rows.toLocaleString('en')} rows in ${fixture.seconds.toFixed(0)} s (insert + vacuum analyze)${fixture.rows < FIXTURE_ROWS ? ' — time budget reached' : ''}`);
    const settled = process.env.BENCH_SETTLE === 'false' ? null : await settle(db.url, dirtyBaselineMb);
    if (settled) console.log(`  settled: CHECKPOINT and writeback in ${settled.seconds.toFixed(0)} s (dirty page cache ${settled.dirtyBeforeMb} → ${settled.dirtyAfterMb} MB; ${dirtyBaselineMb} MB before the fixture)`);
    console.log(`REST order creation with ${fixture.rows.toLocaleString('en')} orders in the table: the same warm-up, then ${SECONDS}s measured …`);
    const big = await warmAndMeasure();
    const bigCpu = await big.meter(big.count);
    if (big.errors) throw new Error(`${big.errors} order requests did not answer 201 (5M phase)`);
    const bigPerS = big.count / SECONDS;
    console.log(`  ${big.count} orders, ${bigPerS.toFixed(0)}/s, p50 ${percentile(big.latencies, 50).toFixed(2)} ms, p99 ${percentile(big.latencies, 99).toFixed(2)} ms`);
    console.log(`${cpuLine(bigCpu)}; dirty page cache ${dirtyMb()} MB`);
    console.log(
      JSON.stringify({
        orders_per_s: Math.round(ordersPerS),
        pg_inserts_per_s: Math.round(pgPerS),
        ratio: Number((ordersPerS / pgPerS).toFixed(3)),
        p99_ms: Number(percentile(rest.latencies, 99).toFixed(2)),
        ratio_5m: Number((bigPerS / ordersPerS).toFixed(3)),
        p99_5m_ms: Number(percentile(big.latencies, 99).toFixed(2)),
        api_cpu_ms_per_order: Number(cpu.api.toFixed(3)),
        pg_cpu_ms_per_order: Number(cpu.pg.toFixed(3)),
        fixture_rows: fixture.rows,
        fixture_s: Math.round(fixture.seconds),
        duration_s: Math.round((performance.now() - started) / 1000),
      }),
    );
  } finally {
    await client.close();
    await gw.stop();
    await db.release();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
