import { migrationsList } from '../../migrations';
import { connectOrm, migrate, type Orm } from '../../src/db/orm';
import { createEmptyDatabase, type TestDatabase } from '../support/db';
import { adminQuery } from '../support/pg-admin';

// Processes starting together on a fresh database must not race the migrations (one used to fail
// to start). Each ORM here has its own pool, so the three run as separate sessions, as processes would.
describe('migrate() on an empty database from several processes at once', () => {
  let db: TestDatabase;
  const orms: Orm[] = [];
  beforeAll(async () => {
    db = await createEmptyDatabase();
  });
  afterAll(async () => {
    for (const orm of orms) await orm.close(true);
    await db.drop();
  });

  it('every one succeeds and each migration is applied exactly once', async () => {
    for (let i = 0; i < 3; i++) orms.push(await connectOrm(db.url, 2));
    const results = await Promise.allSettled(orms.map((orm) => migrate(orm)));
    const failures = results.flatMap((r) => (r.status === 'rejected' ? [String((r.reason as Error).message)] : []));
    expect(failures).toEqual([]);
    const applied = results.flatMap((r) => (r.status === 'fulfilled' ? r.value : []));
    const names = migrationsList.map((m) => m.name);
    // One process applied them all; the others waited for the lock and found nothing pending.
    expect([...applied].sort()).toEqual([...names].sort());
    const rows = await adminQuery<{ name: string }>('select name from mikro_orm_migrations order by id', [], db.url);
    expect(rows.rows.map((r) => r.name)).toEqual(names);
    expect(await migrate(orms[0]!)).toEqual([]);
  });
});
