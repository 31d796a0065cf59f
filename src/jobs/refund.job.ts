import { writeSync } from 'node:fs';
import type { App } from '../app.js';
import type { WatchedNetwork } from '../chains/networks.js';
import type { Network } from '../common/environment.js';
import { RefundEngine, type RefundStep } from '../modules/refunds/refund.engine.js';
import { engineJobs } from './engine-jobs.js';
import type { JobDefinition } from './scheduler.js';

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
export function createRefundEngine(
  app: App,
  target: WatchedNetwork,
  crashPoint = app.config.REFUND_CRASH_AFTER ? killAfter(app.config.REFUND_CRASH_AFTER) : undefined,
): RefundEngine {
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

/** The refund jobs, one per (environment, network): `engineJobs` with REFUND_POLL_MS. */
export function refundJobs(targets: WatchedNetwork[], lockMs: number): JobDefinition[] {
  return engineJobs(
    'refund',
    targets,
    lockMs,
    (app, target) => createRefundEngine(app, target),
    (app) => app.config.REFUND_POLL_MS,
  );
}
