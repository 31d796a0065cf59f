import { MikroORM, ReflectMetadataProvider, type Options } from '@mikro-orm/core';
import { Migrator } from '@mikro-orm/migrations';
import { PostgreSqlDriver } from '@mikro-orm/postgresql';
import pg from 'pg';
import 'reflect-metadata';
import { migrationsList } from '../../migrations/index.js';
import { entities } from './entities.js';

export type Orm = MikroORM<PostgreSqlDriver>;

export function ormOptions(url: string, poolMax = 20): Options<PostgreSqlDriver> {
  return {
    driver: PostgreSqlDriver,
    clientUrl: url,
    entities,
    metadataProvider: ReflectMetadataProvider,
    extensions: [Migrator],
    discovery: { warnWhenNoEntities: true },
    allowGlobalContext: false,
    forceUtcTimezone: true,
    pool: { min: 0, max: poolMax },
    migrations: { migrationsList, silent: true, transactional: true, allOrNothing: true, snapshot: false, tableName: 'mikro_orm_migrations' },
    debug: false,
  };
}

export async function connectOrm(url: string, poolMax?: number): Promise<Orm> {
  return MikroORM.init<PostgreSqlDriver>(ormOptions(url, poolMax));
}

/** Key of the advisory lock that serialises migrations across processes (any constant no other lock uses). */
const MIGRATION_LOCK = 'crypto-payment-gateway:migrations';

/**
 * Applies pending migrations; returns their names. Processes starting together on a fresh database
 * (an API and a worker, two replicas) would otherwise race: both see the same migrations pending and
 * the loser fails on `create table` or the migrations table's primary key. A session advisory lock,
 * held on a connection of its own while the migrator runs on the ORM's, makes the others wait and
 * then find nothing left to apply. The lock goes with the session, so a crashed holder frees it.
 */
export async function migrate(orm: Orm, sessionUrl?: string): Promise<string[]> {
  // A session lock: on DATABASE_SESSION_URL when the pool goes through PgBouncer in transaction mode.
  const lock = new pg.Client({ connectionString: sessionUrl ?? orm.config.get('clientUrl'), application_name: 'cpg-migrate' });
  // A connection lost while waiting or migrating fails the query below; this only keeps the event handled.
  lock.on('error', () => undefined);
  await lock.connect();
  try {
    await lock.query('select pg_advisory_lock(hashtext($1))', [MIGRATION_LOCK]);
    const applied = await orm.getMigrator().up();
    return applied.map((m) => m.name);
  } finally {
    await lock.query('select pg_advisory_unlock(hashtext($1))', [MIGRATION_LOCK]).catch(() => undefined);
    await lock.end().catch(() => undefined);
  }
}

/** The database's schema is not the one this code was written for (MIGRATE_ON_START=false). */
export class SchemaMismatchError extends Error {
  constructor(
    readonly pending: string[],
    readonly unknown: string[],
  ) {
    super(
      unknown.length
        ? `Database schema is newer than this code: applied migrations it does not know: ${unknown.join(', ')}. Deploy the code that goes with this schema (or a newer one); this process will not serve it.`
        : `Database schema is older than this code: ${pending.length} migration(s) not applied: ${pending.join(', ')}. Run \`npm run migrate\` (node dist/src/cli/cli.js migrate) once for this deploy, or set MIGRATE_ON_START=true.`,
    );
    this.name = 'SchemaMismatchError';
  }
}

/** Applied migrations compared with the code's list: those not applied yet, and those the code does not know. */
export async function schemaDrift(orm: Orm): Promise<{ pending: string[]; unknown: string[] }> {
  const known = migrationsList.map((m) => m.name);
  const conn = orm.em.getConnection();
  const [{ exists }] = await conn.execute<{ exists: boolean }[]>(`select to_regclass('mikro_orm_migrations') is not null as exists`);
  const applied = exists ? (await conn.execute<{ name: string }[]>('select name from mikro_orm_migrations')).map((r) => r.name) : [];
  const done = new Set(applied);
  const code = new Set(known);
  return { pending: known.filter((n) => !done.has(n)), unknown: applied.filter((n) => !code.has(n)) };
}

/** Throws a SchemaMismatchError unless the applied migrations are exactly the code's. */
export async function assertSchemaCurrent(orm: Orm): Promise<void> {
  const { pending, unknown } = await schemaDrift(orm);
  if (pending.length || unknown.length) throw new SchemaMismatchError(pending, unknown);
}

/** True when the database answers and no migration is pending (`/readyz`). */
export async function isReady(orm: Orm): Promise<{ database: boolean; migrations: boolean }> {
  try {
    await orm.em.getConnection().execute('select 1');
  } catch {
    return { database: false, migrations: false };
  }
  try {
    const pending = await orm.getMigrator().getPendingMigrations();
    return { database: true, migrations: pending.length === 0 };
  } catch {
    return { database: true, migrations: false };
  }
}
