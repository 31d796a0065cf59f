import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import 'reflect-metadata';
import { internalContext, operatorContext } from '../src/common/context.js';
import { openApp, type App } from '../src/app.js';
import { loadConfig } from '../src/config/index.js';
import type { Orm } from '../src/db/orm.js';
import { BenchCleanup, benchDatabase, benchOrm, percentile, runBench } from './support.js';

/**
 * `npm run bench:webhooks`: webhook deliveries per second to local receivers, and p99 from enqueue to
 * delivered, with one dead endpoint (accepts connections, never answers) present.
 *
 * - The gateway runs as its own process (`dist/src/main.js`, ROLE=worker, default webhook settings:
 *   64 in flight per worker, 4 per endpoint, 10 s timeout). This process plays the merchants: 16
 *   receivers on 127.0.0.1 (one endpoint each, answering 200 at once) and the dead endpoint, and
 *   produces order events through the real OrderStatusService (orders themselves are bulk-inserted
 *   fixtures). Every event becomes a transaction.success webhook.
 * - Capacity: bursts of BENCH_BURST events committed at once; rate = deliveries / (first commit → last
 *   receipt). In every burst a 17th merchant gets 1/17 more events: a healthy control endpoint (A) or
 *   the dead endpoint (B), in the order A B B A; dead_endpoint_slowdown = max(0, 1 − mean B / mean A),
 *   the healthy merchants' rate lost to the dead endpoint itself.
 * - Latency: BENCH_RATE events/s offered for BENCH_SECONDS with the dead endpoint present; p99 of
 *   (delivered_at − order event created_at), both PostgreSQL clocks, healthy merchants only.
 * Whatever it started (the worker, receivers, the database) is stopped on success, on an error and on
 * the deadline alike (BenchCleanup).
 * Knobs: BENCH_BURST (4000), BENCH_SEQUENCE (ABBA), BENCH_RATE (1000/s), BENCH_SECONDS (5),
 * BENCH_DEADLINE_S (300), BENCH_KEEP_DB=1 (keep the database to inspect), WEBHOOK_* (gateway settings).
 * Bounded: at most (1 + len(BENCH_SEQUENCE)) × 1.06 × BENCH_BURST + 1.06 × BENCH_RATE × BENCH_SECONDS events and BENCH_DEADLINE_S seconds.
 * Talks only to 127.0.0.1 (an embedded PostgreSQL unless DATABASE_URL is a loopback server).
 * Last line: {"deliveries_per_s":…, "p99_ms":…, "dead_endpoint_slowdown":…}.
 */

const num = (name: string, dflt: number) => (process.env[name] ? Number(process.env[name]) : dflt);
const BURST = num('BENCH_BURST', 4000);
const RATE = num('BENCH_RATE', 1000);
const SECONDS = num('BENCH_SECONDS', 5);
const DEADLINE_S = num('BENCH_DEADLINE_S', 300);
/** Order of the capacity bursts: A = control endpoint, B = dead endpoint (ABBA cancels a linear drift). */
const SEQUENCE = (process.env.BENCH_SEQUENCE ?? 'ABBA').replace(/[^AB]/g, '');
const MERCHANTS = 16;
const DEAD_SHARE = 1 / (MERCHANTS + 1); // the dead endpoint gets as many events as any other merchant

