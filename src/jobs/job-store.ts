import { PostgresBackend } from '@agendajs/postgres-backend';
import type { Logger } from 'pino';
import pg from 'pg';

/** Which Agenda backend runs, chosen by URL scheme; job code never knows which. */
export type JobStoreKind = 'postgres' | 'mongo';

export interface JobStore {
  kind: JobStoreKind;
  // Structural type: both backends implement Agenda's IAgendaBackend.
  backend: ConstructorParameters<typeof import('agenda').Agenda>[0] extends { backend?: infer B } ? B : never;
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Probes the store first: Agenda lets a backend connect failure escape as an unhandled rejection,
 * so a store that is down must be found here, reported clearly, and retried with backoff.
 */
export async function openJobStore(opts: { databaseUrl: string; mongodbUrl?: string; log: Logger; attempts?: number }): Promise<JobStore> {
  const attempts = opts.attempts ?? 10;
  for (let attempt = 1; ; attempt++) {
    try {
      return opts.mongodbUrl ? await openMongo(opts.mongodbUrl) : await openPostgres(opts.databaseUrl);
    } catch (err) {
      const kind = opts.mongodbUrl ? 'MongoDB (MONGODB_URL)' : 'PostgreSQL (DATABASE_URL)';
      if (attempt >= attempts) throw new Error(`Job store ${kind} unreachable after ${attempts} attempts: ${(err as Error).message}`);
      const delay = Math.min(30_000, 500 * 2 ** (attempt - 1));
      opts.log.warn({ attempt, delayMs: delay, err: (err as Error).message }, `job store ${kind} unreachable; retrying`);
      await sleep(delay);
    }
  }
}

async function openPostgres(url: string): Promise<JobStore> {
  const pool = new pg.Pool({ connectionString: url, max: 5 });
  pool.on('error', () => undefined); // idle-client errors surface through queries instead
  try {
    await pool.query('select 1');
  } catch (e) {
    await pool.end().catch(() => undefined);
    throw e;
  }
  return { kind: 'postgres', backend: new PostgresBackend({ pool, tableName: 'agenda_jobs', channelName: 'agenda_jobs' }), close: () => pool.end() };
}

async function openMongo(url: string): Promise<JobStore> {
  const [{ MongoClient }, { MongoBackend }] = await Promise.all([import('mongodb'), import('@agendajs/mongo-backend')]);
  const client = new MongoClient(url, { serverSelectionTimeoutMS: 3000 });
  await client.connect();
  await client.db().command({ ping: 1 });
  return { kind: 'mongo', backend: new MongoBackend({ mongo: client.db() }) as JobStore['backend'], close: () => client.close() };
}
