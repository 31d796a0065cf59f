import type { EntityManager } from '@mikro-orm/postgresql';
import type { DatabaseSample } from './gateway-metrics.js';

/**
 * The database side of a scrape: four small indexed queries (open deposits use the watched-deposit
 * partial index, the backlog the pending/lease partial indexes). Bounded by a statement timeout so a
 * slow database slows the scrape, not the pool.
 */
export async function sampleDatabase(em: EntityManager): Promise<DatabaseSample> {
  return em.transactional(async (tx) => {
    await tx.execute(`set local statement_timeout = '2s'`);
    const deposits = await tx.execute<{ environment: string; network: string; n: string }[]>(
      `select environment, network, count(*)::text as n from deposits where status = 'open' group by 1, 2`,
    );
    const backlog = await tx.execute<{ state: string; n: string }[]>(
      `select state, count(*)::text as n from webhook_deliveries where state in ('pending', 'sending') group by 1`,
    );
    const [outbox] = await tx.execute<{ n: string }[]>(`select count(*)::text as n from webhook_outbox`);
    const [oldest] = await tx.execute<{ age: string | null }[]>(
      `select extract(epoch from now() - min(created_at))::text as age from webhook_deliveries where state = 'pending'`,
    );
    return {
      openDeposits: deposits.map((r) => ({ environment: r.environment, network: r.network, count: Number(r.n) })),
      webhookBacklog: backlog.map((r) => ({ state: r.state, count: Number(r.n) })),
      webhookOutbox: Number(outbox?.n ?? 0),
      webhookOldestPendingAgeS: oldest?.age ? Math.max(0, Number(oldest.age)) : 0,
    };
  });
}
