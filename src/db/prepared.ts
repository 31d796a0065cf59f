import type { EntityManager } from '@mikro-orm/postgresql';

interface PgConnection {
  query(q: { name: string; text: string; values: unknown[] }): Promise<{ rows: unknown[] }>;
}

const dollarCache = new Map<string, string>();
/** `?` placeholders (knex style, as everywhere else) → `$1…$n` for a named statement. */
function toDollar(sql: string): string {
  let out = dollarCache.get(sql);
  if (!out) {
    let i = 0;
    out = sql.replace(/\?/g, () => `$${++i}`);
    dollarCache.set(sql, out);
  }
  return out;
}

let named = true;
/**
 * Whether statements are prepared by name (DATABASE_PREPARED_STATEMENTS). A pooler in transaction
 * mode (PgBouncer before 1.21) hands each transaction any server connection, where a statement
 * prepared on another one does not exist: there, every statement is sent unnamed.
 */
export function useNamedStatements(on: boolean): void {
  named = on;
}

/**
 * Runs a statement as a named (server-side prepared) statement, so PostgreSQL parses and plans it
 * once per connection instead of on every call — for the merchants' hot path (API-key lookup, order
 * insert), where parse and plan cost more than the insert itself (bench:orders). Inside a transaction
 * it falls back to the EntityManager, which owns the transaction's connection. SQL must not contain
 * `?` other than placeholders.
 */
export async function prepared<T>(em: EntityManager, name: string, sql: string, params: unknown[]): Promise<T[]> {
  if (!named || em.isInTransaction()) return em.execute<T[]>(sql, params);
  const client = em.getConnection().getKnex().client as unknown as {
    acquireConnection(): Promise<PgConnection>;
    releaseConnection(c: PgConnection): Promise<void>;
  };
  const conn = await client.acquireConnection();
  try {
    const res = await conn.query({ name, text: toDollar(sql), values: params });
    return res.rows as T[];
  } finally {
    await client.releaseConnection(conn);
  }
}
