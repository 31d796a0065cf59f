/**
 * Migrations as the operator's choice. `MIGRATE_ON_START=true` (the default, `npm start`)
 * migrates at boot; with `false`, `migrate` is one step per deploy and every process refuses, with a
 * clear message, a schema older or newer than the migrations its code knows.
 */
import { migrationsList } from '../../migrations';
import { SchemaMismatchError } from '../../src/db/orm';
import { createEmptyDatabase, type TestDatabase } from '../support/db';
import { startTestGateway } from '../support/gateway';
import { TEST_JWT_SECRET, TEST_MASTER_KEY } from '../support/secrets';
import { adminQuery } from '../support/pg-admin';
import { bareEnv, CLI_JS, requireDist, runProcess } from '../support/process';

jest.setTimeout(180_000);

let db: TestDatabase;
beforeAll(async () => {
  requireDist(CLI_JS);
  db = await createEmptyDatabase();
});
afterAll(async () => {
  await db?.drop();
});

const names = migrationsList.map((m) => m.name);
const applied = async () => (await adminQuery<{ name: string }>('select name from mikro_orm_migrations order by id', [], db.url)).rows.map((r) => r.name);
const migrateCommand = () =>
  runProcess(
    process.execPath,
    [CLI_JS, 'migrate'],
    bareEnv({
      NODE_ENV: 'test',
      DATABASE_URL: db.url,
      MASTER_KEY: TEST_MASTER_KEY,
      JWT_SECRET: TEST_JWT_SECRET,
      MIGRATE_ON_START: 'false',
      DEV_CHAINS: 'false',
      RATE_SOURCES: 'none',
    }),
  );

it('MIGRATE_ON_START=false on an unmigrated database: the process refuses (schema older), naming the step to run, and changes nothing', async () => {
  const err = await startTestGateway({ ROLE: 'api', MIGRATE_ON_START: 'false' }, { db }).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SchemaMismatchError);
  expect((err as SchemaMismatchError).pending).toEqual(names);
  expect((err as Error).message).toMatch(/older than this code: \d+ migration\(s\) not applied.*npm run migrate/);
  expect((await adminQuery<{ t: string | null }>(`select to_regclass('mikro_orm_migrations')::text as t`, [], db.url)).rows[0]!.t).toBeNull();
});

it('`migrate` applies every migration once and says which; run again it has none pending; then the process serves', async () => {
  const first = await migrateCommand();
  expect(first.code).toBe(0);
  expect(first.stdout).toContain(`migrations applied: ${names.join(', ')}`);
  expect(await applied()).toEqual(names);
  const again = await migrateCommand();
  expect(again.code).toBe(0);
  expect(again.stdout).toContain('none pending');
  const gw = await startTestGateway({ ROLE: 'api', MIGRATE_ON_START: 'false' }, { db });
  try {
    expect((await fetch(`${gw.url}/readyz`)).status).toBe(200);
  } finally {
    await gw.stop();
  }
});

it('a schema newer than the code (a migration it does not know): the process refuses, naming it', async () => {
  await adminQuery(`insert into mikro_orm_migrations (name, executed_at) values ('Migration20991231000000_from_the_future', now())`, [], db.url);
  try {
    const err = await startTestGateway({ ROLE: 'api', MIGRATE_ON_START: 'false' }, { db }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SchemaMismatchError);
    expect((err as SchemaMismatchError).unknown).toEqual(['Migration20991231000000_from_the_future']);
    expect((err as Error).message).toMatch(/newer than this code.*Migration20991231000000_from_the_future/);
  } finally {
    await adminQuery(`delete from mikro_orm_migrations where name = 'Migration20991231000000_from_the_future'`, [], db.url);
  }
});
