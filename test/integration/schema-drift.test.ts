import { SchemaComparator, type DatabaseSchema, type ForeignKey, type SchemaDifference } from '@mikro-orm/postgresql';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { connectOrm, type Orm } from '../../src/db/orm';
import { buildGatewaySchema, printGatewaySchema } from '../../src/graphql/schema';
import { createTestDatabase, type TestDatabase } from '../support/db';

const ROOT = resolve(__dirname, '../..');

/** First differing line of two texts, for a readable failure. */
function firstDifference(a: string, b: string): string {
  const al = a.split('\n');
  const bl = b.split('\n');
  for (let i = 0; i < Math.max(al.length, bl.length); i++) {
    if (al[i] !== bl[i])
      return `line ${i + 1}:\n  committed: ${JSON.stringify(al[i] ?? '<end of file>')}\n  code:      ${JSON.stringify(bl[i] ?? '<end of file>')}`;
  }
  return '(none)';
}

describe('schema drift', () => {
  it('the SDL the code builds equals the committed schema/schema.graphql', async () => {
    const built = printGatewaySchema(await buildGatewaySchema());
    const committed = readFileSync(resolve(ROOT, 'schema/schema.graphql'), 'utf8');
    if (built !== committed) {
      throw new Error(
        'schema/schema.graphql is out of date with the resolvers: run `npm run schema:emit` and commit the result ' +
          `(then \`npm run codegen\` for the test documents). First difference at ${firstDifference(committed, built)}`,
      );
    }
  });
});

/**
 * Differences MikroORM reports that are not drift, because migrations (hand-written SQL) own these
 * details and the entities deliberately do not repeat them:
 *  - CHECK constraints that exist only in the database (entities enforce the same rules in code);
 *  - column DEFAULTs (the ORM always writes the value; defaults serve raw SQL and back-fills);
 *  - a CHECK `col in (...)` that MikroORM reads as enum items while the entity maps plain text;
 *  - indexes that exist only in the database (foreign-key, partial and unique indexes MikroORM cannot
 *    express, e.g. "one live API key per merchant and environment") and index renames;
 *  - constraint names: PostgreSQL names an inline `references` constraint `<table>_<col>_fkey`,
 *    MikroORM expects `<table>_<col>_foreign` — same columns, target and rules is the same key.
 * Everything else is reported: missing tables or columns, type or nullability changes, indexes or
 * unique constraints an entity declares that the database lacks, foreign keys that differ in target
 * or ON UPDATE/ON DELETE rule, changed checks an entity declares. Dropping tables or columns is not
 * (`safe: true`): bookkeeping tables like `rate_limits` and `agenda_jobs` have no entity.
 */
function withoutOwnedByMigrations(diff: SchemaDifference, comparator: SchemaComparator): SchemaDifference {
  const sameKey = (a: ForeignKey, b: ForeignKey) =>
    !(comparator as unknown as { diffForeignKey(a: ForeignKey, b: ForeignKey, t: unknown): boolean }).diffForeignKey(
      a,
      { ...b, constraintName: a.constraintName },
      { changedColumns: {} },
    );
  for (const [name, t] of Object.entries(diff.changedTables)) {
    t.removedChecks = {};
    t.removedIndexes = {};
    t.renamedIndexes = {};
    for (const [col, c] of Object.entries(t.changedColumns)) {
      c.changedProperties.delete('default');
      if (!c.column.enumItems?.length) c.changedProperties.delete('enumItems');
      if (c.changedProperties.size === 0) delete t.changedColumns[col];
    }
    for (const [addedName, added] of Object.entries(t.addedForeignKeys)) {
      const match = Object.entries(t.removedForeignKeys).find(([, removed]) => sameKey(removed, added));
      if (match) {
        delete t.addedForeignKeys[addedName];
        delete t.removedForeignKeys[match[0]];
      }
    }
    const left = [
      t.addedColumns,
      t.changedColumns,
      t.renamedColumns,
      t.addedIndexes,
      t.changedIndexes,
      t.addedChecks,
      t.changedChecks,
      t.addedForeignKeys,
      t.changedForeignKeys,
      t.removedForeignKeys,
    ];
    if (left.every((d) => Object.keys(d).length === 0) && t.changedComment === undefined) delete diff.changedTables[name];
  }
  return diff;
}

describe('entity/migration drift', () => {
  let db: TestDatabase;
  let orm: Orm;
  beforeAll(async () => {
    db = await createTestDatabase();
    orm = await connectOrm(db.url, 2);
  });
  afterAll(async () => {
    await orm?.close(true);
    await db?.drop();
  });

  it('every migration is applied to the test database', async () => {
    expect(await orm.getMigrator().getPendingMigrations()).toEqual([]);
  });

  /** The SQL MikroORM would run to make the database match the entities, minus what migrations own. */
  async function driftSql(): Promise<string> {
    const generator = orm.getSchemaGenerator();
    const raw = (await generator.getUpdateSchemaSQL({ safe: true, wrap: false })).trim();
    if (!raw) return '';
    // The same comparison getUpdateSchemaSQL runs, then the documented exclusions, then MikroORM's SQL.
    const { fromSchema, toSchema } = await (
      generator as unknown as { prepareSchemaForComparison(o: object): Promise<{ fromSchema: DatabaseSchema; toSchema: DatabaseSchema }> }
    ).prepareSchemaForComparison({ safe: true });
    const comparator = new SchemaComparator(orm.em.getPlatform());
    const diff = withoutOwnedByMigrations(comparator.compare(fromSchema, toSchema), comparator);
    return (await generator.diffToSQL(diff, { safe: true, wrap: false })).trim();
  }

  it('the entities need no schema change on a migrated database (beyond what migrations own by design)', async () => {
    const sql = await driftSql();
    if (sql) {
      throw new Error(
        'The MikroORM entities and migrations/ disagree. Fix the entity if it is wrong, otherwise add a migration ' +
          `(a new file in migrations/, listed in migrations/index.ts). MikroORM would run:\n${sql}`,
      );
    }
  });

  it("the check does see real drift (this file's database, altered on purpose)", async () => {
    const conn = orm.em.getConnection();
    await conn.execute(`alter table api_keys drop column hint`);
    await conn.execute(`alter table sessions alter column revoked_reason set not null`);
    // A column no analytics view uses (a type change under a view needs the view dropped and recreated).
    await conn.execute(`alter table merchants alter column notification_url_sandbox type varchar(10)`);
    await conn.execute(`alter table refresh_tokens drop constraint refresh_tokens_token_hash_key`);
    await conn.execute(`alter table sessions drop constraint sessions_user_id_fkey`);
    await conn.execute(
      `alter table sessions add constraint sessions_user_id_fkey foreign key (user_id) references dashboard_users (id) on update cascade on delete cascade`,
    );
    const sql = await driftSql();
    expect(sql).toMatch(/alter table "api_keys" add column "hint" text not null/);
    expect(sql).toMatch(/alter table "sessions" alter column "revoked_reason" drop not null/);
    expect(sql).toMatch(/alter table "merchants" alter column "notification_url_sandbox" type text/);
    expect(sql).toMatch(/add constraint "refresh_tokens_token_hash_unique" unique \("token_hash"\)/);
    expect(sql).toMatch(/add constraint "sessions_user_id_foreign" foreign key \("user_id"\) references "dashboard_users" \("id"\) on update cascade;/);
  });
});
