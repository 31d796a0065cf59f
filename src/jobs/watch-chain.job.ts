import type { WatchedNetwork } from '../chains/networks.js';
import type { ChainWatcher } from '../modules/payments/chain-watcher.js';
import { saveWatcherHealth } from '../modules/payments/watcher-health.js';
import { createChainWatcher } from './chain-watcher.factory.js';
import { pollCadence } from '../chains/networks.js';
import type { JobDefinition } from './scheduler.js';

/**
 * The pause between polls: ends after `ms`, on abort, or at once when `wake()` was called (a pushed
 * head) during the pause or since the last one. The abort listener is removed after a normal
 * wake-up: `signal` lives as long as the scheduler, and a listener left behind per poll would pile up.
 */
export function pauser(signal: AbortSignal): { sleep(ms: number): Promise<void>; wake(): void } {
  let pending = false;
  let done: (() => void) | null = null;
  return {
    sleep: (ms) =>
      new Promise<void>((ok) => {
        if (pending || signal.aborted) {
          pending = false;
          return ok();
        }
        const finish = () => {
          clearTimeout(t);
          signal.removeEventListener('abort', finish);
          done = null;
          pending = false;
          ok();
        };
        const t = setTimeout(finish, ms);
        done = finish;
        signal.addEventListener('abort', finish, { once: true });
      }),
    wake: () => {
      if (done) done();
      else pending = true;
    },
  };
}

/**
 * One recurring job per (environment, network). Agenda's lock gives each to one worker at a time;
 * a run polls for `WATCH_RUN_MS` (at the network's cadence, `pollCadence`, and at once when a pushed
 * head arrives) and then hands over, so a dead worker's
 * network is picked up by another within one lock lifetime. RPC failures are logged and retried on
 * the next poll; they never crash the worker.
 */
export function watchChainJobs(targets: WatchedNetwork[], lockMs: number): JobDefinition[] {
  return targets.map((target) => {
    let watcher: ChainWatcher | undefined;
    return {
      name: `watch-chain:${target.environment}:${target.network}`,
      every: '2 seconds',
      concurrency: 1,
      // Longer than any pause inside a run (each poll touches the lock); a dead worker's network is
      // taken over by another worker after this long.
      lockLifetimeMs: lockMs,
      handler: async (app, job, signal) => {
        const { config } = app;
        watcher ??= createChainWatcher(app, target);
        const w = watcher;
        const until = Date.now() + config.WATCH_RUN_MS;
        let failures = 0;
        // Push (where the adapter has it) for this run: a head ends the pause at once; the poll
        // cadence is the fallback, slower while the subscription is open.
        const { pollMs, pushPollMs } = pollCadence(config, target.environment, target.network);
        const pause = pauser(signal);
        let pushOpen = false;
        const push = w.subscribe(
          () => pause.wake(),
          (state) => (pushOpen = state === 'open'),
        );
        // `/readyz` reads the health every process can see: written after each poll (at most once a
        // second while polls succeed), so a poll that hangs shows as `stalled` from its age alone.
        let savedAt = 0;
        const saveHealth = async (now: boolean) => {
          if (!now && Date.now() - savedAt < 1000) return;
          savedAt = Date.now();
          await saveWatcherHealth(app.orm.em.fork(), w.health()).catch((err: unknown) =>
            app.log.warn(
              { err: err instanceof Error ? err.message : String(err), network: target.network, environment: target.environment },
              'watcher health not saved',
            ),
          );
        };
        try {
          while (!signal.aborted && Date.now() < until) {
            const startedAt = Date.now();
            try {
              await w.tick(app.orm.em.fork());
              await saveHealth(failures > 0);
              failures = 0;
            } catch (err) {
              await saveHealth(true);
              failures++;
              app.metrics.watcherTickFailures.inc({ environment: target.environment, network: target.network });
              app.log.warn(
                { err: err instanceof Error ? err.message : String(err), network: target.network, environment: target.environment, failures },
                'chain watcher tick failed; retrying',
              );
            }
            await job.touch().catch(() => undefined);
            // Back off while the node is failing, staying well inside the lock lifetime.
            // The cadence counts from the poll's start: a poll every block time, however long each took.
            const every = (pushOpen ? pushPollMs : pollMs) - (Date.now() - startedAt);
            await pause.sleep(failures ? Math.min(lockMs / 4, pollMs * 2 ** failures) : Math.max(0, Math.min(every, until - Date.now())));
          }
        } finally {
          await push?.close();
        }
      },
    };
  });
}
