import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { freePort } from '../src/db/embedded-postgres.js';
import { openDatabase, type OpenDatabase } from '../src/db/open-database.js';
import { connectOrm, migrate, type Orm } from '../src/db/orm.js';

/**
 * The one database helper of the benchmarks: one PostgreSQL server (DATABASE_URL's, or an embedded
 * one in a temp folder) with a fresh database per name; `release()` drops them and stops the embedded
 * server.
 */
export async function benchDatabases(names: string[], opts: { keep?: boolean } = {}): Promise<{ urls: string[]; release(): Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'cpg-bench-'));
  const db: OpenDatabase = await openDatabase({ DATABASE_URL: process.env.DATABASE_URL, DATA_DIR: dataDir }, pino({ level: 'warn' }));
  const admin = async (sql: string) => {
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  for (const name of names) {
    if (opts.keep) {
      // Kept between runs (a fixture built once, measured several times): created only when missing.
      await admin(`create database ${name}`).catch((e: { code?: string }) => {
        if (e.code !== '42P04') throw e;
      });
      continue;
    }
    await admin(`drop database if exists ${name} with (force)`);
    await admin(`create database ${name}`);
  }
  const urls = names.map((name) => {
    const u = new URL(db.url);
    u.pathname = `/${name}`;
    return u.toString();
  });
  return {
    urls,
    release: async () => {
      if (!opts.keep) for (const name of names) await admin(`drop database if exists ${name} with (force)`).catch(() => undefined);
      await db.release();
      // The embedded server's cluster (a 5M-row bench leaves over a gigabyte); each run makes a new one, so `keep` only keeps a DATABASE_URL server's databases.
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** `k=v,k=v` (BENCH_GATEWAY_ENV, BENCH_A_ENV, …) as an object: extra variables for a gateway a bench starts. */
export const envPairs = (s: string | undefined): Record<string, string> =>
  Object.fromEntries(
    (s ?? '')
      .split(',')
      .filter(Boolean)
      .map((kv) => kv.split('=') as [string, string]),
  );

/** One fresh database for a benchmark (see benchDatabases). */
export async function benchDatabase(name: string, opts: { keep?: boolean } = {}): Promise<{ url: string; release(): Promise<void> }> {
  const { urls, release } = await benchDatabases([name], opts);
  return { url: urls[0]!, release };
}

/** An ORM on a benchmark database, migrated (the gateway in a benchmark's own process). */
export async function benchOrm(url: string, poolMax: number): Promise<Orm> {
  const orm = await connectOrm(url, poolMax);
  await migrate(orm);
  return orm;
}

/** Starts the built gateway (`dist/src/main.js`, or another build's `main`) as a child process with `nodeArgs`, and waits for /readyz. */
export async function startGatewayProcess(
  env: Record<string, string>,
  nodeArgs: string[] = [],
  main = join(__dirname, '..', 'src', 'main.js'),
): Promise<{ url: string; proc: ChildProcess; stop(): Promise<void> }> {
  const port = await freePort();
  const proc = spawn(process.execPath, [...nodeArgs, main], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 1200; i++) {
    try {
      if ((await fetch(`${url}/readyz`)).status === 200) break;
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    proc,
    stop: () =>
      new Promise<void>((ok) => {
        proc.once('exit', () => ok());
        proc.kill('SIGTERM');
      }),
  };
}

export function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/**
 * What a benchmark started (gateway processes, receivers, databases), stopped in reverse order by
 * `stopAll` — on success, on an error and on the deadline alike, so a bench that crashes leaves
 * nothing running. `kill` registers a child process that also gets SIGKILL if this process exits
 * before stopAll reached it.
 */
export class BenchCleanup {
  private readonly steps: (() => unknown)[] = [];
  private readonly children = new Set<ChildProcess>();

  constructor() {
    process.once('exit', () => {
      for (const c of this.children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    });
  }

  add(step: () => unknown): void {
    this.steps.push(step);
  }

  /** A child process: SIGTERM, then SIGKILL after `graceMs` if it has not exited. */
  child(proc: ChildProcess, graceMs = 15_000): void {
    this.children.add(proc);
    this.add(async () => {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise((ok) => proc.once('exit', ok));
      proc.kill('SIGTERM');
      await Promise.race([exited, new Promise((ok) => setTimeout(ok, graceMs).unref())]);
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      this.children.delete(proc);
    });
  }

  async stopAll(): Promise<void> {
    for (const step of this.steps.splice(0).reverse())
      await Promise.resolve()
        .then(step)
        .catch(() => undefined);
  }
}

/** Runs a benchmark's `main`; on an error (its own or an unhandled rejection) or after `deadlineS`, stops what it started and exits non-zero. */
export function runBench(name: string, deadlineS: number, cleanup: BenchCleanup, main: () => Promise<void>): void {
  const fail = async (code: number, what: unknown) => {
    console.error(`[${name}]`, what);
    await cleanup.stopAll();
    process.exit(code);
  };
  const deadline = setTimeout(() => void fail(2, `gave up after ${deadlineS} s`), deadlineS * 1000);
  deadline.unref();
  // A promise the bench left unawaited (a load generator's `void produce()`) fails the same way.
  process.once('unhandledRejection', (err) => void fail(1, err));
  main()
    .then(() => cleanup.stopAll())
    .then(() => clearTimeout(deadline))
    .catch((err: unknown) => fail(1, err));
}
