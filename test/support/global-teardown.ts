import './resolve-ts';
import { adminQuery } from './pg-admin';

export default async function globalTeardown(): Promise<void> {
  const template = process.env.TEST_PG_TEMPLATE;
  if (template) {
    const leftovers = await adminQuery<{ datname: string }>(`select datname from pg_database where datname like 'cpg_t_%' or datname = $1`, [template]);
    for (const { datname } of leftovers.rows) await adminQuery(`drop database if exists ${datname} with (force)`).catch(() => undefined);
  }
  await globalThis.__EMBEDDED_PG__?.stop();
}
