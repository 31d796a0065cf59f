import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import pino from 'pino';
import 'reflect-metadata';
import { openApp } from '../src/app.js';
import { internalContext } from '../src/common/context.js';
import { loadConfig } from '../src/config/index.js';
import { exportFixtureSql } from './export.fixture.js';
import { benchDatabase, benchOrm, envPairs, startGatewayProcess } from './support.js';

/**
 * `npm run bench:export`: CSV export of BENCH_ORDERS (1,000,000) orders over HTTP.
 *
 * - Fixture: one merchant, orders bulk-inserted by SQL (bench/export.fixture.ts; a third paid with a
 *   quote and deposit, so the paying-deposit join does real work). Not timed.
 * - The built gateway (`ROLE=api`) runs as its own process; this process logs in as the merchant's
 *   dashboard user and downloads `GET /api/v2/testnet/merchant/export/orders.csv?tz=UTC`, counting
 *   lines as they arrive (nothing is kept), while sampling the server's RSS from /proc every 50 ms.
 * - rows_per_s = data rows / (request sent → last byte); peak_rss_mb = the server process's VmHWM.
 * Knobs: BENCH_ORDERS; BENCH_KEEP_DB=1 keeps the fixture database for the next run; BENCH_GATEWAY_ENV:
 * extra gateway variables as k=v,k=v. Last line: {"rows_per_s":…,"peak_rss_mb":…}.
 */
const ORDERS = Number(process.env.BENCH_ORDERS ?? 1_000_000);
const log = (msg: string) => console.log(`[bench:export] ${msg}`);

function rssMb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

async function main(): Promise<void> {
  const began = Date.now();
  // BENCH_KEEP_DB=1: the database and its fixture survive the run and are reused by the next one with
  // the same BENCH_ORDERS (before/after comparisons on one fixture, back to back).
  const keep = process.env.BENCH_KEEP_DB === '1';
  const db = await benchDatabase(keep ? `cpg_bench_export_keep_${ORDERS}` : 'cpg_bench_export', { keep });
  try {
    const orm = await benchOrm(db.url, 2);
    const config = loadConfig({
      NODE_ENV: 'test',
      DATABASE_URL: db.url,
      MASTER_KEY: '22'.repeat(32),
      JWT_SECRET: 'bench-export-jwt-secret-0123456789abcdef',
      DEV_CHAINS: 'false',
      LOG_LEVEL: 'warn',
    });
    const app = await openApp(config, orm, pino({ level: 'warn' }));
    const email = keep ? 'bench-export-kept@bench.test' : `bench-export-${Date.now()}@bench.test`;
    const password = 'bench-export-password';
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    const existing = keep
      ? (
          await c.query<{ merchant_id: string; n: string }>(
            "select m.merchant_id, (select count(*) from orders o where o.merchant_id = m.merchant_id) as n from memberships m join dashboard_users u on u.id = m.user_id where u.email = $1 and m.role = 'owner'",
            [email],
          )
        ).rows[0]
      : undefined;
    if (existing && Number(existing.n) === ORDERS) {
      log(`fixture: reusing ${ORDERS} orders of the kept database`);
    } else {
      if (existing) throw new Error(`the kept database holds ${existing.n} orders, not ${ORDERS}: drop cpg_bench_export_keep_${ORDERS}`);
      const created = await app.merchants.create(internalContext(orm.em.fork()), { name: 'Bench export', email, password });
      const fixtureMerchant = randomUUID();
      log(`fixture: ${ORDERS} orders…`);
      const t0 = Date.now();
      for (const sql of exportFixtureSql(fixtureMerchant, ORDERS)) await c.query(sql);
      // The fixture merchant's rows belong to the logged-in merchant (one login, bulk rows).
      await c.query('update orders set merchant_id = $1 where merchant_id = $2', [created.merchant.id, fixtureMerchant]);
      await c.query('update merchant_wallets set merchant_id = $1 where merchant_id = $2', [created.merchant.id, fixtureMerchant]);
      await c.query('vacuum analyze');
      log(`fixture ready in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    }
    await c.end();
    await orm.close(true);

    const gw = await startGatewayProcess({
      ROLE: 'api',
      DATABASE_URL: db.url,
      NODE_ENV: 'test',
      MASTER_KEY: '22'.repeat(32),
      JWT_SECRET: 'bench-export-jwt-secret-0123456789abcdef',
      DEV_CHAINS: 'false',
      RATE_LIMIT_STORE: 'memory',
      RATE_SOURCES: 'none',
      ...envPairs(process.env.BENCH_GATEWAY_ENV),
    });
    try {
      const pid = gw.proc.pid!;
      const login = await fetch(`${gw.url}/api/v2/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password, user_type: 'merchant' }),
      });
      const token = ((await login.json()) as { data: { token: string } }).data.token;
      const before = rssMb(pid, 'VmRSS');
      let peak = before;
      const sampler = setInterval(() => (peak = Math.max(peak, rssMb(pid, 'VmRSS'))), 50);
      const start = process.hrtime.bigint();
      const res = await fetch(`${gw.url}/api/v2/testnet/merchant/export/orders.csv?tz=UTC`, { headers: { authorization: `Bearer ${token}` } });
      if (res.status !== 200) throw new Error(`export answered ${res.status}: ${await res.text()}`);
      let lines = 0;
      let bytes = 0;
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        bytes += chunk.length;
        for (let i = 0; i < chunk.length; i++) if (chunk[i] === 10) lines++;
      }
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      clearInterval(sampler);
      peak = Math.max(peak, rssMb(pid, 'VmHWM'));
      const rows = lines - 1; // header (no customer field here holds a line break)
      log(`${rows} rows, ${(bytes / 1e6).toFixed(1)} MB in ${seconds.toFixed(2)} s; server RSS ${before.toFixed(0)} MB before, peak ${peak.toFixed(0)} MB`);
      if (rows !== ORDERS) throw new Error(`expected ${ORDERS} rows, got ${rows}`);
      console.log(`[bench] duration ${((Date.now() - began) / 1000).toFixed(1)} s (fixture included)`);
      console.log(JSON.stringify({ rows_per_s: Math.round(rows / seconds), peak_rss_mb: Math.round(peak) }));
    } finally {
      await gw.stop();
    }
  } finally {
    await db.release();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
