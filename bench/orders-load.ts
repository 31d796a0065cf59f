import { execFileSync } from 'node:child_process';
import { request, Agent } from 'node:http';
import { connect, type Socket } from 'node:net';
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import pg from 'pg';
import { join } from 'node:path';
import { Pool } from 'undici';
import { percentile, startGatewayProcess } from './support.js';

/**
 * The REST load of `bench:orders` and `bench:orders-ab`: CONNECTIONS keep-alive connections, each
 * creating orders one after another for a fixed time, and the CPU each process spent per order.
 */
export const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);

function post(agent: Agent, url: URL, body: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
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

/** The machine's CPU time (ms, all cores) from /proc/stat: busy, idle (iowait included), and steal (the hypervisor's). */
function machineCpuMs(): { busy: number; idle: number; steal: number } {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const idle = f[3]! + f[4]!;
    return { busy: ((f.slice(0, 8).reduce((a, b) => a + b, 0) - idle) * 1000) / 100, idle: (idle * 1000) / 100, steal: (f[7]! * 1000) / 100 };
  } catch {
    return { busy: 0, idle: 0, steal: 0 };
  }
}

/**
 * How long (ms) a process's main thread — the gateway's event loop — has been runnable but waiting
 * for a core (the scheduler's run-queue delay, `/proc/<pid>/task/<pid>/schedstat`); 0 when unreadable.
 * On two cores shared by the gateway, PostgreSQL and this load generator, the slowest stretches of a
 * phase are the ones where the event loop waited: traced at 10 ms, the windows holding the most
 * requests at or above p99 had it waiting 30–36 ms of 90, against 8 % of the phase overall.
 */
