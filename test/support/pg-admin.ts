import pg from 'pg';

/** Where the test PostgreSQL is: DATABASE_URL (CI, dev machine) or the embedded one global-setup started. */
export function adminUrl(): string {
  const url = process.env.TEST_PG_ADMIN_URL ?? process.env.DATABASE_URL;
  if (!url) throw new Error('TEST_PG_ADMIN_URL not set: run through jest (test/support/global-setup.ts)');
  return url;
}

export function withDatabase(url: string, db: string): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
}

export async function adminQuery<T extends pg.QueryResultRow = pg.QueryResultRow>(
  sql: string,
  params: unknown[] = [],
  url = adminUrl(),
): Promise<pg.QueryResult<T>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query<T>(sql, params);
  } finally {
    await client.end();
  }
}
