import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { checkpoint, CONNECTIONS, interleave, orderClient, restPhase, restSide, startOrderGateway, type OrderClient } from './orders-load.js';
import { benchDatabases, envPairs, percentile } from './support.js';

/**
 * `npm run bench:orders`: REST order creation (POST /api/v2/testnet/merchant/fiat/order) with 50
 * keep-alive connections against the built gateway in its own process, on two databases of one
 * PostgreSQL server: one whose `orders` table starts empty, one holding 5,000,000 orders of its
 * merchant (bulk-inserted first, in `generate_series` chunks), each with its own gateway. After a
 * warm-up of each, three loads take turns for ROUNDS rounds of SECONDS / ROUNDS each (interleave in
 * orders-load.ts): REST on the empty table, REST on the big one, and the raw PostgreSQL single-row
 * INSERT at the same concurrency (50 pg connections, autocommit, one row per statement). Taking turns,
 * all three see the same machine: `ratio` = REST orders/s (empty table) / trivial inserts/s, and
 * `ratio_5m` = orders/s with 5M rows / orders/s with the (nearly) empty table. Last line: one JSON object.
 *
 * The load generator is a raw HTTP/1.1 client on keep-alive sockets (orders-load.ts; BENCH_CLIENT=undici
 * for undici's Pool, which costs this process ≈ 2× the CPU per order, node-http for node's own, ≈ 3×).
 * Each REST phase prints the CPU per order of the gateway, its PostgreSQL backends and this process, the
 * group commit's batches and the WAL written per order.
 *
 * BENCH_CPU_PROF=<dir>: both gateways run with `node --cpu-prof` and write their profiles there on exit
 * (summarise one with `node dist/bench/cpu-profile.js <file>`). BENCH_NODE_ARGS: other node flags for
 * the gateways (e.g. `--trace-gc`). BENCH_GATEWAY_ENV: extra gateway variables as k=v,k=v (e.g.
 * ORDER_GROUP_COMMIT=false for the before figure). BENCH_TRACE=<prefix>: every REST request's
 * connection, start and latency go to `<prefix>.<n>.txt`, one file per REST phase in order, each with
 * its lead-in (where the tail comes from).
 * BENCH_ROWS: fixture size, BENCH_FIXTURE_MAX_S: its time budget (the rows reached are printed and in
 * the last line). BENCH_SECONDS (20), BENCH_ROUNDS (10), BENCH_WARMUP_S (40), BENCH_SETTLE /
 * BENCH_SETTLE_MAX_S: below. Each run has its own databases (two runs on one server do not drop each
 * other's). Bounded: the fixture budget + VACUUM + the settle budget + 2 × warm-up + 3 × 20 s measured
 * (plus 1 s of lead-in per REST phase) + 10 s of context; the total is printed and in the last line.
 */
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
/**
 * The measured SECONDS of each side come in ROUNDS phases, interleaved (orders-load.ts, interleave).
 * The host's speed moves from one 2 s round to the next (orders/s 4,721–8,206 in one run's rounds), so
 * `ratio_5m`, a quotient of two sides' totals, needs many short turns: with 5 its interleaved runs read 0.865–1.124.
 */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
const PHASE_S = SECONDS / ROUNDS;
/** The context phase (the API's own insert straight from pg), after the measured rounds; not part of the last line's goals. */
const CONTEXT_S = 10;
/**
 * Warm-up before each measured phase: the gateway's CPU per order keeps falling for ≈ 30–60 s after
 * start (JIT tiers, heap sizing; seen in bench:orders-ab's rounds, and in a first phase after 20 s
 * reading 0.111 ms per order against 0.090 ms in a later one, 0.083 ms after 60 s), so 2 s, then
 * 20 s, measured a process still warming. A gateway in production runs for days. Each measured phase
 * follows 1 s of unrecorded load on the same callers (restPhase's lead-in), and a CHECKPOINT runs before
 * the warm-up's last turn (`checkpoint`): both in orders-load.ts, with what each removed from the tail.
 */
