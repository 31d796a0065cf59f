import './resolve-ts';
import { adminQuery } from './pg-admin';

export default async function globalTeardown(): Promise<void> {
  const template = process.env.TEST_PG_TEMPLATE;
  if (template) {
    // Only this run's databases (`_` is a LIKE wildcard, hence the escapes): other runs may share the server.
    const leftovers = await adminQuery<{ datname: string }>(`select datname from pg_database where datname like $1 or datname = $2`, [
      `cpg\\_t\\_${process.env.TEST_PG_RUN ?? 'none'}\\_%`,
      template,
    ]);
    for (const { datname } of leftovers.rows) await adminQuery(`drop database if exists ${datname} with (force)`).catch(() => undefined);
  }
  await globalThis.__EMBEDDED_PG__?.stop();
}
