import { randomBytes } from 'node:crypto';
import { adminQuery, adminUrl, withDatabase } from './pg-admin';

export interface TestDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

/** `cpg_t_<run>_<random>`: global-teardown drops this run's leftovers, and only those. */
function testDatabaseName(): string {
  return `cpg_t_${process.env.TEST_PG_RUN ?? 'norun'}_${randomBytes(6).toString('hex')}`;
}

/** A fresh, migrated database for one test file (a clone of the run's template). */
export async function createTestDatabase(): Promise<TestDatabase> {
  const template = process.env.TEST_PG_TEMPLATE;
  if (!template) throw new Error('TEST_PG_TEMPLATE not set: run through jest');
  const name = testDatabaseName();
  for (let attempt = 0; ; attempt++) {
    try {
      await adminQuery(`create database ${name} template ${template}`);
      break;
    } catch (e) {
      // Two files cloning the template at the same instant: PostgreSQL refuses the second; retry.
      if (attempt < 20 && /being accessed by other users/.test((e as Error).message)) {
        await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
        continue;
      }
      throw e;
    }
  }
  return {
    name,
    url: withDatabase(adminUrl(), name),
    drop: () => adminQuery(`drop database if exists ${name} with (force)`).then(() => undefined),
  };
}

/** An empty database (no migrations applied): for readiness checks. */
export async function createEmptyDatabase(): Promise<TestDatabase> {
  const name = testDatabaseName();
  await adminQuery(`create database ${name}`);
  return {
    name,
    url: withDatabase(adminUrl(), name),
    drop: () => adminQuery(`drop database if exists ${name} with (force)`).then(() => undefined),
  };
}

/** Tables whose contents are bookkeeping, not data (skipped by `countRows`). */
export const BOOKKEEPING_TABLES = ['mikro_orm_migrations', 'rate_limits', 'agenda_jobs'];

/** Row count of every table in the `public` schema of `url` (bookkeeping tables left out). */
export async function countRows(url: string, skip: string[] = BOOKKEEPING_TABLES): Promise<Record<string, number>> {
  const tables = await adminQuery<{ tablename: string }>(`select tablename from pg_tables where schemaname = 'public' order by tablename`, [], url);
  const out: Record<string, number> = {};
  for (const { tablename } of tables.rows) {
    if (skip.includes(tablename)) continue;
    const r = await adminQuery<{ n: string }>(`select count(*)::text as n from "${tablename.replace(/"/g, '""')}"`, [], url);
    out[tablename] = Number(r.rows[0]!.n);
  }
  return out;
}
