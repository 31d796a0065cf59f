/**
 * `npm run bench:cluster` (docs/deploy.md, the commit-lock drill): REST order creation through HAProxy and PgBouncer
 * (transaction pool, `DATABASE_PREPARED_STATEMENTS=false`) on one PostgreSQL 15 primary of the
 * Debian engines (bench/cluster-engines.ts), with 1 and then 3 built `ROLE=api` processes. Each
 * configuration is warmed up, then measured for BENCH_SECONDS (15) with BENCH_CONNECTIONS (50)
 * keep-alive connections. Prints `{"api_1":{orders_per_s,p99_ms,errors},"api_3":{…}}`.
 *
 * Order creation writes its `order.created` row into `order_events` and announces it with `pg_notify`
 * in the same transaction, so every measured order takes PostgreSQL's commit-time notify lock. The
 * last phase measures that lock alone: BENCH_CONNECTIONS clients through the same PgBouncer pool
 * commit one-row inserts with and without a `pg_notify` in the transaction (`notify_cost`).
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { startHaProxy, startPgBouncer, startPrimary } from './cluster-engines.js';
import pg from 'pg';
import { CONNECTIONS, orderClient, restPhase } from './orders-load.js';
import { BenchCleanup, percentile, runBench, startGatewayProcess } from './support.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 15);
const WARMUP_S = Number(process.env.BENCH_WARMUP_S ?? 10);
const SECRETS = { MASTER_KEY: '22'.repeat(32), JWT_SECRET: 'bench-jwt-secret-bench-jwt-secret-0123456789' };
const CLI = join(__dirname, '..', 'src', 'cli', 'cli.js');

const cleanup = new BenchCleanup();

runBench('cluster', 1800, cleanup, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cpg-bench-cluster-'));
  chmodSync(dir, 0o755);
  cleanup.add(() => rmSync(dir, { recursive: true, force: true }));
  const primary = await startPrimary(dir);
  cleanup.add(() => primary.stop('fast'));
  const bouncer = await startPgBouncer(dir, primary);
  cleanup.add(() => bouncer.stop());
  const db = { DATABASE_URL: bouncer.url, DATABASE_SESSION_URL: bouncer.sessionUrl, DATABASE_PREPARED_STATEMENTS: 'false', ...SECRETS };
  execFileSync(process.execPath, [CLI, 'migrate'], { env: { ...process.env, ...db, LOG_LEVEL: 'warn' }, stdio: 'inherit' });
  const out = execFileSync(
    process.execPath,
    [CLI, 'merchant', 'create', '--name', 'Bench', '--email', `bench-${randomUUID()}@x.test`, '--password', 'benchmark-password', '--json'],
    {
      env: { ...process.env, ...db, LOG_LEVEL: 'warn' },
    },
  );
  const merchant = JSON.parse(out.toString().trim().split('\n').pop()!) as { merchant_id: string; sandbox_api_key: string };

  const result: Record<string, { orders_per_s: number; p99_ms: number; errors: number }> = {};
  for (const n of [1, 3]) {
    const apis = [];
    for (let i = 0; i < n; i++) {
      const gw = await startGatewayProcess({
        ...db,
        ROLE: 'api',
        MIGRATE_ON_START: 'false',
        DATABASE_POOL_MAX: String(Math.max(4, Math.floor(24 / n))),
        RATE_LIMIT_STORE: 'postgres',
        RATE_LIMIT_MERCHANT_PER_MIN: '10000000',
        DEV_CHAINS: 'false',
        // No chain is watched here: orders must still be accepted (NO_NETWORK_WATCHED otherwise).
        OFFER_UNWATCHED_NETWORKS: 'true',
        RATE_SOURCES: 'none',
      });
      cleanup.child(gw.proc);
      apis.push(gw);
    }
    const ports = apis.map((a) => Number(new URL(a.url).port));
    const proxyDir = mkdtempSync(join(dir, `haproxy-${n}-`));
    const haproxy = await startHaProxy(proxyDir, ports);
    const client = orderClient(haproxy.url, merchant.sandbox_api_key);
    console.log(`${n} API process(es): warm-up ${WARMUP_S} s …`);
    await restPhase(client, merchant.merchant_id, WARMUP_S);
    const phase = await restPhase(client, merchant.merchant_id, SECONDS);
    await client.close();
    await haproxy.stop();
    for (const a of apis) await a.stop();
    if (phase.errors) throw new Error(`${n} API process(es): ${phase.errors} order requests did not answer 201`);
    result[`api_${n}`] = { orders_per_s: Math.round(phase.count / SECONDS), p99_ms: Number(percentile(phase.latencies, 99).toFixed(2)), errors: phase.errors };
    console.log(`${n} API process(es): ${JSON.stringify(result[`api_${n}`])}`);
  }
  const notify = await notifyCost(bouncer.url);
  console.log(`notify cost: ${JSON.stringify(notify)}`);
  console.log(JSON.stringify({ ...result, notify_cost: notify }));
});

/**
 * PostgreSQL's commit-time notify lock alone, through the transaction pool: CONNECTIONS clients each
 * commit `insert` transactions into a scratch table for SECONDS, alternately without and with a
 * `pg_notify` (no listener: the queue write and its global lock are the whole cost), two rounds each.
 */
async function notifyCost(url: string): Promise<{ plain_tx_per_s: number; notify_tx_per_s: number }> {
  const setup = new pg.Client({ connectionString: url });
  await setup.connect();
  await setup.query('create table if not exists bench_notify (id bigserial primary key, at timestamptz not null default now())');
  await setup.end();
  const clients = await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      return client;
    }),
  );
  const phase = async (withNotify: boolean) => {
    const until = Date.now() + SECONDS * 1000;
    let n = 0;
    await Promise.all(
      clients.map(async (client) => {
        while (Date.now() < until) {
          // one statement: one transaction through the transaction pool
          await client.query(
            withNotify
              ? `with r as (insert into bench_notify default values returning id) select pg_notify('bench_notify', id::text) from r`
              : 'insert into bench_notify default values',
          );
          n++;
        }
      }),
    );
    return n / SECONDS;
  };
  const plain: number[] = [];
  const notified: number[] = [];
  await phase(false); // warm-up
  for (let round = 0; round < 2; round++) {
    plain.push(await phase(false));
    notified.push(await phase(true));
  }
  await Promise.all(clients.map((client) => client.end()));
  const mean = (xs: number[]) => Math.round(xs.reduce((a, b) => a + b, 0) / xs.length);
  return { plain_tx_per_s: mean(plain), notify_tx_per_s: mean(notified) };
}
