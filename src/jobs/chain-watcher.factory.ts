import type { App } from '../app.js';
import type { WatchedNetwork } from '../chains/networks.js';
import { ChainWatcher } from '../modules/payments/chain-watcher.js';

/**
 * A watcher wired to the app's services and configuration (the worker's jobs and the benchmarks).
 * Lives with the jobs, not in the payments module, so modules never import the app.
 */
export function createChainWatcher(app: App, target: WatchedNetwork): ChainWatcher {
  const { config } = app;
  const watcher = new ChainWatcher(target, {
    payments: app.payments,
    settlement: app.settlement,
    tokens: app.tokens,
    receipts: app.receipts,
    lateWindowS: config.LATE_PAYMENT_WINDOW_S,
    closedWatchS: config.CLOSED_DEPOSIT_WATCH_S,
    closedPollEvery: config.CLOSED_DEPOSIT_POLL_EVERY,
    startLookbackBlocks: config.WATCH_START_LOOKBACK_BLOCKS,
    maxBlocksPerTick: config.WATCH_MAX_BLOCK_RANGE * 4,
    reorgRecheck: { windowS: config.REORG_RECHECK_WINDOW_S, intervalMs: config.REORG_RECHECK_INTERVAL_MS, maxBlocks: config.REORG_RECHECK_MAX_BLOCKS },
    log: app.log,
    onNewChain: ({ environment, network }) => app.metrics.chainIdentityChanges.inc({ environment, network }),
  });
  app.metrics.trackWatcher(watcher);
  return watcher;
}
