import type { EntityManager } from '@mikro-orm/postgresql';
import { WEBHOOKS_CHANNEL } from '../events/event.catalogue.js';

/** Tells delivery workers that deliveries became due (on commit, when `em` is inside a transaction). */
export const notifyDeliveries = (em: EntityManager) => em.execute(`select pg_notify(?, 'deliveries')`, [WEBHOOKS_CHANNEL]);

/** A timestamptz as epoch milliseconds (a JS number) from raw SQL. */
export const ms = (col: string) => `(extract(epoch from ${col}) * 1000)::float8`;
export const date = (v: number | null): Date | null => (v === null ? null : new Date(v));
/** Text lists go to SQL as one JSON parameter: MikroORM inlines parameters and would expand a JS array. */
export const json = (v: unknown) => JSON.stringify(v);

/** `scheme://host:port`: the unit of per-endpoint concurrency and of keep-alive pooling. */
export function endpointOf(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.hostname}:${u.port || (u.protocol === 'https:' ? '443' : '80')}`;
  } catch {
    return url;
  }
}

/** The merchant's notification URL column for an environment expression (merchants aliased `m`). */
export const urlColumn = (env: string) => `case ${env} when 'production' then m.notification_url_production else m.notification_url_sandbox end`;
