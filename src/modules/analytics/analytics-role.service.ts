import pg from 'pg';

/** Runs one SQL statement (the ORM connection's `execute`, or a pg client's `query`). */
export type SqlRunner = (sql: string) => Promise<unknown>;

export interface AnalyticsRoleOptions {
  /** Role name (validated by config: a lower-case identifier, not `pg_…`). */
  role: string;
  /** LOGIN with this password; without one the role is NOLOGIN (grants are still kept up to date). */
  password?: string;
}

export interface AnalyticsRoleResult {
  role: string;
  login: boolean;
  database: string;
}

const ROLE_NAME = /^(?!pg_)[a-z_][a-z0-9_]{0,62}$/;

/** Catalog races between processes or databases of one cluster: retried. */
function isCatalogRace(e: unknown): boolean {
  const code = (e as { code?: string }).code;
  const message = e instanceof Error ? e.message : '';
  return code === '40001' || code === '40P01' || code === '23505' || /tuple concurrently (updated|deleted)/.test(message);
}

/**
 * Creates or updates the analysts' read-only role: idempotent and safe to run from several places at
 * once (roles are cluster-wide; test databases share one server). The role may connect to this
 * database, use the `analytics` schema and SELECT its views — nothing in `public` (no table there is
 * granted to PUBLIC), no writes, and every session starts read-only. Views run with their owner's
 * rights, so the role reaches the facts the views expose and never the tables behind them.
 *
 * The password travels in an `ALTER ROLE … PASSWORD` statement (PostgreSQL hashes it with SCRAM);
 * turn statement logging off for the session that runs this if the server logs every statement.
 */
export async function ensureAnalyticsRole(run: SqlRunner, database: string, opts: AnalyticsRoleOptions): Promise<AnalyticsRoleResult> {
  if (!ROLE_NAME.test(opts.role)) throw new Error(`Invalid analytics role name ${JSON.stringify(opts.role)}`);
  const role = pg.escapeIdentifier(opts.role);
  const statements = [
    // CREATE ROLE has no IF NOT EXISTS: a concurrent creator shows up as duplicate_object or, mid-race, unique_violation.
    `do $$ begin create role ${role} nologin; exception when duplicate_object or unique_violation then null; end $$`,
    opts.password
      ? `alter role ${role} with login password ${pg.escapeLiteral(opts.password)} nosuperuser nocreatedb nocreaterole noinherit noreplication nobypassrls connection limit 20`
      : `alter role ${role} with nologin password null nosuperuser nocreatedb nocreaterole noinherit noreplication nobypassrls`,
    `alter role ${role} set default_transaction_read_only = on`,
    `alter role ${role} set statement_timeout = '5min'`,
    `grant connect on database ${pg.escapeIdentifier(database)} to ${role}`,
    `revoke all on all tables in schema public from ${role}`,
    `grant usage on schema analytics to ${role}`,
    `grant select on all tables in schema analytics to ${role}`,
    // Views added by later migrations (run by the same owner) are readable without running this again.
    `alter default privileges in schema analytics grant select on tables to ${role}`,
  ];
  for (const sql of statements) {
    for (let attempt = 0; ; attempt++) {
      try {
        await run(sql);
        break;
      } catch (e) {
        if (attempt < 10 && isCatalogRace(e)) {
          await new Promise((r) => setTimeout(r, 20 + Math.random() * 80));
          continue;
        }
        throw e;
      }
    }
  }
  return { role: opts.role, login: !!opts.password, database };
}
