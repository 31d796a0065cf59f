import { readFileSync } from 'node:fs';
import { createClient, type Client } from 'graphql-ws';
import pino from 'pino';
import 'reflect-metadata';
import WebSocket from 'ws';
import { openApp } from '../src/app.js';
import { internalContext } from '../src/common/context.js';
import { loadConfig } from '../src/config/index.js';
import { benchDatabase, benchOrm, percentile, startGatewayProcess } from './support.js';

/**
 * `npm run bench:subscriptions`: BENCH_SUBSCRIBERS (default 10,000) graphql-ws `merchantEvents`
 * subscriptions (the dashboard feed, API key) on ONE API process, over BENCH_SOCKETS sockets, then
 * BENCH_EVENTS order status changes committed one after another by this process (another process
 * than the API, as a worker would): every change reaches every subscriber. Latency per event = its
 * commit → the LAST subscriber's receipt; p99 over the events. Memory = the API process's RSS growth
 * from before the first subscription to all live, per subscriber. The subscription caps are raised
 * for the bench only (SUBSCRIPTION_LIMIT_PER_KEY); loopback only.
 * Last line: `{"subscribers":…,"p99_ms":…,"bytes_per_subscriber":…}`.
 */
const SUBSCRIBERS = Number(process.env.BENCH_SUBSCRIBERS ?? 10_000);
const SOCKETS = Number(process.env.BENCH_SOCKETS ?? 100);
const EVENTS = Number(process.env.BENCH_EVENTS ?? 20);
const PACE_MS = Number(process.env.BENCH_PACE_MS ?? 150);
const CHUNK = Number(process.env.BENCH_CHUNK ?? 25);
const PROBES = 30;
const log = (s: string) => console.log(s);
const rss = (pid: number): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const began = Date.now();
  const db = await benchDatabase('cpg_bench_subscriptions');
  const env: Record<string, string> = {
    NODE_ENV: 'development',
    DATABASE_URL: db.url,
    MASTER_KEY: '55'.repeat(32),
    JWT_SECRET: 'bench-subscriptions-jwt-secret-0123456789abcdef',
    DEV_CHAINS: 'false',
    RATE_SOURCES: 'none',
    ROLE: 'api',
    SUBSCRIPTION_LIMIT_PER_SOCKET: String(Math.ceil(SUBSCRIBERS / SOCKETS)),
    SUBSCRIPTION_LIMIT_PER_KEY: String(SUBSCRIBERS),
    RATE_LIMIT_GRAPHQL_PER_MIN: '1000000',
    RATE_LIMIT_MERCHANT_PER_MIN: '10000000',
  };
  const orm = await benchOrm(db.url, 4);
  const app = await openApp(loadConfig({ ...env, LOG_LEVEL: 'warn' }), orm, pino({ level: 'warn' }));
  const gw = await startGatewayProcess(env);
  const clients: Client[] = [];
  try {
    const m = await app.merchants.create(internalContext(orm.em.fork()), { name: 'Bench subs', email: 'bench@subscriptions.test', password: 'bench-password' });
    const merchantId = m.merchant.id;
    const apiKey = m.apiKeys.sandbox.apiKey;
    await orm.em
      .fork()
      .execute(
        `insert into orders (id, merchant_id, environment, order_no, amount, expires_at) select gen_random_uuid(), ?, 'sandbox', 'S' || g, 150000, now() + interval '1 day' from generate_series(1, ?) g`,
        [merchantId, EVENTS + PROBES],
      );
    const orderIds = (await orm.em.fork().execute<{ id: string }[]>(`select id from orders where merchant_id = ? order by order_no`, [merchantId])).map(
      (r) => r.id,
    );

    const pid = gw.proc.pid!;
    await sleep(1000);
    const before = rss(pid);
    /** event id → receipts so far and the time of the last one. */
    const got = new Map<string, { n: number; last: number }>();
    let live = 0;
    const perSocket = Math.ceil(SUBSCRIBERS / SOCKETS);
    for (let s = 0; s < SOCKETS; s++) {
      const client = createClient({
        url: gw.url.replace(/^http/, 'ws') + '/graphql',
        webSocketImpl: WebSocket,
        connectionParams: { 'api-key': apiKey },
        retryAttempts: 0,
        lazy: true,
      });
      clients.push(client);
      // Paced (CHUNK subscribes, then a pause): 10,000 subscribes at once would each authenticate and
      // take a rate-limit point at the same instant and starve the API's database pool.
      for (let i = 0; i < perSocket && live < SUBSCRIBERS; i++, live++) {
        if (live > 0 && live % CHUNK === 0) await sleep(PACE_MS);
        client.subscribe<{ merchantEvents: { eventId: string } }>(
          { query: 'subscription { merchantEvents { eventId orderNo status } }' },
          {
            next: (v) => {
              const id = v.data?.merchantEvents.eventId;
              if (!id) return;
              const g = got.get(id) ?? { n: 0, last: 0 };
              g.n += 1;
              g.last = performance.now();
              got.set(id, g);
            },
            error: (e) => console.error('subscription error', JSON.stringify(e).slice(0, 300)),
            complete: () => undefined,
          },
        );
      }
    }
    // Subscriptions are live once a probe event reaches all of them (a fresh probe every 10 s).
    let probeIndex = 0;
    for (;;) {
      if (probeIndex >= PROBES) throw new Error(`no probe reached all ${SUBSCRIBERS} subscribers (best ${Math.max(0, ...[...got.values()].map((g) => g.n))})`);
      const probe = await orm.em
        .fork()
        .transactional((em) => app.orderStatus.transition(em, orderIds[EVENTS + probeIndex++]!, 'Processing', { kind: 'bench' }));
      const until = Date.now() + 10_000;
      while ((got.get(probe.eventId!)?.n ?? 0) < SUBSCRIBERS && Date.now() < until) await sleep(50);
      if ((got.get(probe.eventId!)?.n ?? 0) >= SUBSCRIBERS) break;
    }
    const after = rss(pid);
    log(`${SUBSCRIBERS} subscribers on ${SOCKETS} sockets live; API RSS ${(before / 2 ** 20).toFixed(0)} → ${(after / 2 ** 20).toFixed(0)} MB`);

    const latencies: number[] = [];
    for (let i = 0; i < EVENTS; i++) {
      const r = await orm.em.fork().transactional((em) => app.orderStatus.transition(em, orderIds[i]!, 'Processing', { kind: 'bench' }));
      const committed = performance.now();
      const deadline = Date.now() + 60_000;
      while ((got.get(r.eventId!)?.n ?? 0) < SUBSCRIBERS) {
        if (Date.now() > deadline) throw new Error(`event ${i}: only ${got.get(r.eventId!)?.n ?? 0} of ${SUBSCRIBERS} subscribers got it`);
        await sleep(2);
      }
      latencies.push(got.get(r.eventId!)!.last - committed);
    }
    latencies.sort((a, b) => a - b);
    log(
      `${latencies.length} events, each to all ${SUBSCRIBERS} subscribers: commit → last subscriber p50 ${percentile(latencies, 50).toFixed(0)} ms, max ${latencies[latencies.length - 1]!.toFixed(0)} ms`,
    );
    console.log(`[bench] duration ${((Date.now() - began) / 1000).toFixed(1)} s (fixture included)`);
    console.log(
      JSON.stringify({
        subscribers: SUBSCRIBERS,
        p99_ms: Math.round(percentile(latencies, 99)),
        p50_ms: Math.round(percentile(latencies, 50)),
        bytes_per_subscriber: Math.round((after - before) / SUBSCRIBERS),
      }),
    );
  } finally {
    await Promise.all(clients.map((c) => c.dispose()));
    await gw.stop();
    await orm.close();
    await db.release();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