const WARMUP_S = Number(process.env.BENCH_WARMUP_S ?? 40);
/**
 * The two gateways warm up in turns of this length, so that neither sits idle for long before the
 * measured rounds (a gateway that had waited 40 s read p99 28.6 ms in its first round, against 15–23
 * ms later), and the last turn of each follows a CHECKPOINT (orders-load.ts, `checkpoint`): the full-page
 * images every page needs after one (WAL 1.92 KB per order against 0.94) are written in the warm-up.
 */
const WARMUP_TURN_S = 5;
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
  await pool.query(
    `create table if not exists bench_inserts (id uuid primary key, merchant_id uuid not null, order_no text not null, amount numeric(78,0) not null, created_at timestamptz not null default now())`,
  );
  let count = 0;
  const merchant = randomUUID();
  // Connected before the clock starts: a phase of 2 s would otherwise count 50 connection set-ups.
  const clients = await Promise.all(Array.from({ length: CONNECTIONS }, () => pool.connect()));
  const until = Date.now() + seconds * 1000;
  await Promise.all(
    clients.map(async (client) => {
      try {
        while (Date.now() < until) {
          await client.query('insert into bench_inserts (id, merchant_id, order_no, amount) values ($1, $2, $3, $4)', [
            randomUUID(),
            merchant,
            randomUUID(),
            '150000',
          ]);
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
 * next checkpoint and the kernel's writeback would run during the measured phases and take CPU from
 * every process (the load generator's own CPU per order rose by a fifth in runs without this). A
 * table that grew to 5M rows over months carries no such backlog, so the fixture's is written out
 * first: a CHECKPOINT, then a wait until the kernel's dirty pages are back near what they were before
 * the fixture (at most twice that, or 64 MB), bounded by BENCH_SETTLE_MAX_S. BENCH_SETTLE=false skips it.
 */
async function settle(url: string, baselineMb: number): Promise<{ seconds: number; dirtyBeforeMb: number; dirtyAfterMb: number }> {
  const t0 = performance.now();
  const dirtyBeforeMb = dirtyMb();
  await checkpoint(url);
  while (dirtyMb() > Math.max(64, baselineMb * 2) && (performance.now() - t0) / 1000 < SETTLE_MAX_S) await new Promise((r) => setTimeout(r, 500));
  return { seconds: (performance.now() - t0) / 1000, dirtyBeforeMb, dirtyAfterMb: dirtyMb() };
}

async function main() {
  const started = performance.now();
  const db = await benchDatabases([`cpg_bench_orders_${process.pid}`, `cpg_bench_orders_5m_${process.pid}`]);
  const [emptyUrl, bigUrl] = db.urls as [string, string];
  const env = { DATABASE_POOL_MAX: String(Number(process.env.BENCH_POOL ?? 20)), ...envPairs(process.env.BENCH_GATEWAY_ENV) };
  const nodeArgs = [
    ...(process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []),
    ...(process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean),
  ];
  const gateways: { gw: Awaited<ReturnType<typeof startOrderGateway>>['gw']; client: OrderClient }[] = [];
  const start = async (url: string) => {
    const { gw, merchant } = await startOrderGateway(url, env, nodeArgs);
    const client = orderClient(gw.url, merchant.sandbox_api_key);
    gateways.push({ gw, client });
    return { url, gw, client, merchantId: merchant.merchant_id };
  };
  try {
    const empty = await start(emptyUrl);
    const big = await start(bigUrl);
    console.log(`bulk fixture: ${FIXTURE_ROWS.toLocaleString('en')} orders of the second gateway's merchant …`);
    const dirtyBaselineMb = dirtyMb();
    const fixture = await bulkFixture(bigUrl, big.merchantId, FIXTURE_ROWS, FIXTURE_MAX_S);
    console.log(
      `  ${fixture.rows.toLocaleString('en')} rows in ${fixture.seconds.toFixed(0)} s (insert + vacuum analyze)${fixture.rows < FIXTURE_ROWS ? ' — time budget reached' : ''}`,
    );
    const settled = process.env.BENCH_SETTLE === 'false' ? null : await settle(bigUrl, dirtyBaselineMb);
    if (settled)
      console.log(
        `  settled: CHECKPOINT and writeback in ${settled.seconds.toFixed(0)} s (dirty page cache ${settled.dirtyBeforeMb} → ${settled.dirtyAfterMb} MB; ${dirtyBaselineMb} MB before the fixture)`,
      );
    const turns = Math.max(1, Math.round(WARMUP_S / WARMUP_TURN_S));
    console.log(`warm-up: ${WARMUP_S}s per gateway in ${turns} turns each, ${CONNECTIONS} connections, a CHECKPOINT before the last turn …`);
    for (let turn = 0; turn < turns; turn++) {
      if (turn === turns - 1) await checkpoint(bigUrl);
      for (const g of [empty, big]) await restPhase(g.client, g.merchantId, WARMUP_S / turns);
    }
    const rowsLabel = `${(fixture.rows / 1e6).toLocaleString('en')}M rows`;
    console.log(
      `${ROUNDS} rounds of ${PHASE_S}s: REST order creation on the empty table, on ${rowsLabel}, and the trivial insert, in turn (${CONNECTIONS} connections each) …`,
    );
    const t = await interleave(
      [
        restSide('empty table', empty.client, empty.merchantId, empty.url, empty.gw.proc.pid!, empty.gw.url),
        restSide(rowsLabel, big.client, big.merchantId, big.url, big.gw.proc.pid!, big.gw.url),
        { name: 'trivial insert', run: async (seconds) => ({ count: await pgPhase(emptyUrl, seconds), latencies: [] }) },
      ],
      ROUNDS,
      PHASE_S,
    );
    const e = t['empty table']!;
    const b = t[rowsLabel]!;
    const pgPerS = t['trivial insert']!.perS;
    for (const [label, x] of [
      ['empty table', e],
      [rowsLabel, b],
    ] as const) {
      const c = x.cpu!;
      console.log(
        `${label}: ${x.orders} orders, ${x.perS.toFixed(0)}/s, p50 ${percentile(x.latencies, 50).toFixed(2)} ms, p99 ${percentile(x.latencies, 99).toFixed(2)} ms; CPU per order: gateway ${c.api.toFixed(3)} ms, PostgreSQL ${c.pg.toFixed(3)} ms, load generator ${c.loadgen.toFixed(3)} ms; ${c.meanBatch.toFixed(1)} orders per statement; machine idle ${(c.idle * 100).toFixed(0)} %; the gateway waited for a core ${(c.apiWait * 100).toFixed(0)} % of the time`,
      );
    }
    console.log(`trivial insert: ${pgPerS.toFixed(0)}/s`);
    console.log(`context — the API's own INSERT … SELECT into orders, straight from pg: ${CONNECTIONS} connections × ${CONTEXT_S}s …`);
    const orderInserts = await pgOrderPhase(emptyUrl, empty.merchantId, CONTEXT_S);
    console.log(
      `  ${orderInserts} inserts, ${(orderInserts / CONTEXT_S).toFixed(0)}/s (REST reaches ${((e.perS / (orderInserts / CONTEXT_S)) * 100).toFixed(0)} % of it)`,
    );
    console.log(
      JSON.stringify({
        orders_per_s: Math.round(e.perS),
        pg_inserts_per_s: Math.round(pgPerS),
        ratio: Number((e.perS / pgPerS).toFixed(3)),
        p99_ms: Number(percentile(e.latencies, 99).toFixed(2)),
        ratio_5m: Number((b.perS / e.perS).toFixed(3)),
        p99_5m_ms: Number(percentile(b.latencies, 99).toFixed(2)),
        api_cpu_ms_per_order: Number(e.cpu!.api.toFixed(3)),
        pg_cpu_ms_per_order: Number(e.cpu!.pg.toFixed(3)),
        fixture_rows: fixture.rows,
        fixture_s: Math.round(fixture.seconds),
        duration_s: Math.round((performance.now() - started) / 1000),
      }),
    );
  } finally {
    for (const g of gateways) {
      await g.client.close();
      await g.gw.stop();
    }
    await db.release();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
