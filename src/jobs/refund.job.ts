import type { App } from '../app.js';
import type { WatchedNetwork } from '../chains/networks.js';
import type { Network } from '../common/environment.js';
import { RefundEngine, type RefundStep } from '../modules/refunds/refund.engine.js';
import { engineJobs } from './engine-jobs.js';
import type { JobDefinition } from './scheduler.js';

/** The refund engine of one watched network, wired to the app's services (jobs, tests). `crashPoint`: tests only. */
export function createRefundEngine(app: App, target: WatchedNetwork, crashPoint?: (step: RefundStep) => void): RefundEngine {
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
  return engineJobs('refund', targets, lockMs, (app, target) => createRefundEngine(app, target), (app) => app.config.REFUND_POLL_MS);
}
