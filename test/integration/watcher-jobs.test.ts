/**
 * The job layer (Agenda 6) on its real stores: the same job definitions the worker runs (order
 * expiry, a chain watcher) on PostgreSQL always, and on MongoDB when MONGODB_URL is set. Also: a job
 * store that is down at start (clear error naming the store, retries, no unhandled rejection) and
 * shutdown releasing the locks of running jobs so another worker takes over at once.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import pino from 'pino';
import { watchedNetworks } from '../../src/chains/networks';
import { DEV_SWEEP_CONTRACTS, startAnvil, type AnvilInstance } from '../../src/devchain';
import { expireOrdersJob } from '../../src/jobs/expire-orders.job';
import { openJobStore } from '../../src/jobs/job-store';
import { startScheduler, type JobDefinition, type Scheduler } from '../../src/jobs/scheduler';
import { watchChainJobs } from '../../src/jobs/watch-chain.job';
import type { App } from '../../src/app';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { eventually, sleep, sql, startHookedRpc, type HookedRpc } from '../support/evm-harness';
import { internalContext } from '../../src/common/context';

const MONGODB_URL = process.env.MONGODB_URL;
if (!MONGODB_URL)
  console.log('jobs.test: MONGODB_URL is not set, so the MongoDB job store cases are skipped (PostgreSQL cases run; no MongoDB server exists on this machine)');

/** A lock lifetime far longer than a takeover after a clean shutdown may take. */
const WATCH_LOCK_MS = 10_000;
const SCHEDULER = { processEveryMs: 200, lockLifetimeMs: 2000 };

let api: TestGateway;
let anvil: AnvilInstance;
/** Every node call of the watcher goes through here; slowed down so a shutdown lands mid-tick. */
let rpc: HookedRpc;
let rpcDelayMs = 0;
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);

beforeAll(async () => {
  process.on('unhandledRejection', onUnhandled);
  anvil = await startAnvil({ chainId: 31337 });
  rpc = await startHookedRpc(anvil.rpcUrl);
  rpc.afterUpstream = () => sleep(rpcDelayMs);
  // The api role starts no scheduler: the tests start schedulers on its app and database themselves.
  api = await startTestGateway({ ROLE: 'api', WATCH_RUN_MS: '30000', WATCH_LOCK_MS: String(WATCH_LOCK_MS), WATCH_POLL_MS: '100' });
});
afterAll(async () => {
  process.off('unhandledRejection', onUnhandled);
  await api?.close();
  await rpc?.close();
  await anvil?.stop();
});

const stores: { store: 'postgres' | 'mongo'; mongodbUrl?: string }[] = [
  { store: 'postgres' },
  ...(MONGODB_URL ? [{ store: 'mongo' as const, mongodbUrl: MONGODB_URL }] : []),
];
const describeMongo = MONGODB_URL ? describe : describe.skip;

/** The app as a worker configured for `mongodbUrl` sees it (the store is chosen from config). */
const appFor = (mongodbUrl?: string): App => ({ ...api.app, config: { ...api.app.config, MONGODB_URL: mongodbUrl } });

/** The real watcher job of sandbox ETHEREUM (pointed at the slowed anvil), with its runs counted. */
function countedWatcher(stats: { running: number; max: number; runs: string[] }, who: string): JobDefinition {
  const [target] = watchedNetworks(api.app.config, { 'sandbox:ETHEREUM': [rpc.url] }, { localSweepContracts: DEV_SWEEP_CONTRACTS }).filter(
    (n) => n.environment === 'sandbox' && n.network === 'ETHEREUM',
  );
  const [def] = watchChainJobs([target!], WATCH_LOCK_MS);
  return {
    ...def!,
    handler: async (app, job, signal) => {
      stats.running++;
      stats.max = Math.max(stats.max, stats.running);
      stats.runs.push(who);
      try {
        await def!.handler(app, job, signal);
      } finally {
        stats.running--;
      }
    },
  };
}

