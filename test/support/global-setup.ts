import './resolve-ts';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/db/embedded-postgres';
import { connectOrm, migrate } from '../../src/db/orm';
import { adminQuery, withDatabase } from './pg-admin';

declare global {
  var __EMBEDDED_PG__: EmbeddedDatabase | undefined;
}

/**
 * One PostgreSQL for the run: DATABASE_URL when set, else an embedded cluster. Migrations run once
 * into a template database; each test file clones it (test/support/db.ts), so files are isolated and
 * can run in parallel without re-migrating.
 */
export default async function globalSetup(): Promise<void> {
  let url = process.env.DATABASE_URL;
  if (!url) {
    const dir = mkdtempSync(join(tmpdir(), 'cpg-test-pg-'));
    globalThis.__EMBEDDED_PG__ = await startEmbeddedPostgres(dir, 'postgres');
    url = globalThis.__EMBEDDED_PG__.url;
  }
  process.env.TEST_PG_ADMIN_URL = url;
  // Unique per run: several runs (developers, CI) may share one PostgreSQL; each drops only its own.
  const run = `${process.pid}${randomBytes(3).toString('hex')}`;
  process.env.TEST_PG_RUN = run;
  const template = `cpg_template_${run}`;
  await adminQuery(`drop database if exists ${template}`, [], url);
  await adminQuery(`create database ${template}`, [], url);
  const orm = await connectOrm(withDatabase(url, template), 2);
  try {
    await migrate(orm);
  } finally {
    await orm.close(true);
  }
  process.env.TEST_PG_TEMPLATE = template;
  // MikroORM keeps entity metadata on globalThis; jest hands this process's globals to in-band test
  // files, where those objects (from another realm) break metadata discovery. Leave nothing behind.
  for (const key of Object.keys(globalThis)) if (key.startsWith('mikro-orm-')) delete (globalThis as Record<string, unknown>)[key];
}
