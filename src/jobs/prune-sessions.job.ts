import type { JobDefinition } from './scheduler.js';

/** Deletes sessions that expired or were revoked more than a day ago (their refresh tokens cascade). */
export const pruneSessionsJob: JobDefinition = {
  name: 'prune-sessions',
  every: '1 hour',
  handler: async (app) => {
    await app.orm.em
      .fork()
      .getConnection()
      .execute(`delete from sessions where expires_at < now() - interval '1 day' or revoked_at < now() - interval '1 day'`);
  },
};