function runQueueWaitMs(pid: number): number {
  try {
    return Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ')[1]) / 1e6;
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
export async function batchCounters(gatewayUrl: string): Promise<{ batches: number; rows: number }> {
  const text = await (await fetch(new URL('/metrics', gatewayUrl))).text();
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  return { batches: value('cpg_order_insert_batches_total'), rows: value('cpg_order_insert_batch_rows_total') };
}

export async function cpuMeter(dbUrl: string, gatewayPid: number, gatewayUrl: string) {
  const c = new pg.Client({ connectionString: dbUrl });
  // The bench's clean-up drops the database WITH (FORCE): a meter still connected then must not turn
  // that into an unhandled 'error' that hides the error which sent the bench to its clean-up.
  c.on('error', () => undefined);
  await c.connect();
  const backends = (await c.query<{ pid: number }>('select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()')).rows.map(
    (r) => r.pid,
  );
  const walLsn = async () => (await c.query<{ lsn: string }>('select pg_current_wal_lsn()::text as lsn')).rows[0]!.lsn;
  const walBefore = await walLsn();
  // Autovacuum's runs on `orders` (PostgreSQL's statistics, flushed within about a second of a run's end).
  const maintenance = async () => {
    const r = (
      await c.query<{ v: string; a: string }>(
        `select autovacuum_count::text as v, autoanalyze_count::text as a from pg_stat_user_tables where relname = 'orders'`,
      )
    ).rows[0];
    return { vacuums: Number(r?.v ?? 0), analyzes: Number(r?.a ?? 0) };
  };
  const maintenanceBefore = await maintenance();
  // A backend that exits during the phase (the pool retires idle connections) is left out of the sum.
  const read = () => ({
    api: procCpuMs(gatewayPid),
    apiWait: runQueueWaitMs(gatewayPid),
    wall: performance.now(),
    pg: backends.map((pid) => procCpuMs(pid)),
    self: process.cpuUsage(),
    machine: machineCpuMs(),
  });
  const batchesBefore = await batchCounters(gatewayUrl);
  const start = read();
  return async (orders: number) => {
    const end = read();
    const batchesAfter = await batchCounters(gatewayUrl);
    const walBytes = Number((await c.query<{ b: string }>('select pg_wal_lsn_diff(pg_current_wal_lsn(), $1)::text as b', [walBefore])).rows[0]!.b);
    await new Promise((r) => setTimeout(r, 1000));
    const maintenanceAfter = await maintenance();
    await c.end();
    const batches = batchesAfter.batches - batchesBefore.batches;
    const self = (end.self.user - start.self.user + end.self.system - start.self.system) / 1000;
    const pgMs = end.pg.reduce((a, ms, i) => a + (ms > 0 ? ms - start.pg[i]! : 0), 0);
    const machineMs = end.machine.idle - start.machine.idle + end.machine.busy - start.machine.busy;
    return {
      api: (end.api - start.api) / orders,
      pg: pgMs / orders,
      loadgen: self / orders,
      backends: backends.length,
      batches,
      meanBatch: (batchesAfter.rows - batchesBefore.rows) / batches,
      walKbPerOrder: walBytes / 1024 / orders,
      autovacuums: maintenanceAfter.vacuums - maintenanceBefore.vacuums,
      autoanalyzes: maintenanceAfter.analyzes - maintenanceBefore.analyzes,
      // Idle share of the machine's two cores over the phase: a slow phase with idle cores waited on something (disk, the host), not on CPU.
      idle: (end.machine.idle - start.machine.idle) / machineMs,
      // Share of the phase the gateway's event loop waited for a core, and the hypervisor's steal (of both cores' time).
      apiWait: (end.apiWait - start.apiWait) / (end.wall - start.wall),
      steal: (end.machine.steal - start.machine.steal) / machineMs,
    };
  };
}

const cpuLine = (c: Cpu) =>
  `  CPU per order: gateway ${c.api.toFixed(3)} ms, its ${c.backends} PostgreSQL backends ${c.pg.toFixed(3)} ms, load generator ${c.loadgen.toFixed(3)} ms; machine idle ${(c.idle * 100).toFixed(0)} %, steal ${(c.steal * 100).toFixed(0)} %; the gateway's event loop waited for a core ${(c.apiWait * 100).toFixed(0)} % of the phase; ${c.batches} insert statements, ${c.meanBatch.toFixed(1)} orders each; WAL ${c.walKbPerOrder.toFixed(2)} KB per order; autovacuum on orders: ${c.autovacuums} vacuum, ${c.autoanalyzes} analyze`;

/** REST phases traced so far (BENCH_TRACE: one file per phase, warm-ups included, numbered in order). */
let traces = 0;

export interface OrderClient {
  /** Posts one order; answers the status. */
  send(body: string): Promise<number>;
  close(): Promise<void>;
}

/**
 * CONNECTIONS keep-alive connections to the gateway: rawClient below, undici's Pool with
 * BENCH_CLIENT=undici, or node's own client with BENCH_CLIENT=node-http. This process shares the two
 * cores with the gateway and PostgreSQL, so what it spends per order is taken from them: undici cost
 * ≈ 0.058 ms per order here and the raw client ≈ 0.031 ms (node's own ≈ 1.5× undici's). A bench keeps
 * one client from its warm-up through its measured phase, so that the phase measures the steady state
 * of established connections (as a merchant's server keeps them), not 50 connections opening at once:
 * on fresh connections the first half second's p99 read 24–134 ms against 14–20 ms afterwards.
 */
export function orderClient(baseUrl: string, apiKey: string): OrderClient {
  const path = '/api/v2/testnet/merchant/fiat/order';
  const kind = process.env.BENCH_CLIENT ?? 'raw';
  if (kind === 'raw') return rawClient(new URL(path, baseUrl), apiKey);
  if (kind === 'node-http') {
    const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });
    const url = new URL(path, baseUrl);
    return { send: (body) => post(agent, url, body, { 'api-key': apiKey }), close: async () => agent.destroy() };
  }
  if (kind !== 'undici') throw new Error(`BENCH_CLIENT=${kind}: raw, undici or node-http`);
  const pool = new Pool(baseUrl, { connections: CONNECTIONS, pipelining: 1 });
  const headers = { 'content-type': 'application/json', 'api-key': apiKey };
  return {
    send: async (body) => {
      const res = await pool.request({ path, method: 'POST', headers, body });
      await res.body.dump();
      return res.statusCode;
    },
    close: () => pool.close(),
  };
}

