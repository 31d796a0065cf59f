import type { JobDefinition } from './scheduler.js';

/** Moves orders past their deadline to Underpaid / Expired (through the settlement service). */
export const expireOrdersJob = (intervalS: number): JobDefinition => ({
  name: 'expire-orders',
  every: `${intervalS} seconds`,
  concurrency: 1,
  handler: async (app) => {
    const n = await app.settlement.expireDue(app.orm.em.fork());
    if (n) app.log.info({ settled: n }, 'expired orders settled');
  },
});
