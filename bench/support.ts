import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { freePort } from '../src/db/embedded-postgres.js';
import { openDatabase, type OpenDatabase } from '../src/db/open-database.js';

/** A database server for a benchmark: DATABASE_URL's server, or an embedded one in a temp folder. */
export async function benchDatabase(name: string): Promise<{ url: string; release(): Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'cpg-bench-'));
  const db: OpenDatabase = await openDatabase({ DATABASE_URL: process.env.DATABASE_URL, DATA_DIR: dataDir }, pino({ level: 'warn' }));
  const admin = new pg.Client({ connectionString: db.url });
  await admin.connect();
  await admin.query(`drop database if exists ${name} with (force)`);
  await admin.query(`create database ${name}`);
  await admin.end();
  const u = new URL(db.url);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    release: async () => {
      const c = new pg.Client({ connectionString: db.url });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`).catch(() => undefined);
      await c.end();
      await db.release();
    },
  };
}

/** Starts the built gateway (`dist/src/main.js`) as a child process and waits for /readyz. */
export async function startGatewayProcess(env: Record<string, string>): Promise<{ url: string; proc: ChildProcess; stop(): Promise<void> }> {
  const port = await freePort();
  const proc = spawn(process.execPath, [join(__dirname, '..', 'src', 'main.js')], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
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
