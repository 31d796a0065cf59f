import { MikroORM, ReflectMetadataProvider, type Options } from '@mikro-orm/core';
import { Migrator } from '@mikro-orm/migrations';
import { PostgreSqlDriver } from '@mikro-orm/postgresql';
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

/** Applies pending migrations; returns their names. */
export async function migrate(orm: Orm): Promise<string[]> {
  const applied = await orm.getMigrator().up();
  return applied.map((m) => m.name);
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
