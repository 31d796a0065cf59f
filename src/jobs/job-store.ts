import { PostgresBackend } from '@agendajs/postgres-backend';
import type { Logger } from 'pino';
import pg from 'pg';
import { outageLogger } from '../db/connection.errors.js';

/** Which Agenda backend runs, chosen by URL scheme; job code never knows which. */
export type JobStoreKind = 'postgres' | 'mongo';

export interface JobStore {
  kind: JobStoreKind;
  // Structural type: both backends implement Agenda's IAgendaBackend.
  backend: ConstructorParameters<typeof import('agenda').Agenda>[0] extends { backend?: infer B } ? B : never;
  /** Clears the locks held by owners not in `alive` (named owners only); returns the jobs taken back. */
  reclaim(alive: string[]): Promise<{ name: string; owner: string }[]>;
  /** Clears every lock `owner` still holds (at a clean stop, once its jobs returned or were abandoned). */
  release(owner: string): Promise<number>;
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
      return opts.mongodbUrl ? await openMongo(opts.mongodbUrl) : await openPostgres(opts.databaseUrl, opts.log);
    } catch (err) {
      const kind = opts.mongodbUrl ? 'MongoDB (MONGODB_URL)' : 'PostgreSQL (DATABASE_URL)';
      if (attempt >= attempts) throw new Error(`Job store ${kind} unreachable after ${attempts} attempts: ${(err as Error).message}`);
      const delay = Math.min(30_000, 500 * 2 ** (attempt - 1));
      opts.log.warn({ attempt, delayMs: delay, err: (err as Error).message }, `job store ${kind} unreachable; retrying`);
      await sleep(delay);
    }
  }
}

/**
 * Agenda's PostgreSQL backend on a pool of ours. Every connection it holds survives a lost server:
 * the pool drops a dead idle client (its 'error' event is logged here: unhandled it would end the
 * process) and opens a new one on the next query; the backend's LISTEN client is a pool client too,
 * and its channel reconnects by itself but reports each failure as an 'error' event on the channel,
 * which nobody listens to by default — without a listener the first 57P01 kills the worker.
 */
async function openPostgres(url: string, log: Logger): Promise<JobStore> {
  // A bounded wait: a server that accepts and then hangs must not stall the job loop forever. The wait
  // also covers queueing for a pool client while others run: the LISTEN client holds one for good, and
  // on a busy machine the watchers', sweeps' and webhooks' lock and unlock queries hold theirs longer, so
  // the pool leaves room (10) and the wait is generous (30 s) — a timeout here fails a job's unlock.
  const pool = new pg.Pool({ connectionString: url, max: 10, connectionTimeoutMillis: 30_000, application_name: 'cpg-jobs' });
  pool.on('error', outageLogger(log, 'job store pool'));
  try {
    await pool.query('select 1');
  } catch (e) {
    await pool.end().catch(() => undefined);
    throw e;
  }
  const backend = new PostgresBackend({ pool, tableName: 'agenda_jobs', channelName: 'agenda_jobs' });
  const channel = backend.notificationChannel;
  if (channel) {
    const logError = outageLogger(log, 'job store LISTEN');
    channel.on('error', logError);
    // Agenda polls every processEvery meanwhile; NOTIFY only makes new jobs start sooner.
    channel.on('stateChange', (state: string) => {
      if (state === 'connected') log.info('job store LISTEN connection up');
    });
  }
  return {
    kind: 'postgres',
    backend,
    reclaim: async (alive) => {
      try {
        const { rows } = await pool.query<{ name: string; owner: string }>(
          `update agenda_jobs set locked_at = null
            where locked_at is not null and last_modified_by is not null and not (last_modified_by = any($1::text[]))
            returning name, last_modified_by as owner`,
          [alive],
        );
        return rows;
      } catch (err) {
        if ((err as { code?: string }).code === '42P01') return []; // first start: Agenda has not created its table yet
        throw err;
      }
    },
    release: async (owner) => {
      const { rowCount } = await pool
        .query('update agenda_jobs set locked_at = null where locked_at is not null and last_modified_by = $1', [owner])
        .catch((err: { code?: string }) => {
          if (err.code === '42P01') return { rowCount: 0 };
          throw err;
        });
      return rowCount ?? 0;
    },
    close: () => pool.end(),
  };
}

async function openMongo(url: string): Promise<JobStore> {
  const [{ MongoClient }, { MongoBackend }] = await Promise.all([import('mongodb'), import('@agendajs/mongo-backend')]);
  const client = new MongoClient(url, { serverSelectionTimeoutMS: 3000 });
  await client.connect();
  await client.db().command({ ping: 1 });
  const jobs = client.db().collection<{ name: string; lockedAt?: Date | null; lastModifiedBy?: string }>('agendaJobs');
  return {
    kind: 'mongo',
    backend: new MongoBackend({ mongo: client.db() }) as JobStore['backend'],
    reclaim: async (alive) => {
      const filter = { lockedAt: { $ne: null }, lastModifiedBy: { $exists: true, $nin: alive } };
      const stale = await jobs.find(filter, { projection: { name: 1, lastModifiedBy: 1 } }).toArray();
      if (stale.length) await jobs.updateMany({ _id: { $in: stale.map((j) => j._id) }, ...filter }, { $set: { lockedAt: null } });
      return stale.map((j) => ({ name: j.name, owner: j.lastModifiedBy! }));
    },
    release: async (owner) => (await jobs.updateMany({ lockedAt: { $ne: null }, lastModifiedBy: owner }, { $set: { lockedAt: null } })).modifiedCount,
    close: () => client.close(),
  };
}
