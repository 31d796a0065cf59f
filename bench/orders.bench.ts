import { request, Agent } from 'node:http';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { benchDatabase, percentile, startGatewayProcess } from './support.js';

/**
 * `npm run bench:orders`: REST order creation (POST /api/v2/testnet/merchant/fiat/order) with 50
 * keep-alive connections for a fixed time against the built gateway in its own process, and in the
 * same run the raw PostgreSQL single-row INSERT rate at the same concurrency (50 pg connections,
 * autocommit, one row per statement) on the same server. Then 5,000,000 orders are bulk-inserted
 * (one `generate_series` statement) and the REST phase runs again on the same server:
 * `ratio_5m` = orders/s with 5M rows / orders/s with the (nearly) empty table. Last line: one JSON object.
 *
 * BENCH_CPU_PROF=<dir>: the gateway runs with `node --cpu-prof` and writes its profile there on exit
 * (summarise it with `node dist/bench/cpu-profile.js <file>`). BENCH_GATEWAY_ENV: extra gateway
 * variables as k=v,k=v (e.g. ORDER_GROUP_COMMIT=false for the before figure). BENCH_ROWS: fixture size,
 * BENCH_FIXTURE_MAX_S: its time budget (the rows reached are printed and in the last line). Each run
 * has its own database (two runs on one server do not drop each other's). Bounded: 4 × (2 s warm-up
 * or 10 s phase) + the fixture budget + VACUUM; the total is printed and in the last line.
 */
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const WARMUP_S = 2;
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

function post(agent: Agent, url: URL, body: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** CPU time (user + system, ms) of a process from /proc (Linux); 0 when it cannot be read. */
function procCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / 100; // utime + stime in clock ticks (USER_HZ = 100)
  } catch {
    return 0;
  }
}

/**
 * Where a phase's CPU went, per order: the gateway process, the PostgreSQL backends connected to the
 * bench database (the gateway's pool; read from pg_stat_activity at the start), and this load
 * generator. On a shared machine these are the honest figures: throughput follows the machine's
 * share, CPU per order follows the code.
 */
async function batchCounters(gatewayUrl: string): Promise<{ batches: number; rows: number }> {
  const text = await (await fetch(new URL('/metrics', gatewayUrl))).text();
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  return { batches: value('cpg_order_insert_batches_total'), rows: value('cpg_order_insert_batch_rows_total') };
}

async function cpuMeter(dbUrl: string, gatewayPid: number, gatewayUrl: string) {
  const c = new pg.Client({ connectionString: dbUrl });
  await c.connect();
  const backends = (await c.query<{ pid: number }>('select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()')).rows.map((r) => r.pid);
  await c.end();
  // A backend that exits during the phase (the pool retires idle connections) is left out of the sum.
  const read = () => ({ api: procCpuMs(gatewayPid), pg: backends.map((pid) => procCpuMs(pid)), self: process.cpuUsage() });
  const batchesBefore = await batchCounters(gatewayUrl);
  const start = read();
  return async (orders: number) => {
    const end = read();
    const batchesAfter = await batchCounters(gatewayUrl);
    const batches = batchesAfter.batches - batchesBefore.batches;
    const self = (end.self.user - start.self.user + end.self.system - start.self.system) / 1000;
    const pgMs = end.pg.reduce((a, ms, i) => a + (ms > 0 ? ms - start.pg[i]! : 0), 0);
    return { api: (end.api - start.api) / orders, pg: pgMs / orders, loadgen: self / orders, backends: backends.length, batches, meanBatch: (batchesAfter.rows - batchesBefore.rows) / batches };
  };
}

const cpuLine = (c: { api: number; pg: number; loadgen: number; backends: number; batches: number; meanBatch: number }) =>
  `  CPU per order: gateway ${c.api.toFixed(3)} ms, its ${c.backends} PostgreSQL backends ${c.pg.toFixed(3)} ms, load generator ${c.loadgen.toFixed(3)} ms; ${c.batches} insert statements, ${c.meanBatch.toFixed(1)} orders each`;

async function restPhase(baseUrl: string, merchantId: string, apiKey: string, seconds: number) {
  const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const url = new URL('/api/v2/testnet/merchant/fiat/order', baseUrl);
  const latencies: number[] = [];
  let errors = 0;
  const until = Date.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (Date.now() < until) {
        const body = JSON.stringify({ merchant_id: merchantId, order_no: randomUUID(), amount: '150000' });
        const t0 = performance.now();
        const status = await post(agent, url, body, { 'api-key': apiKey });
        latencies.push(performance.now() - t0);
        if (status !== 201) errors++;
      }
    }),
  );
  agent.destroy();
  return { count: latencies.length, errors, latencies: latencies.sort((a, b) => a - b) };
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