describe.each(stores)('job store: $store', ({ store, mongodbUrl }) => {
  const started: Scheduler[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((s) => s.stop()));
  });
  const start = async (jobs: JobDefinition[]) => {
    const s = await startScheduler(appFor(mongodbUrl), api.databaseUrl, jobs, SCHEDULER);
    started.push(s);
    return s;
  };

  it('runs on the configured store', async () => {
    const s = await start([]);
    expect(s.store.kind).toBe(store);
  });

  it('the expiry job runs on schedule and settles a due order', async () => {
    const m = await createMerchant(api.app);
    const { order } = await api.app.orders.insert(internalContext(api.app.orm.em.fork()), {
      merchantId: m.merchantId,
      environment: 'sandbox',
      orderNo: `JOB-${store}-${Date.now()}`,
      amount: 100_000n,
      customerName: null,
      customerEmail: null,
      source: 'api',
      paymentLinkId: null,
    });
    await sql(api.app, `update orders set expires_at = now() - interval '1 second' where id = ?`, [order.id]);
    const t0 = Date.now();
    await start([expireOrdersJob(1)]);
    await eventually(
      async () => (await sql<{ status: string }>(api.app, `select status from orders where id = ?`, [order.id]))[0]?.status === 'Expired',
      'the expiry job',
    );
    console.log(`${store}: expiry job settled the due order ${Date.now() - t0} ms after the scheduler started`);
  });

  it('a watcher job has one runner at a time across two workers; stopping the runner mid-tick releases its lock and the other takes over at once', async () => {
    const stats = { running: 0, max: 0, runs: [] as string[] };
    rpcDelayMs = 150; // each node call takes 150 ms: a tick is several hundred ms
    try {
      const a = await start([countedWatcher(stats, 'a')]);
      const b = await start([countedWatcher(stats, 'b')]);
      await eventually(async () => stats.runs.length > 0, 'a first watcher run');
      await sleep(2500); // both workers poll every 200 ms all along
      expect(stats.runs).toHaveLength(1); // one run (WATCH_RUN_MS 30 s), held by one worker
      expect(stats.max).toBe(1);
      const first = stats.runs[0]!;
      const [runner, other] = first === 'a' ? [a, b] : [b, a];

      await sleep(200); // lands inside a tick (every node call is slow)
      const t0 = Date.now();
      await runner.stop();
      started.splice(started.indexOf(runner), 1);
      const stopMs = Date.now() - t0;
      // Stopped cleanly: the run ended (the handler returned on the abort) and its lock is released.
      expect(stats.running).toBe(0);
      const { jobs } = await other.agenda.queryJobs({ name: 'watch-chain:sandbox:ETHEREUM' });
      expect(jobs).toHaveLength(1);
      const takeoverMs = await eventually(async () => stats.runs.length === 2, 'the other worker to take the watcher over', WATCH_LOCK_MS);
      console.log(
        `${store}: runner stopped in ${stopMs} ms; the other worker took the watcher over ${takeoverMs} ms later (lock lifetime ${WATCH_LOCK_MS} ms)`,
      );
      expect(stats.runs[1]).toBe(first === 'a' ? 'b' : 'a');
      expect(takeoverMs).toBeLessThan(2000);
      expect(stats.max).toBe(1);
    } finally {
      rpcDelayMs = 0;
    }
  });

  it('a run that outlasts its lock lifetime keeps its lock while it runs (the scheduler heartbeats it): two workers never run the job at once', async () => {
    const stats = { running: 0, max: 0, runs: 0 };
    const name = `long-run:${store}:${Date.now()}`;
    // One run takes 4× the lock lifetime and never touches the job itself.
    const long: JobDefinition = {
      name,
      every: '1 second',
      concurrency: 1,
      lockLifetimeMs: 500,
      handler: async () => {
        stats.running++;
        stats.runs++;
        stats.max = Math.max(stats.max, stats.running);
        try {
          await sleep(2000);
        } finally {
          stats.running--;
        }
      },
    };
    await start([long]);
    await start([long]);
    await eventually(async () => stats.runs >= 2, 'two runs of the long job', 15_000);
    expect(stats.max).toBe(1);
  });
});

describe('a job store that is down at start', () => {
  const capture = () => {
    const lines: { msg: string; level: number }[] = [];
    const log = pino({ level: 'warn' }, { write: (s: string) => void lines.push(JSON.parse(s) as { msg: string; level: number }) });
    return { log, lines };
  };

  it('PostgreSQL: retries with backoff, then fails with an error naming the store; no unhandled rejection', async () => {
    const { log, lines } = capture();
    const t0 = Date.now();
    await expect(openJobStore({ databaseUrl: 'postgres://cpg:secret@127.0.0.1:1/nothing', log, attempts: 2 })).rejects.toThrow(
      /^Job store PostgreSQL \(DATABASE_URL\) unreachable after 2 attempts: .*ECONNREFUSED/,
    );
    expect(Date.now() - t0).toBeGreaterThanOrEqual(500); // one backoff between the attempts
    expect(lines.map((l) => l.msg)).toEqual(['job store PostgreSQL (DATABASE_URL) unreachable; retrying']);
    expect(JSON.stringify(lines)).not.toContain('secret');
    await sleep(200);
    expect(unhandled).toEqual([]);
  });

  it('PostgreSQL: a store that comes up while retrying is used', async () => {
    const { log, lines } = capture();
    // A port with nothing behind it yet; after the first attempt it starts forwarding to PostgreSQL.
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as { port: number }).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const upstream = new URL(api.databaseUrl);
    const via = new URL(api.databaseUrl);
    via.hostname = '127.0.0.1';
    via.port = String(port);
    const sockets: Socket[] = [];
    const opening = openJobStore({ databaseUrl: via.toString(), log, attempts: 5 });
    await eventually(async () => lines.length >= 1, 'the first failed attempt', 5000);
    const forward: Server = createServer((client) => {
      const server = connect(Number(upstream.port || 5432), upstream.hostname);
      sockets.push(client, server);
      client.pipe(server).pipe(client);
      client.on('error', () => server.destroy());
      server.on('error', () => client.destroy());
    });
    await new Promise<void>((r) => forward.listen(port, '127.0.0.1', r));
    const s = await opening;
    try {
      expect(s.kind).toBe('postgres');
      expect(lines.length).toBeGreaterThanOrEqual(1);
    } finally {
      await s.close();
      sockets.forEach((k) => k.destroy());
      await new Promise<void>((r) => forward.close(() => r()));
    }
    expect(unhandled).toEqual([]);
  });

  it('MongoDB (MONGODB_URL): retries, then fails with an error naming the store; no unhandled rejection', async () => {
    const { log, lines } = capture();
    await expect(openJobStore({ databaseUrl: api.databaseUrl, mongodbUrl: 'mongodb://127.0.0.1:1/agenda', log, attempts: 2 })).rejects.toThrow(
      /^Job store MongoDB \(MONGODB_URL\) unreachable after 2 attempts/,
    );
    expect(lines.map((l) => l.msg)).toEqual(['job store MongoDB (MONGODB_URL) unreachable; retrying']);
    await sleep(200);
    expect(unhandled).toEqual([]);
  }, 20_000);
});

describeMongo('MongoDB store only', () => {
  it('is chosen whenever MONGODB_URL is set (job code unchanged)', async () => {
    const s = await startScheduler(appFor(MONGODB_URL), api.databaseUrl, [], SCHEDULER);
    try {
      expect(s.store.kind).toBe('mongo');
    } finally {
      await s.stop();
    }
  });
});
