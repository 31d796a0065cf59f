import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { formatUnits } from 'ethers';
import { freePort } from '../../src/db/embedded-postgres';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, TEST_JWT_SECRET, TEST_MASTER_KEY, type TestGateway } from '../support/gateway';
import { http } from '../support/http';
import { startOwnPostgres, type OwnPostgres } from '../support/own-postgres';
import { bareEnv, CLI_JS, lockDist, MAIN_JS, requireDist, spawnProcess, waitForHttp, type Spawned } from '../support/process';
import { orderStatus, placeOrder, sleep, sql, WATCH_ENV } from '../support/evm-harness';

/**
 * A dropped database connection must not kill a process. The gateway (ROLE=all, built
 * program) runs on a PostgreSQL of this file's own — never the machine's shared one — which is
 * stopped for 10 s under load and started again, and whose backends are all terminated. The
 * process must stay up, answer 503 in the envelope while the database is away, and resume every
 * job and watcher afterwards: an order placed after the restart is paid on the local chain and
 * reaches Success.
 */
const OUTAGE_MS = 10_000;

let pgDir: string;
let dataDir: string;
let pgPort: number;
let pg: OwnPostgres | null = null;
let helper: TestGateway;
let gw: Spawned;
let base: string;

const startPg = async () => {
  pg = await startOwnPostgres(pgDir, pgPort);
  return pg;
};

beforeAll(async () => {
  requireDist();
  requireDist(CLI_JS);
  pgDir = mkdtempSync(join(tmpdir(), 'cpg-outage-pg-'));
  dataDir = mkdtempSync(join(tmpdir(), 'cpg-outage-data-'));
  pgPort = await freePort();
  const { url } = await startPg();
  // Fixtures (merchants, SQL reads) through an in-process API on the same database.
  helper = await startTestGateway({ ROLE: 'api' }, { db: { name: 'gateway', url, drop: async () => undefined } });
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  const release = await lockDist();
  try {
    gw = spawnProcess(
      process.execPath,
      [MAIN_JS],
      bareEnv({
        ...WATCH_ENV,
        PORT: String(port),
        DATA_DIR: dataDir,
        ROLE: 'all',
        NODE_ENV: 'test',
        LOG_LEVEL: 'info',
        DATABASE_URL: url,
        DATABASE_POOL_MAX: '10',
        MASTER_KEY: TEST_MASTER_KEY,
        JWT_SECRET: TEST_JWT_SECRET,
        SANDBOX_ETHEREUM_CONFIRMATIONS: '1',
        RATE_SOURCES: 'none',
        WATCH_LOCK_MS: '6000',
        RATE_LIMIT_MERCHANT_PER_MIN: '100000',
        RATE_LIMIT_PUBLIC_PER_MIN: '100000',
        RATE_LIMIT_AUTH_PER_MIN: '100000',
        RATE_LIMIT_GRAPHQL_PER_MIN: '100000',
      }),
    );
    const early = gw.exited.then(({ code, signal }) => {
      throw new Error(`gateway exited early (${code ?? signal}):\n${gw.stdout().slice(-3000)}\n${gw.stderr().slice(-3000)}`);
    });
    await Promise.race([waitForHttp(`${base}/readyz`, 150_000).then(() => gw.waitForOutput(/job scheduler started/, 30_000)), early]);
    early.catch(() => undefined);
  } finally {
    release();
  }
}, 240_000);

afterAll(async () => {
  await gw?.kill();
  await helper?.close().catch(() => undefined);
  await pg?.stop().catch(() => undefined);
  for (const d of [pgDir, dataDir]) if (d) rmSync(d, { recursive: true, force: true });
}, 60_000);

const alive = () => gw.child.exitCode === null && gw.child.signalCode === null;

/** Places an order over REST, pays it on the local ETHEREUM chain (CLI `dev pay`) and waits for Success. */
async function payOrderToSuccess(): Promise<void> {
  const m = await createMerchant(helper.app);
  const o = await placeOrder(base, helper.app, m, 'ETHEREUM');
  await promisify(execFile)(
    process.execPath,
    [CLI_JS, 'dev', 'pay', '--network', 'ETHEREUM', '--to', o.address, '--amount', formatUnits(o.total, 6), '--json'],
    {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, DATA_DIR: dataDir, LOG_LEVEL: 'warn' },
    },
  );
  let status = '';
  for (let i = 0; i < 600 && status !== 'Success'; i++) {
    status = await orderStatus(base, m, o.orderNo);
    if (status !== 'Success') await sleep(100);
  }
  expect(status).toBe('Success');
  const [row] = await sql<{ n: string }>(helper.app, `select count(*)::text as n from payments where order_id = ?`, [o.orderId]);
  expect(row!.n).toBe('1');
}