/**
 * The leanest HTTP/1.1 client this bench can have: CONNECTIONS keep-alive sockets, each with one
 * request at a time, written as one string; an answer is read as far as its status line and
 * `content-length` (the gateway always sends one; anything else is an error, not a guess).
 */
function rawClient(url: URL, apiKey: string): OrderClient {
  const head = `POST ${url.pathname} HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: application/json\r\napi-key: ${apiKey}\r\ncontent-length: `;
  const idle: RawConnection[] = [];
  const live = new Set<RawConnection>();
  return {
    send: async (body) => {
      let conn = idle.pop();
      // The server closes connections left idle past its keep-alive timeout (during the fixture): open a new one.
      while (conn?.closed) conn = idle.pop();
      if (!conn) {
        if (live.size >= CONNECTIONS) throw new Error(`raw client: more than ${CONNECTIONS} requests at once`);
        const fresh = new RawConnection(url, () => live.delete(fresh));
        live.add(fresh);
        conn = fresh;
      }
      const status = await conn.request(`${head}${Buffer.byteLength(body)}\r\n\r\n${body}`);
      idle.push(conn);
      return status;
    },
    close: async () => {
      for (const c of live) c.socket.destroy();
    },
  };
}

class RawConnection {
  readonly socket: Socket;
  private buf: Buffer = Buffer.alloc(0);
  private waiting: { resolve(status: number): void; reject(e: Error): void } | null = null;
  closed = false;

  constructor(url: URL, onClose: () => void) {
    this.socket = connect({ host: url.hostname, port: Number(url.port), noDelay: true });
    this.socket.on('data', (chunk: Buffer) => {
      this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
      this.parse();
    });
    const fail = (e: Error) => {
      this.waiting?.reject(e);
      this.waiting = null;
    };
    this.socket.on('error', fail);
    this.socket.on('close', () => {
      this.closed = true;
      onClose();
      fail(new Error('raw client: connection closed'));
    });
  }

  request(raw: string): Promise<number> {
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      this.socket.write(raw);
    });
  }

  private parse(): void {
    const end = this.buf.indexOf('\r\n\r\n');
    if (end < 0 || !this.waiting) return;
    const headers = this.buf.toString('latin1', 0, end);
    const length = /\r\ncontent-length: *(\d+)/i.exec(headers);
    if (!length) return this.waiting.reject(new Error(`raw client: answer without content-length: ${headers.slice(0, 200)}`));
    const total = end + 4 + Number(length[1]);
    if (this.buf.length < total) return;
    const status = Number(headers.slice(9, 12));
    this.buf = this.buf.subarray(total);
    const w = this.waiting;
    this.waiting = null;
    w.resolve(status);
  }
}

/**
 * CONNECTIONS callers posting orders back to back on `client`'s connections: `leadInS` seconds
 * unrecorded, then `seconds` recorded, on the same loops without a pause. A phase that starts from
 * rest starts as 50 callers at once, their answers come back as one batch and the next 50 requests go
 * as one burst: in traced phases the slowest requests of the first half second took 45–57 ms, against
 * 21–39 ms in later stretches, a start-up no merchant's steady traffic has. `onRecord` (a CPU meter)
 * is started when recording starts; its result comes back with the phase. Errors count over the whole
 * phase.
 */
