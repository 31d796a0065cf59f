import type { JobDefinition } from './scheduler.js';

/**
 * Folds the order status writers' append-only rollup deltas into the hourly and daily rollups
 * (docs/decisions/0009-rollup-deltas.md). `orderStats` adds the deltas not folded yet on read, so the
 * interval only bounds how many it has to add, never what it answers.
 */
export const compactOrderStatsJob = (intervalS: number): JobDefinition => ({
  name: 'compact-order-stats',
  every: `${intervalS} seconds`,
  concurrency: 1,
  handler: async (app) => {
    const n = await app.orderStats.compact(app.orm.em.fork());
    if (n) app.log.debug({ folded: n }, 'order stats deltas folded into the rollups');
  },
});
