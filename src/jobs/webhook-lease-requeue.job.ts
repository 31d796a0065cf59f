import type { JobDefinition } from './scheduler.js';

/**
 * Re-queues deliveries whose lease expired with no outcome recorded — the worker that claimed them
 * crashed or hung between sending and recording — so they are retried with the same idempotency key
 * (at-least-once; docs/webhooks.md "Delivery, retries and guarantees"). Then wakes the delivery workers.
 */
export const webhookLeaseRequeueJob = (intervalMs: number): JobDefinition => ({
  // The name job stores hold (renaming it would orphan the recurring row of every deployed store).
  name: 'webhook-sweeper',
  every: intervalMs,
  concurrency: 1,
  // A pass takes milliseconds. With a short period, a short lock lets a surviving worker take the job
  // over soon after the worker holding it crashed — the very case this job exists for. Otherwise the
  // scheduler's lock applies (Agenda keeps a timer of half the lock alive after each run, so a long
  // lock would hold a stopping process). Two passes overlapping are harmless (SKIP LOCKED).
  ...(intervalMs < 30_000 && { lockLifetimeMs: Math.max(1000, intervalMs * 2) }),
  handler: async (app) => {
    const n = await app.webhooks.queue.requeueExpiredLeases(app.orm.em.fork());
    if (n) app.log.warn({ deliveries: n }, 'webhook leases expired without an outcome; re-queued');
  },
});