async function main() {
  const started = performance.now();
  const db = await benchDatabase(`cpg_bench_orders_${process.pid}`);
  const extraEnv = Object.fromEntries((process.env.BENCH_GATEWAY_ENV ?? '').split(',').filter(Boolean).map((kv) => kv.split('=') as [string, string]));
  const gw = await startGatewayProcess({
    DATABASE_URL: db.url,
    ROLE: 'api',
    MASTER_KEY: '22'.repeat(32),
    JWT_SECRET: 'bench-jwt-secret-bench-jwt-secret-0123456789',
    RATE_LIMIT_STORE: process.env.BENCH_RATE_LIMIT_STORE ?? 'memory',
    RATE_LIMIT_MERCHANT_PER_MIN: '10000000',
    DATABASE_POOL_MAX: String(Number(process.env.BENCH_POOL ?? 20)),
    DEV_CHAINS: 'false',
    RATE_SOURCES: 'none',
    ...extraEnv,
  }, process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []);
  try {
    const { execFileSync } = await import('node:child_process');
    const { join } = await import('node:path');
    const out = execFileSync(process.execPath, [join(__dirname, '..', 'src', 'cli', 'cli.js'), 'merchant', 'create', '--name', 'Bench', '--email', `bench-${Date.now()}@x.test`, '--password', 'benchmark-password', '--json'], {
      env: { ...process.env, DATABASE_URL: db.url, MASTER_KEY: '22'.repeat(32), JWT_SECRET: 'bench-jwt-secret-bench-jwt-secret-0123456789', LOG_LEVEL: 'warn' },
    });
    const merchant = JSON.parse(out.toString().trim().split('\n').pop()!) as { merchant_id: string; sandbox_api_key: string };
    console.log(`warming up ${WARMUP_S}s …`);
    await restPhase(gw.url, merchant.merchant_id, merchant.sandbox_api_key, WARMUP_S);
    console.log(`REST order creation: ${CONNECTIONS} connections × ${SECONDS}s …`);
    const meter = await cpuMeter(db.url, gw.proc.pid!, gw.url);
    const rest = await restPhase(gw.url, merchant.merchant_id, merchant.sandbox_api_key, SECONDS);
    const cpu = await meter(rest.count);
    if (rest.errors) throw new Error(`${rest.errors} order requests did not answer 201: the figures would be meaningless`);
    const ordersPerS = rest.count / SECONDS;
    console.log(`  ${rest.count} orders (${rest.errors} non-201), ${ordersPerS.toFixed(0)}/s, p50 ${percentile(rest.latencies, 50).toFixed(2)} ms, p99 ${percentile(rest.latencies, 99).toFixed(2)} ms`);
    console.log(cpuLine(cpu));
    console.log(`raw PostgreSQL single-row INSERT: ${CONNECTIONS} connections × ${SECONDS}s …`);
    const inserts = await pgPhase(db.url, SECONDS);
    const pgPerS = inserts / SECONDS;
    console.log(`  ${inserts} inserts, ${pgPerS.toFixed(0)}/s`);
    console.log(`context — the API's own INSERT … SELECT into orders, straight from pg: ${CONNECTIONS} connections × ${SECONDS}s …`);
    const orderInserts = await pgOrderPhase(db.url, merchant.merchant_id, SECONDS);
    console.log(`  ${orderInserts} inserts, ${(orderInserts / SECONDS).toFixed(0)}/s (REST reaches ${((ordersPerS / (orderInserts / SECONDS)) * 100).toFixed(0)} % of it)`);
    console.log(`bulk fixture: ${FIXTURE_ROWS.toLocaleString('en')} orders …`);
    const fixture = await bulkFixture(db.url, merchant.merchant_id, FIXTURE_ROWS, FIXTURE_MAX_S);
    console.log(`  ${fixture.rows.toLocaleString('en')} rows in ${fixture.seconds.toFixed(0)} s (insert + vacuum analyze)${fixture.rows < FIXTURE_ROWS ? ' — time budget reached' : ''}`);
    await restPhase(gw.url, merchant.merchant_id, merchant.sandbox_api_key, WARMUP_S);
    console.log(`REST order creation with ${fixture.rows.toLocaleString('en')} orders in the table: ${CONNECTIONS} connections × ${SECONDS}s …`);
    const bigMeter = await cpuMeter(db.url, gw.proc.pid!, gw.url);
    const big = await restPhase(gw.url, merchant.merchant_id, merchant.sandbox_api_key, SECONDS);
    const bigCpu = await bigMeter(big.count);
    if (big.errors) throw new Error(`${big.errors} order requests did not answer 201 (5M phase)`);
    const bigPerS = big.count / SECONDS;
    console.log(`  ${big.count} orders, ${bigPerS.toFixed(0)}/s, p50 ${percentile(big.latencies, 50).toFixed(2)} ms, p99 ${percentile(big.latencies, 99).toFixed(2)} ms`);
    console.log(cpuLine(bigCpu));
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
    await gw.stop();
    await db.release();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
