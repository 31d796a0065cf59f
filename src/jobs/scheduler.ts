import { Agenda, type Job } from 'agenda';
import type { Logger } from 'pino';
import type { App } from '../app.js';
import { isConnectionError, outageLogger } from '../db/connection.errors.js';
import { openJobStore, type JobStore } from './job-store.js';
import { JobOwner } from './job-owner.js';

/** A job definition: name, handler, and optionally a recurring schedule. Handlers must be idempotent. */
export interface JobDefinition<T = unknown> {
  name: string;
  /** `signal` aborts when the worker shuts down: long-running handlers must return promptly. */
  handler: (app: App, job: Job<T & Record<string, unknown>>, signal: AbortSignal) => Promise<void>;
  /** Agenda interval ("1 minute", ms) for recurring jobs. */
  every?: string | number;
  concurrency?: number;
  lockLifetimeMs?: number;
}

export interface Scheduler {
  agenda: Agenda;
  store: JobStore;
  /** The name this scheduler's locks carry (`last_modified_by`). */
  owner: string;
  now<T>(name: string, data: T): Promise<void>;
  stop(): Promise<void>;
}

export interface SchedulerOptions {
  processEveryMs?: number;
  lockLifetimeMs?: number;
  /** How long `stop()` waits for running jobs to return and release their locks (default 15 s). */
  drainTimeoutMs?: number;
}

export async function startScheduler(
  app: App,
  databaseUrl: string,
  jobs: JobDefinition[],
  opts: SchedulerOptions = {},
  log: Logger = app.log,
): Promise<Scheduler> {
  const store = await openJobStore({ databaseUrl, mongodbUrl: app.config.MONGODB_URL, log });
  const shutdown = new AbortController();
  // Locks carry their owner; before taking any job, take back the jobs of owners that are not alive
  // (a worker killed without a clean stop), instead of leaving them idle for a whole lock lifetime.
  const owner = new JobOwner(databaseUrl, log);
  try {
    await owner.start();
    const reclaimed = await store.reclaim(await owner.alive());
    if (reclaimed.length)
      log.warn(
        { jobs: reclaimed.map((j) => j.name), owners: [...new Set(reclaimed.map((j) => j.owner))] },
        'took back the jobs locked by owners that are no longer alive',
      );
  } catch (err) {
    await owner.close();
    await store.close().catch(() => undefined);
    throw err;
  }
  const agenda = new Agenda({
    name: owner.name,
    backend: store.backend,
    processEvery: opts.processEveryMs ?? 1000,
    defaultLockLifetime: opts.lockLifetimeMs ?? 60_000,
    maxConcurrency: 50,
    defaultConcurrency: 5,
  });
  // While the database is down every poll fails: that is an outage (one warning now and then), not a bug.
  const outage = outageLogger(log, 'job scheduler');
  agenda.on('error', (err: Error) => (isConnectionError(err) ? outage(err) : log.error({ err }, 'agenda error')));
  // Jobs between start and the save that records their end (and releases their lock).
  const running = new Set<Job>();
  agenda.on('start', (job: Job) => running.add(job));
  agenda.on('complete', (job: Job) => running.delete(job));
  for (const def of jobs) {
    const lockLifetime = def.lockLifetimeMs ?? opts.lockLifetimeMs ?? 60_000;
    agenda.define(
      def.name,
      async (job: Job) => {
        const started = process.hrtime.bigint();
        const done = (outcome: 'success' | 'failure') => {
          app.metrics.jobRuns.inc({ job: def.name, outcome });
          app.metrics.jobDuration.observe({ job: def.name }, Number(process.hrtime.bigint() - started) / 1e9);
        };
        const heartbeat = lockHeartbeat(job, lockLifetime);
        try {
          await def.handler(app, job as never, shutdown.signal);
          done('success');
        } catch (err) {
          done('failure');
          if (isConnectionError(err)) outage(err);
          else log.error({ err, job: def.name }, 'job failed');
          throw err;
        } finally {
          await heartbeat.stop();
        }
      },
      { concurrency: def.concurrency ?? 1, lockLimit: def.concurrency ?? 1, lockLifetime },
    );
  }
  await agenda.start();
  for (const def of jobs) if (def.every !== undefined) await agenda.every(def.every, def.name, {}, { skipImmediate: false });
  log.info({ store: store.kind, owner: owner.name, jobs: jobs.map((j) => j.name) }, 'job scheduler started');
  return {
    agenda,
    store,
    owner: owner.name,
    now: async (name, data) => {
      await agenda.now(name, data as never);
    },
    stop: async () => {
      // Long-running handlers (chain watchers) return on abort. Agenda's stop() unlocks only the jobs
      // it holds but has not started: a running job keeps its lock until its end is saved. So wait
      // for running jobs to be recorded before closing the store — closed under them, that save
      // fails and the lock stays until it expires (a network unwatched for WATCH_LOCK_MS).
      shutdown.abort();
      await agenda.stop();
      await drained(running, agenda, opts.drainTimeoutMs ?? 15_000, log);
      // Whatever this owner still holds (a run that did not return in time, a save that failed) is
      // released here: the process is going, so the next worker must not wait out the lock lifetime.
      const released = await store.release(owner.name).catch((err: unknown) => {
        log.warn({ err }, 'could not release job locks at shutdown; the next start takes them back');
        return 0;
      });
      if (released) log.info({ released }, 'released job locks at shutdown');
      await store.close().catch(() => undefined);
      await owner.close();
    },
  };
}

/**
 * A lease renewed while its holder lives: Agenda counts a run as dead once its lock is older than the
 * lock lifetime, and starts the job again on some worker while the first run goes on. A run that is
 * slow (a long tick, a loaded machine) is not dead: touch the lock every third of its lifetime, on a
 * timer, whatever the handler is doing. A worker that really dies stops touching, and the lock expires.
 * `stop()` waits for a touch in flight, so none lands after Agenda's save that releases the lock.
 */
function lockHeartbeat(job: Job, lockLifetimeMs: number): { stop(): Promise<void> } {
  let inFlight: Promise<unknown> = Promise.resolve();
  const timer = setInterval(
    () => {
      inFlight = inFlight.then(() => job.touch()).catch(() => undefined); // a failed touch: the next one tries again
    },
    Math.max(100, Math.floor(lockLifetimeMs / 3)),
  );
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await inFlight;
    },
  };
}

/** Resolves once no job is running (or after `timeoutMs`, with a warning naming the stragglers). */
function drained(running: Set<Job>, agenda: Agenda, timeoutMs: number, log: Logger): Promise<void> {
  if (!running.size) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      agenda.off('complete', onComplete);
      clearTimeout(timer);
      resolve();
    };
    // Registered after the scheduler's own 'complete' listener: the job is already off the set here.
    const onComplete = () => {
      if (!running.size) done();
    };
    const timer = setTimeout(() => {
      log.warn(
        { jobs: [...running].map((j) => (j as Job | undefined)?.attrs?.name ?? null), timeoutMs },
        'jobs still running at shutdown; their locks are released with the others',
      );
      done();
    }, timeoutMs);
    agenda.on('complete', onComplete);
  });
}
