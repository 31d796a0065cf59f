import { writeSync } from 'node:fs';
import type { App } from '../app.js';
import type { WatchedNetwork } from '../chains/networks.js';
import type { Network } from '../common/environment.js';
import { RefundEngine, type RefundStep } from '../modules/refunds/refund.engine.js';
import type { JobDefinition } from './scheduler.js';

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((ok) => {
    const onAbort = () => (clearTimeout(t), ok());
    const t = setTimeout(() => (signal.removeEventListener('abort', onAbort), ok()), ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });

/** Test-only (refused in production): dies like SIGKILL right after `crashAfter`, no cleanup at all. */
function killAfter(crashAfter: RefundStep): (step: RefundStep) => void {
  return (step) => {
    if (step !== crashAfter) return;
    // Written synchronously: pino's buffered stream would lose the line to the SIGKILL below.
    writeSync(2, `${JSON.stringify({ level: 60, step, msg: 'REFUND_CRASH_AFTER: killing the process' })}\n`);
    process.kill(process.pid, 'SIGKILL');
  };
}

/**
 * The refund engine of one watched network, wired to the app's services (jobs, tests). `crashPoint`:
 * tests only; by default the config's REFUND_CRASH_AFTER (refused in production) kills the process.
 */
export function createRefundEngine(app: App, target: WatchedNetwork, crashPoint = app.config.REFUND_CRASH_AFTER ? killAfter(app.config.REFUND_CRASH_AFTER) : undefined): RefundEngine {
  return new RefundEngine({
    environment: target.environment,
    network: target.network,
    adapter: target.adapter,
    confirmations: target.config.confirmations,
    status: app.refundStatus,
    tanks: app.gasTanks,
    wallets: app.wallets,
    log: app.log,
    nativePriceUsd: app.config[`SWEEP_NATIVE_PRICE_${target.network as Network}`],
    batchSize: app.config.SWEEP_BATCH_SIZE,
    crashPoint,
  });
}

/**
 * One recurring refund job per (environment, network), like the sweep jobs: Agenda's lock gives each
 * to one worker at a time; a run ticks every REFUND_POLL_MS for WATCH_RUN_MS and hands over. Every
 * tick resumes from the database, so a run killed anywhere is finished by the next (any worker's).
 */
export function refundJobs(targets: WatchedNetwork[], lockMs: number): JobDefinition[] {
  return targets.map((target) => {
    let engine: RefundEngine | undefined;
    return {
      name: `refund:${target.environment}:${target.network}`,
      every: '5 seconds',
      concurrency: 1,
      lockLifetimeMs: lockMs,
      handler: async (app, job, signal) => {
        engine ??= createRefundEngine(app, target);
        if (!engine.active) return;
        const until = Date.now() + app.config.WATCH_RUN_MS;
        while (!signal.aborted && Date.now() < until) {
          try {
            await engine.tick(app.orm.em.fork());
          } catch (err) {
            app.log.warn({ err: err instanceof Error ? err.message : String(err), network: target.network, environment: target.environment }, 'refund tick failed; retrying');
          }
          await job.touch().catch(() => undefined);
          await sleep(app.config.REFUND_POLL_MS, signal);
        }
      },
    };
  });
}
