import { pruneEndedWindows } from '../modules/limits/postgres-windows.js';
import type { JobDefinition } from './scheduler.js';

/**
 * Deletes sessions that expired or were revoked more than a day ago (their refresh tokens cascade),
 * order-creation idempotency keys past their lifetime (an expired key is free for reuse anyway), and
 * rate-limit windows that ended over an hour ago (a hit on an ended window starts it again anyway).
 */
export const pruneSessionsJob: JobDefinition = {
  name: 'prune-sessions',
  every: '1 hour',
  handler: async (app) => {
    const em = app.orm.em.fork();
    await app.auth.pruneSessions(em);
    await app.orders.store.pruneIdempotencyKeys(em);
    await pruneEndedWindows(em, Date.now() - 3_600_000);
  },
};