export async function restPhase<M = undefined>(
  client: OrderClient,
  merchantId: string,
  seconds: number,
  opts: { leadInS?: number; onRecord?: () => Promise<M> } = {},
) {
  const latencies: number[] = [];
  const trace: string[] = [];
  let errors = 0;
  const recordFrom = Date.now() + (opts.leadInS ?? 0) * 1000;
  const until = recordFrom + seconds * 1000;
  let meter: Promise<M> | undefined;
  const timer = opts.onRecord
    ? setTimeout(() => {
        meter = opts.onRecord!();
        meter.catch(() => undefined); // awaited below; this only keeps an early failure from being unhandled
      }, recordFrom - Date.now())
    : undefined;
  try {
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async (_, conn) => {
        while (Date.now() < until) {
          const body = JSON.stringify({ merchant_id: merchantId, order_no: randomUUID(), amount: '150000' });
          const started = Date.now();
          const t0 = performance.now();
          const status = await client.send(body);
          const ms = performance.now() - t0;
          if (started >= recordFrom) latencies.push(ms);
          if (process.env.BENCH_TRACE) trace.push(`${conn} ${t0.toFixed(3)} ${ms.toFixed(3)}`);
          if (status !== 201) errors++;
        }
      }),
    );
  } finally {
    clearTimeout(timer);
  }
  if (process.env.BENCH_TRACE) writeFileSync(`${process.env.BENCH_TRACE}.${++traces}.txt`, trace.join('\n'));
  return { count: latencies.length, errors, latencies: latencies.sort((a, b) => a - b), meter: (await meter) as M };
}

/**
 * A CHECKPOINT, before the last turn of a warm-up. A new cluster creates every WAL segment it fills
 * (16 MB, zero-filled, at ≈ 1 KB per order one every ≈ 3 s at 5,000 orders/s), and each creation held
 * up the requests in flight: in traced phases every new file in pg_wal came with a 100 ms stretch in
 * which 18–50 of the ≈ 400 requests were at or above the phase's p99. A server that has run for a while
 * recycles the segments its checkpoints free instead; a checkpoint after most of the warm-up's WAL
 * gives the measured phases that steady state (no new segment was created in a 15 s phase after one).
 */
export async function checkpoint(dbUrl: string): Promise<void> {
  const c = new pg.Client({ connectionString: dbUrl });
  await c.connect();
  try {
    await c.query('checkpoint');
  } finally {
    await c.end();
  }
}

const SECRETS = { MASTER_KEY: '22'.repeat(32), JWT_SECRET: 'bench-jwt-secret-bench-jwt-secret-0123456789' };

/**
 * The built gateway as the order benches run it (`ROLE=api`, rate limits on production's shared
 * PostgreSQL store unless BENCH_RATE_LIMIT_STORE says otherwise, no chains, no rate sources), plus
 * `env`, and one merchant made through the CLI, whose per-minute budget the bench cannot use up.
 */
export async function startOrderGateway(dbUrl: string, env: Record<string, string>, nodeArgs: string[] = [], main?: string) {
  const gw = await startGatewayProcess(
    {
      DATABASE_URL: dbUrl,
      ROLE: 'api',
      ...SECRETS,
      RATE_LIMIT_STORE: process.env.BENCH_RATE_LIMIT_STORE ?? 'postgres',
      RATE_LIMIT_MERCHANT_PER_MIN: '10000000',
      DEV_CHAINS: 'false',
      // No chain is watched here: orders must still be accepted (they are refused with
      // NO_NETWORK_WATCHED otherwise), as a merchant's are while a watcher is being set up.
      OFFER_UNWATCHED_NETWORKS: 'true',
      RATE_SOURCES: 'none',
      ...env,
    },
    nodeArgs,
    main,
  );
  const out = execFileSync(
    process.execPath,
    [
      join(__dirname, '..', 'src', 'cli', 'cli.js'),
      'merchant',
      'create',
      '--name',
      'Bench',
      '--email',
      `bench-${randomUUID()}@x.test`,
      '--password',
      'benchmark-password',
      '--json',
    ],
    {
      env: { ...process.env, DATABASE_URL: dbUrl, ...SECRETS, LOG_LEVEL: 'warn' },
    },
  );
  const merchant = JSON.parse(out.toString().trim().split('\n').pop()!) as { merchant_id: string; sandbox_api_key: string };
  // Scraped once before any load, as production's Prometheus scrapes from the start. The first scrape
  // runs a MikroORM transaction, whose AsyncLocalStorage switches on node 20's promise hooks for good:
  // done in the middle of a warm-up, that throws away the JIT's code, and the measured phase that
  // followed started half a second slower and spent 20 % more CPU per order than a later one.
  await batchCounters(gw.url);
  return { gw, merchant };
}