it('pays an order before any outage (the drill starts from a working gateway)', async () => {
  await payOrderToSuccess();
}, 90_000);

it('survives a 10 s PostgreSQL outage under load: 503 in the envelope meanwhile, everything resumes after', async () => {
  const m = await createMerchant(helper.app);
  const statuses = new Map<number, number>();
  const bodies: unknown[] = [];
  let stop = false;
  let n = 0;
  // Bounded load: a few merchant reads and order creations in a loop until the drill ends (≤ 120 s).
  const load = (async () => {
    const until = Date.now() + 120_000;
    while (!stop && Date.now() < until) {
      n++;
      const path = n % 2 ? '/api/v2/testnet/merchant/fiat/getOrder' : '/api/v2/testnet/merchant/fiat/order';
      const body =
        n % 2 ? { merchant_id: m.merchantId, order_no: 'NO-SUCH' } : { merchant_id: m.merchantId, order_no: `OUT-${n}-${Date.now()}`, amount: '150000' };
      try {
        const r = await http(base, path, { body, headers: { 'api-key': m.sandboxKey } });
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        if (r.status >= 500) bodies.push(r.body);
      } catch {
        statuses.set(0, (statuses.get(0) ?? 0) + 1);
      }
      await sleep(50);
    }
  })();

  await sleep(500);
  await pg!.stop();
  pg = null;
  const outageStart = Date.now();
  // Mid-outage: the process is up, the API answers, and the answer is a 503 envelope.
  await sleep(OUTAGE_MS / 2);
  expect(alive()).toBe(true);
  const during = await http(base, '/api/v2/testnet/merchant/fiat/getOrder', {
    body: { merchant_id: m.merchantId, order_no: 'X' },
    headers: { 'api-key': m.sandboxKey },
  });
  expect(during.status).toBe(503);
  expect(during.body).toMatchObject({ status_code: 503, data: { code: 'SERVICE_UNAVAILABLE' } });
  const gql = await http(base, '/graphql', { body: { query: '{ order(orderNo: "X") { orderNo } }' }, headers: { 'api-key': m.sandboxKey } });
  expect(gql.body.errors?.[0]?.extensions?.code).toBe('SERVICE_UNAVAILABLE');
  expect((await fetch(`${base}/readyz`)).status).toBe(503);
  await sleep(Math.max(0, OUTAGE_MS - (Date.now() - outageStart)));
  expect(alive()).toBe(true);

  await startPg();
  await waitForHttp(`${base}/readyz`, 60_000);
  stop = true;
  await load;
  expect(alive()).toBe(true);
  // Never a 500 and never a dropped connection: 2xx/4xx before and after, 503 during.
  const seen = Object.fromEntries(statuses);
  console.info(`outage drill: ${n} requests, statuses ${JSON.stringify(seen)}`);
  expect(Object.keys(seen).filter((s) => !['200', '201', '404', '503'].includes(s))).toEqual([]);
  expect(seen['503']).toBeGreaterThan(0);
  for (const b of bodies) expect(b).toMatchObject({ status_code: 503, data: { code: 'SERVICE_UNAVAILABLE' } });

  // Jobs and watchers resume: a new order is paid and settled.
  await payOrderToSuccess();
  expect(alive()).toBe(true);
}, 240_000);

it('terminating every backend of the process leaves it alive and working', async () => {
  const [before] = await sql<{ n: string }>(
    helper.app,
    `select count(*)::text as n from pg_stat_activity where datname = 'gateway' and application_name like 'cpg-%'`,
  );
  expect(Number(before!.n)).toBeGreaterThan(0); // the LISTEN connections at least (named cpg-*)
  // Every backend but this query's own: the gateway's pools, Agenda's LISTEN client, our LISTEN clients.
  await sql(helper.app, `select pg_terminate_backend(pid) from pg_stat_activity where datname = 'gateway' and pid <> pg_backend_pid()`);
  await sleep(2000);
  expect(alive()).toBe(true);
  await waitForHttp(`${base}/readyz`, 30_000);
  // The LISTEN connections came back.
  let names: string[] = [];
  for (let i = 0; i < 100; i++) {
    names = (await sql<{ application_name: string }>(helper.app, `select application_name from pg_stat_activity where datname = 'gateway'`)).map(
      (r) => r.application_name,
    );
    if (names.includes('cpg-webhooks') && names.includes('cpg-api-events')) break;
    await sleep(200);
  }
  expect(names).toEqual(expect.arrayContaining(['cpg-webhooks', 'cpg-api-events']));
  await payOrderToSuccess();
  expect(alive()).toBe(true);
}, 120_000);
