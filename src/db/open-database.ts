import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import type { Logger } from 'pino';
import type { Config } from '../config/index.js';
import { startEmbeddedPostgres } from './embedded-postgres.js';

export interface OpenDatabase {
  url: string;
  embedded: boolean;
  /** Stops the embedded cluster if this process started it. */
  release(): Promise<void>;
}

const stateFile = (dataDir: string) => join(dataDir, 'embedded-pg.json');

async function reachable(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  // A probe: a failure shows in connect/query; a late 'error' event must not end the process.
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * DATABASE_URL when set. Otherwise the embedded cluster under DATA_DIR: if another process of this
 * checkout (say `npm start`) already runs it, join that one — the CLI works next to a running
 * gateway — else start it and own it.
 */
export async function openDatabase(config: Pick<Config, 'DATABASE_URL' | 'DATA_DIR'>, log: Logger): Promise<OpenDatabase> {
  if (config.DATABASE_URL) return { url: config.DATABASE_URL, embedded: false, release: async () => undefined };
  try {
    const { url } = JSON.parse(readFileSync(stateFile(config.DATA_DIR), 'utf8')) as { url: string };
    if (await reachable(url)) return { url, embedded: true, release: async () => undefined };
  } catch {
    /* no running cluster */
  }
  const db = await startEmbeddedPostgres(config.DATA_DIR, 'gateway', log);
  writeFileSync(stateFile(config.DATA_DIR), JSON.stringify({ url: db.url, pid: process.pid }), { mode: 0o600 });
  // The port stays the same across starts (embedded-pg.port), so this URL does too: psql and BI tools can keep it.
  log.info({ url: db.url }, `embedded PostgreSQL started (DATABASE_URL unset): ${db.url}`);
  return {
    url: db.url,
    embedded: true,
    release: async () => {
      rmSync(stateFile(config.DATA_DIR), { force: true });
      await db.stop();
    },
  };
}
