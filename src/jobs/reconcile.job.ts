import type { WatchedNetwork } from '../chains/networks.js';
import type { JobDefinition } from './scheduler.js';

/**
 * Reconciles every watched network (on-chain deposit balances vs the ledger), one network after the
 * other; each run is stored and its mismatches logged and exported as gauges (ReconciliationService).
 */
export const reconcileJob = (targets: WatchedNetwork[], intervalS: number): JobDefinition => ({
  name: 'reconcile',
  every: `${intervalS} seconds`,
  concurrency: 1,
  handler: async (app) => {
    for (const target of targets) {
      const run = await app.reconciliation.reconcile(app.orm.em.fork(), target);
      if (run.mismatches.length)
        app.log.error({ environment: run.environment, network: run.network, mismatches: run.mismatches.length }, 'reconciliation found mismatches');
    }
  },
});
