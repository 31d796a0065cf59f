import type { App } from '../app.js';
import type { WatchedNetwork } from '../chains/networks.js';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { JobDefinition } from './scheduler.js';

/** Waits `ms`, or less when `signal` aborts (a clean stop never waits out a poll). */
export const abortableSleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((ok) => {
    const onAbort = () => (clearTimeout(t), ok());
    const t = setTimeout(() => (signal.removeEventListener('abort', onAbort), ok()), ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });

/** What an engine job drives: a tick that resumes from the database, and whether the network has anything to drive. */
export interface TickingEngine {
  readonly active: boolean;
  tick(em: EntityManager): Promise<unknown>;
}

/**
 * One recurring job per (environment, network) driving an engine (`<kind>:<environment>:<network>`):
 * Agenda's lock gives each to one worker at a time; a run ticks every `pollMs` for WATCH_RUN_MS and
 * hands over. Every tick resumes from the database, so a run killed anywhere is finished by the next
 * (any worker's); a failed tick is logged and retried at the next poll.
 */
export function engineJobs(
  kind: 'sweep' | 'refund',
  targets: WatchedNetwork[],
  lockMs: number,
  create: (app: App, target: WatchedNetwork) => TickingEngine,
  pollMs: (app: App) => number,
): JobDefinition[] {
  return targets.map((target) => {
    let engine: TickingEngine | undefined;
    return {
      name: `${kind}:${target.environment}:${target.network}`,
      every: '5 seconds',
      concurrency: 1,
      lockLifetimeMs: lockMs,
      handler: async (app, job, signal) => {
        engine ??= create(app, target);
        if (!engine.active) return;
        const until = Date.now() + app.config.WATCH_RUN_MS;
        while (!signal.aborted && Date.now() < until) {
          try {
            await engine.tick(app.orm.em.fork());
          } catch (err) {
            app.log.warn(
              { err: err instanceof Error ? err.message : String(err), network: target.network, environment: target.environment },
              `${kind} tick failed; retrying`,
            );
          }
          await job.touch().catch(() => undefined);
          await abortableSleep(pollMs(app), signal);
        }
      },
    };
  });
}
