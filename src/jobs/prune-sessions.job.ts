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
    const db = app.orm.em.fork().getConnection();
    await db.execute(`delete from sessions where expires_at < now() - interval '1 day' or revoked_at < now() - interval '1 day'`);
    await db.execute(`delete from idempotency_keys where expires_at < now()`);
    await db.execute(`delete from rate_limits where expire < ?`, [Date.now() - 3_600_000]);
  },
};
