import type { JobDefinition } from './scheduler.js';

/**
 * Safety net for the outbox → deliveries step. Delivery workers drain `webhook_outbox` when the
 * trigger's NOTIFY wakes them and on every poll; this job drains it too, on its own period, so queued
 * events become deliveries even while no delivery loop is listening.
 */
export const outboxDispatchJob = (intervalMs: number): JobDefinition => ({
  name: 'webhook-outbox-dispatch',
  every: intervalMs,
  concurrency: 1,
  ...(intervalMs < 30_000 && { lockLifetimeMs: Math.max(1000, intervalMs * 2) }),
  handler: async (app) => {
    let n = 0;
    for (let batch; (batch = await app.webhooks.outbox.dispatchOutbox(app.orm.em.fork(), 500)) > 0;) {
      n += batch;
      if (batch < 500) break;
    }
    if (n) app.log.info({ events: n }, 'webhook outbox drained by the periodic job');
  },
});