type Cpu = Awaited<ReturnType<Awaited<ReturnType<typeof cpuMeter>>>>;

/** One side of interleaved rounds: a REST gateway (with its CPU meter) or any other load (count only). */
export interface RoundSide {
  name: string;
  run(seconds: number): Promise<{ count: number; latencies: number[]; cpu?: Cpu }>;
}

/** A REST side for `interleave`: `leadInS` of unrecorded load before each recorded phase (restPhase). */
export function restSide(name: string, client: OrderClient, merchantId: string, dbUrl: string, gatewayPid: number, gatewayUrl: string, leadInS = 1): RoundSide {
  return {
    name,
    run: async (seconds) => {
      const r = await restPhase(client, merchantId, seconds, { leadInS, onRecord: () => cpuMeter(dbUrl, gatewayPid, gatewayUrl) });
      if (r.errors) throw new Error(`${name}: ${r.errors} order requests did not answer 201`);
      return { count: r.count, latencies: r.latencies, cpu: await r.meter(r.count) };
    },
  };
}

export interface SideTotals {
  orders: number;
  perS: number;
  /** All recorded latencies, sorted. */
  latencies: number[];
  /** CPU per order (ms) and the group commit's mean batch, weighted by each phase's orders; undefined without a meter. */
  cpu?: { api: number; pg: number; loadgen: number; meanBatch: number; idle: number; apiWait: number };
}

/**
 * `rounds` rounds of one `phaseS` phase per side, in turn, the order reversed every other round, so
 * that every side sees the same machine: on a shared host whose speed moves by a third from one minute
 * to the next, a comparison of phases minutes apart measures the host (bench:orders' 5M phase once read
 * 0.62 of the first while the load generator's own CPU per order, which no table size touches, rose by
 * 39 %). Prints one line per phase.
 */
export async function interleave(sides: RoundSide[], rounds: number, phaseS: number): Promise<Record<string, SideTotals>> {
  const acc = new Map(
    sides.map((s) => [s.name, { orders: 0, latencies: [] as number[], api: 0, pg: 0, loadgen: 0, batches: 0, rows: 0, idle: 0, apiWait: 0, metered: 0 }]),
  );
  for (let round = 0; round < rounds; round++) {
    for (const s of round % 2 ? [...sides].reverse() : sides) {
      const r = await s.run(phaseS);
      const a = acc.get(s.name)!;
      a.orders += r.count;
      a.latencies.push(...r.latencies);
      if (r.cpu) {
        a.api += r.cpu.api * r.count;
        a.pg += r.cpu.pg * r.count;
        a.loadgen += r.cpu.loadgen * r.count;
        a.batches += r.cpu.batches;
        a.rows += r.cpu.meanBatch * r.cpu.batches;
        a.idle += r.cpu.idle;
        a.apiWait += r.cpu.apiWait;
        a.metered++;
      }
      const p99 = r.latencies.length ? `, p99 ${percentile(r.latencies, 99).toFixed(1)} ms` : '';
      console.log(`  round ${round + 1} ${s.name}: ${(r.count / phaseS).toFixed(0)}/s${p99}${r.cpu ? `\n  ${cpuLine(r.cpu)}` : ''}`);
    }
  }
  return Object.fromEntries(
    [...acc].map(([name, a]) => [
      name,
      {
        orders: a.orders,
        perS: a.orders / (phaseS * rounds),
        latencies: a.latencies.sort((x, y) => x - y),
        cpu: a.metered
          ? {
              api: a.api / a.orders,
              pg: a.pg / a.orders,
              loadgen: a.loadgen / a.orders,
              meanBatch: a.rows / a.batches,
              idle: a.idle / a.metered,
              apiWait: a.apiWait / a.metered,
            }
          : undefined,
      },
    ]),
  );
}
