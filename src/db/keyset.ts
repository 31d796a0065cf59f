import type { EntityManager } from '@mikro-orm/postgresql';
import { decodeCursor, encodeCursor, isPgTimestamp } from '../common/cursor.js';

/** A newest-first listing: `from` names the rows (alias and joins), `where` its filters, `key` its timestamptz sort column. */
export interface NewestFirst {
  /** Cursor kind: a cursor of another listing is refused. */
  kind: string;
  /** `payments p join orders o on o.id = p.order_id` */
  from: string;
  /** The row id column, e.g. `p.id`. */
  id: string;
  /** The timestamptz sort column, e.g. `p.detected_at`. */
  key: string;
  where: string[];
  params: unknown[];
  first: number;
  after?: string | undefined;
}

/** One page of ids (each with its cursor), the next-page flag and a lazy count of every row the filters match. */
export interface IdPage {
  rows: { id: string; cursor: string }[];
  hasNextPage: boolean;
  totalCount: () => Promise<number>;
}

/**
 * Keyset paging newest first, `(key, id)` descending. The cursor holds the key as PostgreSQL prints
 * it (microseconds: a millisecond cursor would skip rows created within the same millisecond). One
 * statement for the page; the count is another, run only when asked for.
 */
export async function newestFirstIds(em: EntityManager, q: NewestFirst): Promise<IdPage> {
  const where = [...q.where];
  const params = [...q.params];
  if (q.after) {
    const [k, id] = decodeCursor(q.kind, q.after, [isPgTimestamp]);
    where.push(`(${q.key}, ${q.id}) < (?::timestamptz, ?::uuid)`);
    params.push(k, id);
  }
  const found = await em.execute<{ id: string; k: string }[]>(
    `select ${q.id} as id, ${q.key}::text as k from ${q.from} where ${where.join(' and ')} order by ${q.key} desc, ${q.id} desc limit ${q.first + 1}`,
    params,
  );
  return {
    rows: found.slice(0, q.first).map((r) => ({ id: r.id, cursor: encodeCursor(q.kind, [r.k, r.id]) })),
    hasNextPage: found.length > q.first,
    totalCount: async () => {
      const [c] = await em.execute<{ n: string }[]>(`select count(*) as n from ${q.from} where ${q.where.join(' and ')}`, q.params);
      return Number(c?.n ?? 0);
    },
  };
}

/** Entities of a page in the page's order (rows deleted in between are left out). */
export function inPageOrder<T extends { id: string }>(rows: IdPage['rows'], found: T[]): { node: T; cursor: string }[] {
  const byId = new Map(found.map((e) => [e.id, e]));
  return rows.flatMap((r) => {
    const node = byId.get(r.id);
    return node ? [{ node, cursor: r.cursor }] : [];
  });
}