const log = (msg: string) => console.log(`[bench:webhooks] ${msg}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** A merchant endpoint answering 200 at once; remembers when each idempotency key arrived. */
async function receiver(onHit: (idempotencyKey: string) => void): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createHttpServer((req, res) => {
    req.resume();
    req.on('end', () => {
      onHit(String(req.headers['x-service-idempotency-key']));
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    close: () => new Promise<void>((ok) => (server.closeAllConnections(), server.close(() => ok()))),
  };
}

/** The dead endpoint: accepts TCP connections and never answers (every attempt runs into the timeout). */
async function deadEndpoint(): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createTcpServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    close: () => new Promise<void>((ok) => (sockets.forEach((s) => s.destroy()), server.close(() => ok()))),
  };
}

const cleanup = new BenchCleanup();

async function main(): Promise<void> {
  // Loopback only: a DATABASE_URL elsewhere is ignored in favour of an embedded PostgreSQL.
  const given = process.env.DATABASE_URL;
  if (given && !['127.0.0.1', 'localhost', '[::1]'].includes(new URL(given).hostname)) delete process.env.DATABASE_URL;
  const db = await benchDatabase('cpg_bench_webhooks');
  cleanup.add(() => (process.env.BENCH_KEEP_DB ? undefined : db.release()));
  const env: Record<string, string> = {
    NODE_ENV: 'development',
    HOST: '127.0.0.1',
    PORT: '0',
    DATA_DIR: mkdtempSync(join(tmpdir(), 'cpg-bench-webhooks-')),
    DATABASE_URL: db.url,
    MASTER_KEY: '44'.repeat(32),
    JWT_SECRET: 'bench-webhooks-jwt-secret-0123456789abcdef',
    DEV_CHAINS: 'false',
    RATE_SOURCES: 'none',
    RATE_LIMIT_STORE: 'memory',
    // The receivers are on loopback, refused unless allowed explicitly.
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    // Webhook settings are the defaults unless given (e.g. WEBHOOK_CONCURRENCY=128 npm run bench:webhooks).
    ...Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[0].startsWith('WEBHOOK_') && e[1] !== undefined)),
  };
  const config = loadConfig({ ...env, LOG_LEVEL: 'warn' });
  const orm: Orm = await benchOrm(db.url, 8);
  cleanup.add(() => orm.close(true));
  const app: App = await openApp(config, orm, pino({ level: 'warn' }));
  cleanup.add(() => app.webhooks.queue.close());
  const conn = orm.em.getConnection();

  let received = 0;
  /** Event id → when its transaction committed (the webhook is enqueued); event id → when the merchant got it. */
  const committedAt = new Map<string, number>();
  const receivedAt = new Map<string, number>();
  const hit = (key: string) => {
    received += 1;
    if (key.startsWith('evt_')) receivedAt.set(key.slice(4), performance.now());
  };
  const receivers = await Promise.all(Array.from({ length: MERCHANTS }, () => receiver(hit)));
  for (const r of receivers) cleanup.add(() => r.close());
  const dead = await deadEndpoint();
  cleanup.add(() => dead.close());
  // The control for the dead endpoint: a merchant getting the same events, answered at once.
  const spare = await receiver(() => undefined);
  cleanup.add(() => spare.close());
  const merchants: string[] = [];
  for (const [i, r] of receivers.entries()) {
    const m = await app.merchants.create(internalContext(orm.em.fork()), { name: `Bench ${i}`, email: `bench${i}@webhooks.test`, password: 'bench-password' });
    await app.webhooks.settings.setForMerchant(orm.em.fork(), m.merchant.id, { environment: 'sandbox', url: r.url }, operatorContext(orm.em, 'bench'));
    merchants.push(m.merchant.id);
  }
  const deadMerchant = (await app.merchants.create(internalContext(orm.em.fork()), { name: 'Dead', email: 'dead@webhooks.test', password: 'bench-password' }))
    .merchant.id;
  await app.webhooks.settings.setForMerchant(orm.em.fork(), deadMerchant, { environment: 'sandbox', url: dead.url }, operatorContext(orm.em, 'bench'));
  const spareMerchant = (
    await app.merchants.create(internalContext(orm.em.fork()), { name: 'Spare', email: 'spare@webhooks.test', password: 'bench-password' })
  ).merchant.id;
  await app.webhooks.settings.setForMerchant(orm.em.fork(), spareMerchant, { environment: 'sandbox', url: spare.url }, operatorContext(orm.em, 'bench'));
  log(`${MERCHANTS} receivers and one dead endpoint on 127.0.0.1; database ${new URL(db.url).host}`);

  // Order fixtures, round-robin over the healthy merchants (the dead one gets its own).
  const orders = async (merchantIds: string[], n: number, tag: string): Promise<string[]> => {
    const rows = await conn.execute<{ id: string }[]>(
      `insert into orders (id, merchant_id, environment, order_no, amount, expires_at)
       select gen_random_uuid(), (?::jsonb ->> ((g % ?)::int))::uuid, 'sandbox', ? || g, 150000, now() + interval '1 day' from generate_series(1, ?) g
       returning id`,
      [JSON.stringify(merchantIds), merchantIds.length, `${tag}-`, n],
    );
    return rows.map((r) => r.id);
  };

  // The gateway worker, as deployed.
  const worker: ChildProcess = spawn(process.execPath, [join(__dirname, '..', 'src', 'main.js')], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env, ROLE: 'worker', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  cleanup.child(worker);
  await new Promise<void>((ok, fail) => {
    let out = '';
    worker.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('gateway started')) ok();
    });
    worker.once('exit', (code) => fail(new Error(`worker exited (${code})`)));
  });
  // The worker's own summary (claims, records, their time) is shown when it stops.
  worker.stdout!.on('data', (d: Buffer) => {
    for (const line of d.toString().split('\n')) if (line.includes('webhook delivery loop stopped')) log(`worker: ${line.trim()}`);
  });
  log(`gateway worker started (pid ${worker.pid})`);

  /** Events for `ids`, in `parallel` transactions committed together; returns when the first commit finished. */
  const produce = async (ids: string[], parallel: number): Promise<number> => {
    const chunks = Array.from({ length: parallel }, (_, i) => ids.filter((_, j) => j % parallel === i));
    let firstCommit = Infinity;
    await Promise.all(
      chunks.map(async (chunk) => {
        const events: string[] = [];
        await orm.em.fork().transactional(async (tx) => {
          for (const id of chunk) events.push((await app.orderStatus.transition(tx, id, 'Success', { kind: 'bench' })).eventId!);
        });
        const now = performance.now();
        for (const e of events) committedAt.set(e, now);
        firstCommit = Math.min(firstCommit, now);
      }),
    );
    return firstCommit;
  };

  const waitReceived = async (target: number, timeoutMs: number): Promise<number> => {
    const until = Date.now() + timeoutMs;
    while (received < target) {
      if (Date.now() > until) throw new Error(`only ${received} of ${target} deliveries arrived`);
      await sleep(2);
    }
    return performance.now();
  };

  /** CPU time (ms) the worker process has used so far (Linux /proc). */
  const workerCpuMs = (): number => {
    const fields = readFileSync(`/proc/${worker.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime + stime, in clock ticks of 10 ms
  };

  /**
   * One burst: BURST events for the healthy merchants plus BURST/17 for a 17th merchant that is the
   * dead endpoint (B) or a healthy control (A) — the same work either way, so the difference between
   * A and B is what the dead endpoint itself costs the others.
   */
  const burst = async (label: string, withDead: boolean): Promise<number> => {
    const good = await orders(merchants, BURST, `${label}`);
    const extra = await orders([withDead ? deadMerchant : spareMerchant], Math.round(BURST * DEAD_SHARE), `${label}-${withDead ? 'dead' : 'spare'}`);
    const start = received;
    // Interleaved, so the 17th merchant's events are spread through the burst.
    const all = [...good, ...extra].sort(() => Math.random() - 0.5);
    const cpu0 = workerCpuMs();
    const t0 = await produce(all, 4);
    const t1 = await waitReceived(start + good.length, 60_000);
    const rate = good.length / ((t1 - t0) / 1000);
    const cpu = (workerCpuMs() - cpu0) / good.length;
    log(
      `burst ${label}: ${good.length} deliveries to the healthy endpoints (+${extra.length} events for the ${withDead ? 'dead endpoint' : 'control endpoint'}) in ${Math.round(t1 - t0)} ms → ${Math.round(rate)}/s (worker CPU ${cpu.toFixed(2)} ms per delivery)`,
    );
    return rate;
  };

  // Warm-up (connections, JIT), then A B B A: a drift over the run (growing tables, other load) cancels out in the means.
  await burst('warmup', false);
  const a: number[] = [];
  const b: number[] = [];
  for (const [i, kind] of [...SEQUENCE].entries()) (kind === 'A' ? a : b).push(await burst(`${kind}${i + 1}`, kind === 'B'));
  const rateA = mean(a);
  const rateB = mean(b);
  const slowdown = Math.max(0, 1 - rateB / rateA);

  // Latency at a steady offered load, dead endpoint present (its earlier deliveries are still timing out / retrying).
  const total = RATE * SECONDS;
  const good = await orders(merchants, total, 'L');
  const deadOnes = await orders([deadMerchant], Math.round(total * DEAD_SHARE), 'L-dead');
  const ticks = SECONDS * 50; // a transaction every 20 ms
  const start = received;
  const tStart = performance.now();
  for (let t = 0; t < ticks; t++) {
    const due = tStart + t * 20;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    const slice = good.slice(Math.floor((t * good.length) / ticks), Math.floor(((t + 1) * good.length) / ticks));
    const deadSlice = deadOnes.slice(Math.floor((t * deadOnes.length) / ticks), Math.floor(((t + 1) * deadOnes.length) / ticks));
    void produce([...slice, ...deadSlice], 1);
  }
  const offeredS = (performance.now() - tStart) / 1000;
  await waitReceived(start + good.length, 60_000);
  await sleep(300); // let the last outcomes be recorded
  // Enqueued (its transaction committed) → delivered (the merchant's endpoint received it), one clock.
  const goodEvents = await conn.execute<{ id: string }[]>(
    `select e.id from order_events e where e.type <> 'order.created' and e.order_id in (select jsonb_array_elements_text(?::jsonb)::uuid)`,
    [JSON.stringify(good)],
  );
  const sorted = goodEvents.map((e) => receivedAt.get(e.id)! - committedAt.get(e.id)!).sort((x, y) => x - y);
  if (sorted.some((x) => !Number.isFinite(x))) throw new Error('an event was not received');
  const p50 = percentile(sorted, 50);
  const p99 = percentile(sorted, 99);
  const parts = await conn.execute<{ dispatch_ms: number; send_ms: number }[]>(
    `select (extract(epoch from d.created_at - e.created_at) * 1000)::float8 as dispatch_ms, (extract(epoch from d.delivered_at - d.created_at) * 1000)::float8 as send_ms
     from webhook_deliveries d join order_events e on e.id = d.event_id
     where d.state = 'delivered' and d.order_id in (select jsonb_array_elements_text(?::jsonb)::uuid)`,
    [JSON.stringify(good)],
  );
  const dispatch = parts.map((x) => x.dispatch_ms).sort((x, y) => x - y);
  const send = parts.map((x) => x.send_ms).sort((x, y) => x - y);
  log(
    `steady load: ${good.length} healthy + ${deadOnes.length} dead-endpoint events offered over ${offeredS.toFixed(1)} s (${Math.round(good.length / offeredS)}/s); enqueue (commit) → delivered (received) p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${sorted.at(-1)!.toFixed(1)} ms`,
  );
  log(
    `  database view: event transaction start → delivery row p50 ${percentile(dispatch, 50).toFixed(1)} / p99 ${percentile(dispatch, 99).toFixed(1)} ms; delivery row → recorded delivered p50 ${percentile(send, 50).toFixed(1)} / p99 ${percentile(send, 99).toFixed(1)} ms`,
  );
  const [deadState] = await conn.execute<{ sending: number; pending: number; attempts: number }[]>(
    `select count(*) filter (where state = 'sending')::int as sending, count(*) filter (where state = 'pending')::int as pending,
            (select count(*)::int from webhook_attempts a join webhook_deliveries w on w.id = a.delivery_id where w.merchant_id = ?) as attempts
     from webhook_deliveries where merchant_id = ?`,
    [deadMerchant, deadMerchant],
  );
  log(`dead endpoint meanwhile: ${deadState!.sending} in flight (cap 4), ${deadState!.pending} waiting, ${deadState!.attempts} timed-out attempts logged`);
  log(`capacity without the dead endpoint ${a.map(Math.round).join(', ')}/s; with it ${b.map(Math.round).join(', ')}/s`);

  // Cleanup (the worker may wait up to one timeout for the dead endpoint's attempts) runs after main.
  console.log(
    JSON.stringify({ deliveries_per_s: Math.round(rateB), p99_ms: Math.round(p99 * 10) / 10, dead_endpoint_slowdown: Math.round(slowdown * 1000) / 1000 }),
  );
}

runBench('bench:webhooks', DEADLINE_S, cleanup, main);
